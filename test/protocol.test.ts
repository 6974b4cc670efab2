import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IdempotencyStore, MissingKeyError, payloadHash, responseForNonOwner } from "@/lib/idempotency";
import { paramList } from "@/lib/db/params";
import { execute } from "@/lib/db/sql";
import { openDatabase } from "@/lib/db/client";
import { createTestDatabase, usingMysql, usingPostgres, type TestDatabase } from "./helpers/db";
import { InvalidInputError, NotFoundError, StateConflictError } from "@/lib/kernel/errors";

let db: TestDatabase;
let store: IdempotencyStore;
beforeAll(async () => {
  db = await createTestDatabase();
  store = new IdempotencyStore(db.prisma);
});
afterAll(() => db?.drop());

const base = { scope: "tenant:acme", operation: "capture_payment", payload: { amount: 1299, currency: "EUR", order: "o-1" } };
let n = 0;
const freshKey = () => `key-${Date.now()}-${n++}`;

async function counts(key: string) {
  const p = paramList(db.dialect);
  const records = await db.sql.query<{ n: bigint }>(`SELECT count(*) AS n FROM idempotency_records WHERE idempotency_key = ${p.add(key)}`, p.values);
  const q = paramList(db.dialect);
  const events = await db.sql.query<{ kind: string; n: bigint }>(
    `SELECT kind, count(*) AS n FROM idempotency_events WHERE idempotency_key = ${q.add(key)} GROUP BY kind ORDER BY kind`,
    q.values,
  );
  return { records: Number(records[0].n), events: Object.fromEntries(events.map((e) => [e.kind, Number(e.n)])) };
}

// The library given the database handle (statements straight to the driver) and given only its Prisma client.
describe.each([["the database handle", "handle"] as const, ["only its Prisma client", "prisma"] as const])("reservation, given %s", (_, how) => {
  beforeAll(() => {
    store = how === "handle" ? new IdempotencyStore(db) : new IdempotencyStore(db.prisma);
  });
  it("50 concurrent reservations of one key: exactly one owner, the rest see it in progress or replay", async () => {
    const key = freshKey();
    const results = await Promise.all(Array.from({ length: 50 }, () => store.begin({ ...base, key })));
    const owners = results.filter((r) => r.outcome === "owner");
    expect(owners).toHaveLength(1);
    expect(results.filter((r) => r.outcome === "in_progress" || r.outcome === "replay")).toHaveLength(49);
    const c = await counts(key);
    expect(c.records).toBe(1);
    expect(c.events.reserved).toBe(1);
    expect((c.events.in_progress ?? 0) + (c.events.replayed ?? 0)).toBe(49);
  });

  it("a different payload under the same key is a conflict (422) and executes nothing", async () => {
    const key = freshKey();
    const first = await store.begin({ ...base, key });
    expect(first.outcome).toBe("owner");
    await store.complete(first.record.id, { code: 201, body: '{"ok":true}' });
    let executed = 0;
    const second = await store.begin({ ...base, key, payload: { ...base.payload, amount: 9999 } });
    if (second.outcome === "owner") executed++;
    expect(second.outcome).toBe("conflict");
    expect(executed).toBe(0);
    const res = responseForNonOwner(second)!;
    expect(res.status).toBe(422);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    const problem = await res.json();
    expect(problem.expectedPayloadHash).toBe(payloadHash(base.payload));
    const c = await counts(key);
    expect(c.records).toBe(1);
    expect(c.events).toEqual({ reserved: 1, completed: 1, conflict: 1 });
    const p = paramList(db.dialect);
    const [conflict] = await db.sql.query<{ detail: { expectedPayloadHash: string; receivedPayloadHash: string } }>(
      `SELECT detail FROM idempotency_events WHERE idempotency_key = ${p.add(key)} AND kind = 'conflict'`,
      p.values,
    );
    expect(conflict.detail.receivedPayloadHash).toBe(payloadHash({ ...base.payload, amount: 9999 }));
    // The stored record is untouched.
    const rec = await store.find(first.record.id);
    expect(rec!.payloadHash).toBe(payloadHash(base.payload));
    expect(rec!.version).toBe(1);
  });

  it("key order and whitespace do not change the hash; values do", () => {
    expect(payloadHash({ a: 1, b: [1, 2], c: { y: "é", x: null } })).toBe(payloadHash({ c: { x: null, y: "é" }, b: [1, 2], a: 1 }));
    expect(payloadHash({ a: 1 })).not.toBe(payloadHash({ a: 2 }));
    expect(payloadHash({ b: [1, 2] })).not.toBe(payloadHash({ b: [2, 1] }));
  });

  it("replay returns the stored code, headers and body byte-for-byte", async () => {
    const key = freshKey();
    const first = await store.begin({ ...base, key });
    const headers: [string, string][] = [
      ["Content-Type", "application/json; charset=utf-8"],
      ["Set-Cookie", "a=1; Path=/"],
      ["Set-Cookie", "b=2; Path=/"],
      ["X-Request-Id", "req_123"],
    ];
    const body = '{"id":"ch_1","amount":1299,  "note":"spaces kept, \\u00e9 and ü kept","z":1,"a":2}\n';
    await store.complete(first.record.id, { code: 201, headers, body, resourceType: "charge", resourceId: "ch_1", providerReference: "psp_ref_1" });
    const again = await store.begin({ ...base, key });
    expect(again.outcome).toBe("replay");
    if (again.outcome !== "replay") return;
    expect(again.response.code).toBe(201);
    expect(again.response.headers).toEqual(headers);
    expect(Buffer.from(again.response.body!).equals(Buffer.from(body))).toBe(true);
    const http = responseForNonOwner(again)!;
    expect(http.status).toBe(201);
    expect(http.headers.get("idempotent-replayed")).toBe("true");
    expect(http.headers.getSetCookie()).toEqual(["a=1; Path=/", "b=2; Path=/"]);
    expect(await http.text()).toBe(body);
  });

  it("a failed request replays its stored error response", async () => {
    const key = freshKey();
    const first = await store.begin({ ...base, key });
    await store.fail(first.record.id, { code: 402, body: '{"error":"card_declined"}', error: "card declined" });
    const again = await store.begin({ ...base, key });
    expect(again.outcome).toBe("replay");
    if (again.outcome === "replay") expect(again.response).toEqual({ code: 402, headers: [], body: '{"error":"card_declined"}' });
  });

  it("provider timeout: pending with the provider request id and an open reconciliation item", async () => {
    const key = freshKey();
    const first = await store.begin({ ...base, key, provider: "mockpay", amountMinor: 1299, currency: "EUR" });
    const { record, reconciliationItemId } = await store.markPending(first.record.id, { providerRequestId: "preq_42", error: "timeout after 10s" });
    expect(record.status).toBe("pending");
    expect(record.providerRequestId).toBe("preq_42");
    const p = paramList(db.dialect);
    const [item] = await db.sql.query<{ id: bigint; state: string; provider: string; provider_request_id: string; record_id: bigint; next_check_at: Date }>(
      `SELECT id, state, provider, provider_request_id, record_id, next_check_at FROM reconciliation_items WHERE record_id = ${p.add(record.id)}`,
      p.values,
    );
    expect(item).toMatchObject({ id: reconciliationItemId, state: "open", provider: "mockpay", provider_request_id: "preq_42", record_id: record.id });
    expect(item.next_check_at.getTime()).toBeGreaterThan(Date.now());
    const retry = await store.begin({ ...base, key, provider: "mockpay", amountMinor: 1299, currency: "EUR" });
    expect(retry.outcome).toBe("in_progress");
    expect(responseForNonOwner(retry)!.status).toBe(409);
    expect((await counts(key)).events).toEqual({ reserved: 1, pending: 1, in_progress: 1 });
  });
});

describe("bad input: clear errors, nothing written", () => {
  beforeAll(() => {
    store = new IdempotencyStore(db.prisma);
  });
  async function totals() {
    const [r] = await db.sql.query<{ records: bigint; events: bigint; items: bigint }>(
      `SELECT (SELECT count(*) FROM idempotency_records) AS records,
              (SELECT count(*) FROM idempotency_events) AS events,
              (SELECT count(*) FROM reconciliation_items) AS items`,
    );
    return r;
  }

  it.each([
    ["missing key", { ...base, key: undefined }, MissingKeyError, 400],
    ["empty key", { ...base, key: "" }, MissingKeyError, 400],
    ["overlong key", { ...base, key: "k".repeat(256) }, InvalidInputError, 400],
    ["key with spaces", { ...base, key: "a b" }, InvalidInputError, 400],
    ["bad scope", { ...base, key: "k1", scope: "" }, InvalidInputError, 400],
    ["bad operation", { ...base, key: "k1", operation: "Capture Payment" }, InvalidInputError, 400],
    ["bad currency", { ...base, key: "k1", currency: "euro" }, InvalidInputError, 400],
    ["non-JSON payload", { ...base, key: "k1", payload: { f: () => 1 } }, InvalidInputError, 400],
    ["NaN in payload", { ...base, key: "k1", payload: { amount: NaN } }, InvalidInputError, 400],
    ["fractional amount", { ...base, key: "k1", amountMinor: 12.5 }, InvalidInputError, 400],
    ["float in payload (not reproducible across languages)", { ...base, key: "k1", payload: { amount: 12.5 } }, InvalidInputError, 400],
    ["Date in payload", { ...base, key: "k1", payload: { at: new Date() } }, InvalidInputError, 400],
  ])("%s → %s", async (_name, input, errorClass, status) => {
    const before = await totals();
    const err = await store.begin(input as never).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(errorClass);
    expect((err as InvalidInputError).status).toBe(status);
    expect((err as InvalidInputError).toProblem().detail).toMatch(/\w/);
    expect(await totals()).toEqual(before);
  });

  it("transitions on unknown or already-finished records are refused", async () => {
    const before = await totals();
    await expect(store.complete(987654321n, { code: 200 })).rejects.toBeInstanceOf(NotFoundError);
    await expect(store.complete("not-a-number", { code: 200 })).rejects.toBeInstanceOf(InvalidInputError);
    await expect(store.complete(1n, { code: 99 })).rejects.toBeInstanceOf(InvalidInputError);
    expect(await totals()).toEqual(before);

    const key = freshKey();
    const first = await store.begin({ ...base, key });
    await store.complete(first.record.id, { code: 200 });
    const mid = await totals();
    await expect(store.complete(first.record.id, { code: 201 })).rejects.toBeInstanceOf(StateConflictError);
    await expect(store.fail(first.record.id, { code: 500, error: "x" })).rejects.toBeInstanceOf(StateConflictError);
    await expect(store.markPending(first.record.id, { providerRequestId: "p", error: "t", provider: "mockpay" })).rejects.toBeInstanceOf(StateConflictError);
    expect(await totals()).toEqual(mid);
  });

  it("the database refuses only rows that break the protocol itself (status, unique key); it accepts what real writers store", async () => {
    await expect(
      db.sql.query(
        `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, expires_at) VALUES ('s','o','k','${"a".repeat(64)}','done', now())`,
      ),
    ).rejects.toThrow(/status_check/);
    // Hashes as writers make them (SHA-1, MD5, base64, upper case), headers as an object, a lower-case currency, a long key
    // (on MySQL at most 255 characters: the unique key's texts are VARCHAR(255), ADR 0012).
    const longKey = "k".repeat(usingMysql ? 255 : 300);
    await db.sql.query(
      `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, expires_at, response_headers, currency)
       VALUES ('s','o','k-sha1','${"A".repeat(40)}','processing', now(), '{"content-type":"application/json"}', 'eur'),
              ('s','o','k-b64','q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq8=','processing', now(), NULL, NULL),
              ('s','o','${longKey}','not-hex','processing', now(), '[["a","b"]]', NULL)`,
    );
    if (usingMysql) {
      // Weaker on MySQL: one character more is refused (SQLSTATE 22001), where PostgreSQL takes any length.
      await expect(
        db.sql.query(
          `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, expires_at) VALUES ('s','o','${"k".repeat(256)}','x','processing', now())`,
        ),
      ).rejects.toThrow(/too long/i);
    }
    await expect(
      db.sql.query(
        `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, expires_at) VALUES ('s','o','k-sha1','x','processing', now())`,
      ),
    ).rejects.toThrow(/scope_operation_key/);
    await db.sql.query(`DELETE FROM idempotency_records WHERE scope = 's' AND operation = 'o'`);
  });
});

describe.runIf(usingMysql)("MySQL: why the console reserves with a plain INSERT", () => {
  it("the console's connections carry CLIENT_FOUND_ROWS: ON DUPLICATE KEY UPDATE id = LAST_INSERT_ID(id) reports 1 for an existing key, as for a new one", async () => {
    const odku = (key: string) =>
      execute(
        db.sql,
        `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, expires_at)
         VALUES ('odku', 'o', ?, 'h', 'processing', UTC_TIMESTAMP(6)) ON DUPLICATE KEY UPDATE id = LAST_INSERT_ID(id)`,
        [key],
      );
    const key = freshKey();
    const inserted = await odku(key);
    const existed = await odku(key);
    // PHP's PDO (no PDO::MYSQL_ATTR_FOUND_ROWS) would see 1 and 0 (test/php-writer.test.ts); this driver sees 1 and 1.
    expect([inserted.affectedRows, existed.affectedRows]).toEqual([1, 1]);
    expect(existed.insertId).toBe(inserted.insertId);
    await db.sql.query(`DELETE FROM idempotency_records WHERE scope = 'odku'`);
  });
});

describe.runIf(usingPostgres)("PostgreSQL: the protocol's statements are prepared once per connection", () => {
  it("many requests on one connection reuse one prepared statement per step, and it answers as a fresh one would", async () => {
    const one = await openDatabase({ mode: "postgres", url: db.url! }, { poolSize: 1 });
    try {
      const lib = new IdempotencyStore(one);
      const prepared = () =>
        one.sql.query<{ name: string; statement: string; runs: bigint }>(
          `SELECT name, statement, (generic_plans + custom_plans)::bigint AS runs FROM pg_prepared_statements WHERE name LIKE 'ic\\_%' ORDER BY statement`,
        );
      expect(await prepared()).toEqual([]);
      for (let i = 0; i < 8; i++) {
        const key = freshKey();
        const r = await lib.begin({ ...base, key });
        expect(r.outcome).toBe("owner");
        const done = await lib.complete(r.record.id, { code: 201, body: `{"i":${i}}` });
        expect(done.responseBody).toBe(`{"i":${i}}`);
        // Past PostgreSQL's five custom plans the replay still reads this very record.
        const again = await lib.begin({ ...base, key });
        expect(again.outcome === "replay" && again.response.body).toBe(`{"i":${i}}`);
      }
      const names = await prepared();
      // reserve (each owner and each replay's insert attempt), answerExisting (the replays), complete.
      expect(names.map((s) => s.statement.match(/^WITH (\w+)/)?.[1])).toEqual(["ins", "rec", "upd"]);
      expect(names.map((s) => Number(s.runs))).toEqual([16, 8, 8]);

      // The writers own the table: a column whose type changes under a prepared statement makes
      // PostgreSQL refuse it ("cached plan must not change result type"); the library prepares again.
      await one.sql.exec("ALTER TABLE idempotency_records ALTER COLUMN response_body TYPE varchar(100000)");
      try {
        const key = freshKey();
        const r = await lib.begin({ ...base, key });
        expect(r.outcome).toBe("owner");
        expect((await lib.complete(r.record.id, { code: 201, body: "after" })).responseBody).toBe("after");
        const again = await lib.begin({ ...base, key });
        expect(again.outcome === "replay" && again.response.body).toBe("after");
      } finally {
        await one.sql.exec("ALTER TABLE idempotency_records ALTER COLUMN response_body TYPE text");
      }
    } finally {
      await one.close();
    }
  });
});
