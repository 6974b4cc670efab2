import { createHash } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { byDialect } from "@/lib/db/dialect";
import type { SqlExecutor } from "@/lib/db/sql";
import { bulkGenerate, type BulkResult } from "@/lib/demo/bulk";
import { generateDemoTraffic, type DemoSummary } from "@/lib/demo/traffic";
import { maskResponse } from "@/lib/records/mask";
import { createTestDatabase, usingPostgres, type TestDatabase } from "./helpers/db";

/**
 * Closes, waits until the server has really seen the pool's sessions go, then drops.
 * pg's Pool.end() resolves before its sockets are closed, and DROP DATABASE … WITH (FORCE)
 * racing those sessions surfaces as unhandled 57P01 errors (many lanes → many sessions).
 */
async function release(db: TestDatabase | undefined): Promise<void> {
  if (!db) return;
  if (db.url && usingPostgres) {
    await db.close();
    const name = new URL(db.url).pathname.slice(1);
    const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await admin.connect();
    try {
      for (let i = 0; i < 100; i++) {
        const { rows } = await admin.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1`, [name]);
        if (rows[0].n === 0) break;
        await new Promise((r) => setTimeout(r, 50));
      }
    } finally {
      await admin.end();
    }
  }
  await db.drop();
}

const NOW = new Date("2026-11-30T12:00:00.000Z");
const DAYS = 30;
const HOUR = 3600_000;
const DAY = 24 * HOUR;

const num = (v: unknown) => Number(v);

// The test's own SQL where the dialects spell it differently (ADR 0012).
const TEN_MINUTES = (on: SqlExecutor | TestDatabase) => byDialect(on, { postgres: "interval '10 minutes'", mysql: "INTERVAL 10 MINUTE" });
const utcHour = (on: TestDatabase) => byDialect(on, { postgres: "extract(hour FROM created_at AT TIME ZONE 'UTC')", mysql: "HOUR(created_at)" });
/** `column` does not match the regular expression (case-sensitive on both: MySQL's columns are utf8mb4_bin). */
const notMatching = (on: TestDatabase, column: string, re: string) =>
  byDialect(on, { postgres: `${column} !~ '${re}'`, mysql: `NOT (${column} REGEXP '${re}')` });
/** A JSON column's member as text (MariaDB has no ->>). */
const jsonText = (on: TestDatabase, column: string, key: string) =>
  byDialect(on, { postgres: `${column}->>'${key}'`, mysql: `JSON_UNQUOTE(JSON_EXTRACT(${column}, '$.${key}'))` });

async function one<T = Record<string, unknown>>(sql: SqlExecutor, text: string, params: unknown[] = []): Promise<T> {
  const rows = await sql.query<T>(text, params);
  return rows[0];
}

async function count(sql: SqlExecutor, text: string, params: unknown[] = []): Promise<number> {
  return num((await one<{ n: unknown }>(sql, `SELECT count(*) AS n FROM (${text}) q`, params)).n);
}

/** Content digests of the four shared tables, with ids replaced by the record's key (ids may differ between runs). */
async function digest(sql: SqlExecutor) {
  if (sql.dialect.name === "mysql") return mysqlDigest(sql);
  const d = await one<Record<string, string>>(
    sql,
    `SELECT
       (SELECT md5(string_agg(t, E'\\n' ORDER BY t)) FROM (
          SELECT ROW(scope, operation, idempotency_key, payload_hash, status, response_code, response_headers::text, response_body,
                     resource_type, resource_id, correlation_id, provider, provider_request_id, provider_reference, amount_minor,
                     currency, last_error, created_at, updated_at, expires_at, version, legal_hold)::text AS t
            FROM idempotency_records) x) AS records,
       (SELECT md5(string_agg(t, E'\\n' ORDER BY t)) FROM (
          SELECT ROW(r.idempotency_key, e.scope, e.operation, e.idempotency_key, e.kind, e.payload_hash, e.response_code,
                     e.occurred_at, e.detail::text)::text AS t
            FROM idempotency_events e LEFT JOIN idempotency_records r ON r.id = e.record_id) x) AS events,
       (SELECT md5(string_agg(t, E'\\n' ORDER BY t)) FROM (
          SELECT ROW(r.idempotency_key, i.provider, i.provider_request_id, i.state, i.attempts, i.last_checked_at, i.next_check_at,
                     i.last_error, i.created_at, i.updated_at)::text AS t
            FROM reconciliation_items i JOIN idempotency_records r ON r.id = i.record_id) x) AS reconciliation,
       (SELECT md5(string_agg(t, E'\\n' ORDER BY t)) FROM (
          SELECT ROW(r.idempotency_key, o.topic, o.payload::text, o.status, o.attempts, o.next_attempt_at, o.last_error,
                     o.created_at, o.sent_at)::text AS t
            FROM outbox_messages o JOIN idempotency_records r ON r.id = o.record_id) x) AS outbox,
       (SELECT count(*) FROM idempotency_records)::int AS n`,
  );
  return d;
}

/** The same digests on MySQL (no string_agg or ROW()::text): each table's rows as text, sorted and hashed here. */
async function mysqlDigest(sql: SqlExecutor) {
  const hash = async (text: string) => {
    const rows = await sql.query<Record<string, unknown>>(text);
    const lines = rows.map((r) => JSON.stringify(Object.values(r), (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v))).sort();
    return createHash("md5").update(lines.join("\n")).digest("hex");
  };
  return {
    records: await hash(
      `SELECT scope, operation, idempotency_key, payload_hash, status, response_code, CAST(response_headers AS CHAR) AS headers, response_body,
              resource_type, resource_id, correlation_id, provider, provider_request_id, provider_reference, amount_minor,
              currency, last_error, DATE_FORMAT(created_at, '%f') AS us, created_at, updated_at, expires_at, version, legal_hold
         FROM idempotency_records`,
    ),
    events: await hash(
      `SELECT r.idempotency_key AS record_key, e.scope, e.operation, e.idempotency_key, e.kind, e.payload_hash, e.response_code,
              e.occurred_at, DATE_FORMAT(e.occurred_at, '%f') AS us, CAST(e.detail AS CHAR) AS detail
         FROM idempotency_events e LEFT JOIN idempotency_records r ON r.id = e.record_id`,
    ),
    reconciliation: await hash(
      `SELECT r.idempotency_key, i.provider, i.provider_request_id, i.state, i.attempts, i.last_checked_at, i.next_check_at,
              i.last_error, i.created_at, i.updated_at
         FROM reconciliation_items i JOIN idempotency_records r ON r.id = i.record_id`,
    ),
    outbox: await hash(
      `SELECT r.idempotency_key, o.topic, CAST(o.payload AS CHAR) AS payload, o.status, o.attempts, o.next_attempt_at, o.last_error,
              o.created_at, o.sent_at
         FROM outbox_messages o JOIN idempotency_records r ON r.id = o.record_id`,
    ),
    n: num((await one<{ n: unknown }>(sql, `SELECT count(*) AS n FROM idempotency_records`)).n),
  };
}

describe("demo traffic (through the protocol library)", () => {
  let db: TestDatabase;
  let summary: DemoSummary;
  const from = new Date(NOW.getTime() - DAYS * DAY);

  beforeAll(async () => {
    db = await createTestDatabase();
    summary = await generateDemoTraffic(db, { seed: 42, now: NOW, days: DAYS, requests: 1200 });
  });
  afterAll(() => release(db));

  it("reports every scenario", () => {
    const s = summary.scenarios;
    for (const [name, value] of Object.entries(s)) expect(value, name).toBeGreaterThan(0);
    expect(summary.recordsCreated).toBe(summary.intents);
    expect(summary.requests).toBeGreaterThan(summary.intents);
    expect(Object.keys(summary.byOperation).sort()).toEqual(["accept_webhook", "capture_payment", "create_order", "issue_invoice", "refund_payment"]);
    expect(Object.keys(summary.byScope)).toHaveLength(5);
    expect(summary.doubleSubmits).toHaveLength(s.doubleSubmitPairs);
  });

  it("the summary matches the tables", async () => {
    expect(await count(db.sql, `SELECT 1 FROM idempotency_records`)).toBe(summary.recordsCreated);
    expect(await count(db.sql, `SELECT 1 FROM idempotency_events`)).toBe(summary.eventsWritten);
    expect(await count(db.sql, `SELECT 1 FROM idempotency_events WHERE kind = 'conflict'`)).toBe(summary.scenarios.conflicts);
    expect(await count(db.sql, `SELECT 1 FROM idempotency_events WHERE kind = 'replayed'`)).toBe(
      summary.scenarios.retriesReplayed + summary.scenarios.failedReplayed,
    );
    expect(await count(db.sql, `SELECT 1 FROM outbox_messages`)).toBe(summary.scenarios.outboxMessages);
    const byStatus = await db.sql.query<{ status: string; n: number }>(`SELECT status, count(*) AS n FROM idempotency_records GROUP BY status`);
    expect(Object.fromEntries(byStatus.map((r) => [r.status, num(r.n)]))).toEqual(summary.byStatus);
  });

  it("every record has one reservation and one outcome event matching its status", async () => {
    expect(
      await count(
        db.sql,
        `SELECT r.id FROM idempotency_records r
           LEFT JOIN idempotency_events e ON e.record_id = r.id
          GROUP BY r.id, r.status
         HAVING count(CASE WHEN e.kind = 'reserved' THEN 1 END) <> 1
             OR count(CASE WHEN e.kind = r.status THEN 1 END) <> CASE WHEN r.status = 'processing' THEN 0 ELSE 1 END`,
      ),
    ).toBe(0);
  });

  it("pending records (recent and old) each have an open reconciliation item and a provider request id", async () => {
    const pending = await db.sql.query<{ id: bigint; updated_at: Date; provider: string | null; provider_request_id: string | null; items: number }>(
      `SELECT r.id, r.updated_at, r.provider, r.provider_request_id,
              (SELECT count(*) FROM reconciliation_items i WHERE i.record_id = r.id AND i.state = 'open') AS items
         FROM idempotency_records r WHERE r.status = 'pending'`,
    );
    expect(pending.length).toBe(summary.scenarios.pending);
    for (const p of pending) {
      expect(num(p.items)).toBe(1);
      expect(p.provider).toMatch(/^(mockpay|acmepay)$/);
      expect(p.provider_request_id).toBeTruthy();
    }
    expect(pending.some((p) => NOW.getTime() - p.updated_at.getTime() < 6 * HOUR)).toBe(true);
    expect(pending.some((p) => NOW.getTime() - p.updated_at.getTime() > 2 * DAY)).toBe(true);
  });

  it("has records stuck in processing for more than an hour, and a few genuinely in flight", async () => {
    const ph = db.dialect.param(1);
    const stuck = await count(db.sql, `SELECT 1 FROM idempotency_records WHERE status = 'processing' AND updated_at < ${ph}`, [new Date(NOW.getTime() - HOUR)]);
    const inFlight = await count(db.sql, `SELECT 1 FROM idempotency_records WHERE status = 'processing' AND updated_at > ${ph}`, [
      new Date(NOW.getTime() - 5 * 60_000),
    ]);
    expect(stuck).toBe(summary.scenarios.stuckProcessing);
    expect(stuck).toBeGreaterThan(0);
    expect(inFlight).toBe(summary.scenarios.inFlight);
  });

  it("has conflicts whose expected and received hashes differ", async () => {
    const conflicts = await db.sql.query<{ detail: { expectedPayloadHash: string; receivedPayloadHash: string }; payload_hash: string; record_hash: string }>(
      `SELECT e.detail, e.payload_hash, r.payload_hash AS record_hash
         FROM idempotency_events e JOIN idempotency_records r ON r.id = e.record_id WHERE e.kind = 'conflict'`,
    );
    expect(conflicts.length).toBeGreaterThan(0);
    for (const c of conflicts) {
      expect(c.detail.expectedPayloadHash).toBe(c.record_hash);
      expect(c.detail.receivedPayloadHash).toBe(c.payload_hash);
      expect(c.detail.receivedPayloadHash).not.toBe(c.detail.expectedPayloadHash);
      expect(c.payload_hash).toMatch(/^[0-9a-f]{64}$/);
    }
  });

  it("has replays of completed and of failed requests, concurrent duplicates and in-progress rejections", async () => {
    expect(
      await count(
        db.sql,
        `SELECT 1 FROM idempotency_events e JOIN idempotency_records r ON r.id = e.record_id WHERE e.kind = 'replayed' AND r.status = 'completed'`,
      ),
    ).toBeGreaterThan(0);
    // A declined card (402) retried unchanged: the stored 402 is replayed.
    expect(
      await count(
        db.sql,
        `SELECT 1 FROM idempotency_events e JOIN idempotency_records r ON r.id = e.record_id WHERE e.kind = 'replayed' AND r.status = 'failed' AND e.response_code = 402`,
      ),
    ).toBeGreaterThan(0);
    // Concurrent duplicates: rejected as in progress at the very instant of the reservation.
    expect(
      await count(
        db.sql,
        `SELECT 1 FROM idempotency_events d JOIN idempotency_events res ON res.record_id = d.record_id AND res.kind = 'reserved'
          WHERE d.kind = 'in_progress' AND d.occurred_at = res.occurred_at`,
      ),
    ).toBe(summary.scenarios.concurrentDuplicates);
    expect(
      await count(
        db.sql,
        `SELECT 1 FROM idempotency_events e JOIN idempotency_records r ON r.id = e.record_id WHERE e.kind = 'in_progress' AND r.status IN ('pending', 'processing')`,
      ),
    ).toBeGreaterThan(0);
  });

  it("has expired records and records expiring within the next 24 h", async () => {
    const [p1, p2] = [db.dialect.param(1), db.dialect.param(2)];
    expect(await count(db.sql, `SELECT 1 FROM idempotency_records WHERE expires_at < ${p1}`, [NOW])).toBe(summary.scenarios.expired);
    expect(
      await count(db.sql, `SELECT 1 FROM idempotency_records WHERE expires_at >= ${p1} AND expires_at < ${p2}`, [NOW, new Date(NOW.getTime() + DAY)]),
    ).toBe(summary.scenarios.expiringNext24h);
    expect(summary.scenarios.expired).toBeGreaterThan(0);
    expect(summary.scenarios.expiringNext24h).toBeGreaterThan(0);
  });

  it("plants the double charges a key cannot catch: same scope, operation and payload hash under different keys minutes apart", async () => {
    const pairs = await db.sql.query<{ k1: string; k2: string; a1: bigint; a2: bigint; gap: number }>(
      `SELECT a.idempotency_key AS k1, b.idempotency_key AS k2, a.amount_minor AS a1, b.amount_minor AS a2,
              ${byDialect(db, { postgres: "extract(epoch FROM b.created_at - a.created_at)::float8", mysql: "TIMESTAMPDIFF(MICROSECOND, a.created_at, b.created_at) / 1e6" })} AS gap
         FROM idempotency_records a
         JOIN idempotency_records b ON b.scope = a.scope AND b.operation = a.operation AND b.payload_hash = a.payload_hash
                                   AND b.idempotency_key <> a.idempotency_key
                                   AND b.created_at >= a.created_at AND b.created_at <= a.created_at + ${TEN_MINUTES(db)}
        WHERE a.status = 'completed' AND b.status = 'completed'
        ORDER BY k1`,
    );
    expect(pairs.length).toBeGreaterThan(0);
    // Exactly the planted ones: no accidental duplicates elsewhere in the data.
    expect(pairs.map((p) => [p.k1, p.k2].join(" ")).sort()).toEqual(summary.doubleSubmits.map((d) => d.keys.join(" ")).sort());
    for (const p of pairs) {
      expect(p.a1).toBe(p.a2);
      expect(num(p.gap)).toBeGreaterThan(0);
    }
    for (const d of summary.doubleSubmits) {
      expect(d.operation).toBe("capture_payment");
      expect(d.secondsApart).toBeLessThanOrEqual(600);
    }
  });

  it("keeps every timestamp within the last `days` days, none in the future", async () => {
    const t = await one<Record<string, Date>>(
      db.sql,
      `SELECT (SELECT min(created_at) FROM idempotency_records) AS min_created,
              (SELECT max(greatest(created_at, updated_at)) FROM idempotency_records) AS max_record,
              (SELECT min(occurred_at) FROM idempotency_events) AS min_event,
              (SELECT max(occurred_at) FROM idempotency_events) AS max_event,
              (SELECT max(greatest(created_at, updated_at)) FROM reconciliation_items) AS max_item,
              (SELECT max(greatest(created_at, COALESCE(sent_at, created_at))) FROM outbox_messages) AS max_outbox,
              (SELECT min(created_at) FROM outbox_messages) AS min_outbox`,
    );
    for (const k of ["min_created", "min_event", "min_outbox"]) expect(t[k].getTime(), k).toBeGreaterThanOrEqual(from.getTime());
    for (const k of ["max_record", "max_event", "max_item", "max_outbox"]) expect(t[k].getTime(), k).toBeLessThanOrEqual(NOW.getTime());
    // Events never precede their record.
    expect(await count(db.sql, `SELECT 1 FROM idempotency_events e JOIN idempotency_records r ON r.id = e.record_id WHERE e.occurred_at < r.created_at`)).toBe(
      0,
    );
  });

  it("follows a daily rhythm and a sensible TTL per operation", async () => {
    const hours = await one<{ night: number; day: number }>(
      db.sql,
      `SELECT count(CASE WHEN ${utcHour(db)} BETWEEN 2 AND 4 THEN 1 END) AS night,
              count(CASE WHEN ${utcHour(db)} BETWEEN 11 AND 13 THEN 1 END) AS day
         FROM idempotency_records`,
    );
    expect(num(hours.day)).toBeGreaterThan(3 * num(hours.night));
    const ttl = await db.sql.query<{ operation: string; hours: number }>(
      `SELECT operation, ${byDialect(db, {
        postgres: "min(extract(epoch FROM expires_at - created_at) / 3600)::int",
        mysql: "CAST(min(TIMESTAMPDIFF(SECOND, created_at, expires_at)) / 3600 AS SIGNED)",
      })} AS hours FROM idempotency_records GROUP BY operation`,
    );
    expect(Object.fromEntries(ttl.map((r) => [r.operation, num(r.hours)]))).toEqual({
      create_order: 24,
      capture_payment: 720,
      refund_payment: 336,
      issue_invoice: 168,
      accept_webhook: 72,
    });
  });

  it("completed payments carry outbox messages, mostly dispatched since", async () => {
    const rows = await db.sql.query<{ topic: string; status: string; n: number }>(
      `SELECT o.topic, o.status, count(*) AS n FROM outbox_messages o JOIN idempotency_records r ON r.id = o.record_id
        WHERE r.status = 'completed' GROUP BY 1, 2`,
    );
    const total = (topic: string, status?: string) =>
      rows.filter((r) => r.topic === topic && (!status || r.status === status)).reduce((s, r) => s + num(r.n), 0);
    expect(total("payment.captured")).toBeGreaterThan(0);
    expect(total("payment.captured", "sent")).toBeGreaterThan(total("payment.captured") * 0.8);
    expect(await count(db.sql, `SELECT 1 FROM outbox_messages o JOIN idempotency_records r ON r.id = o.record_id WHERE r.status <> 'completed'`)).toBe(0);
    expect(await count(db.sql, `SELECT 1 FROM outbox_messages WHERE status = 'sent' AND (sent_at IS NULL OR sent_at < created_at)`)).toBe(0);
  });

  it("stored responses hold what masking is for: customers' emails, card numbers, client secrets and session cookies", async () => {
    const rows = await db.sql.query<{ operation: string; response_code: number; response_headers: [string, string][]; response_body: string }>(
      `SELECT operation, response_code, response_headers, response_body FROM idempotency_records
        WHERE status = 'completed' AND operation IN ('capture_payment', 'create_order')`,
    );
    const fired = new Map<string, Set<string>>();
    for (const r of rows) {
      const rules = fired.get(r.operation) ?? new Set<string>();
      for (const m of maskResponse({ code: r.response_code, headers: r.response_headers, body: r.response_body }).masked) rules.add(m.rule);
      fired.set(r.operation, rules);
    }
    expect([...fired.get("capture_payment")!].sort()).toEqual(["card", "email", "header:set-cookie", "key:clientsecret", "key:cvc"]);
    expect([...fired.get("create_order")!].sort()).toEqual(["email", "header:set-cookie"]);
    // A third or so of the captures echo the whole card (a legacy checkout); every card number is Luhn-valid.
    const echoed = rows.filter((r) => r.operation === "capture_payment" && /"number":"[\d ]{15,19}"/.test(r.response_body)).length;
    const captures = rows.filter((r) => r.operation === "capture_payment").length;
    expect(echoed / captures).toBeGreaterThan(0.2);
    expect(echoed / captures).toBeLessThan(0.5);
  });

  it("bulk rows go next to the demo traffic without a single key collision", async () => {
    const r = await bulkGenerate(db.sql, { records: 1000, seed: 42, now: NOW, batchSize: 400 });
    expect(r.records).toBe(1000);
    expect(r.skipped).toBe(0);
  });
});

describe("demo traffic determinism", () => {
  const opts = { now: NOW, days: DAYS, requests: 400 };

  it("same seed and now on two fresh databases → identical data; another seed → different data; a re-run only replays", async () => {
    const a = await createTestDatabase();
    let first: Awaited<ReturnType<typeof digest>>;
    try {
      await generateDemoTraffic(a, { ...opts, seed: 7 });
      first = await digest(a.sql);
    } finally {
      await release(a);
    }
    const b = await createTestDatabase();
    try {
      await generateDemoTraffic(b, { ...opts, seed: 7 });
      expect(await digest(b.sql)).toEqual(first);

      // The same seed again on the filled database: no new records, no crash, only replays and the like.
      const before = await count(b.sql, `SELECT 1 FROM idempotency_records`);
      const again = await generateDemoTraffic(b, { ...opts, seed: 7 });
      expect(again.recordsCreated).toBe(0);
      expect(again.outcomes.owner).toBe(0);
      expect(again.outcomes.replay).toBeGreaterThan(0);
      expect(again.outcomes.conflict).toBeGreaterThan(0);
      expect(await count(b.sql, `SELECT 1 FROM idempotency_records`)).toBe(before);
      // …and at a later `now`: the same keys (they do not depend on time), so at most the
      // few steps whose moment has come in between are new.
      const later = await generateDemoTraffic(b, { ...opts, seed: 7, now: new Date(NOW.getTime() + 3 * HOUR) });
      expect(later.recordsCreated).toBeLessThan(before * 0.03);
      expect(later.outcomes.replay).toBeGreaterThan(before * 0.5);
    } finally {
      await release(b);
    }
    const c = await createTestDatabase();
    try {
      await generateDemoTraffic(c, { ...opts, seed: 8 });
      const other = await digest(c.sql);
      expect(other.records).not.toBe(first.records);
      expect(other.events).not.toBe(first.events);
      // No key of seed 7 appears under seed 8 (keys are seed-derived UUIDs and provider event ids).
      const keys = await c.sql.query<{ k: string }>(`SELECT idempotency_key AS k FROM idempotency_records LIMIT 5`);
      expect(keys.length).toBe(5);
    } finally {
      await release(c);
    }
  });
});

describe("bulk generation (set-based SQL)", () => {
  let db: TestDatabase;
  let result: BulkResult;
  const records = 5000;

  beforeAll(async () => {
    db = await createTestDatabase();
    result = await bulkGenerate(db.sql, { records, seed: 3, now: NOW, days: DAYS, batchSize: 2000 });
  });
  afterAll(() => release(db));

  it("writes the requested sizes, exactly", async () => {
    expect(result.records).toBe(records);
    expect(result.events).toBe(records * 3);
    expect(await count(db.sql, `SELECT 1 FROM idempotency_records`)).toBe(records);
    expect(await count(db.sql, `SELECT 1 FROM idempotency_events`)).toBe(records * 3);
    expect(await count(db.sql, `SELECT 1 FROM idempotency_records WHERE idempotency_key NOT LIKE 'bulk-3-%'`)).toBe(0);
    const s = result.byStatus;
    expect(s.completed + s.failed + s.pending + s.processing).toBe(records);
    expect(s.completed / records).toBeGreaterThan(0.85);
    expect(s.failed).toBeGreaterThan(0);
    expect(s.pending).toBeGreaterThan(0);
    expect(s.processing).toBeGreaterThan(0);
    expect(result.eventsByKind.reserved).toBe(records);
    expect(result.eventsByKind.conflict).toBeGreaterThan(0);
    expect(result.eventsByKind.replayed).toBeGreaterThan(0);
  });

  it("keeps to the constraints and the protocol's meaning", async () => {
    expect(await count(db.sql, `SELECT 1 FROM idempotency_records WHERE status NOT IN ('processing', 'completed', 'failed', 'pending')`)).toBe(0);
    expect(
      await count(
        db.sql,
        `SELECT 1 FROM idempotency_records WHERE ${notMatching(db, "payload_hash", "^[0-9a-f]{64}$")} OR ${notMatching(db, "currency", "^[A-Z]{3}$")}`,
      ),
    ).toBe(0);
    // Every record: exactly one reservation first, and its outcome event.
    expect(
      await count(
        db.sql,
        `SELECT r.id FROM idempotency_records r JOIN idempotency_events e ON e.record_id = r.id
          GROUP BY r.id, r.status, r.created_at
         HAVING count(*) <> 3
             OR count(CASE WHEN e.kind = 'reserved' AND e.occurred_at = r.created_at THEN 1 END) <> 1
             OR count(CASE WHEN e.kind = r.status THEN 1 END) <> CASE WHEN r.status = 'processing' THEN 0 ELSE 1 END
             OR min(e.occurred_at) < r.created_at`,
      ),
    ).toBe(0);
    // Pending: an open reconciliation item each, with the provider request id.
    expect(
      await count(
        db.sql,
        `SELECT 1 FROM idempotency_records r WHERE r.status = 'pending'
            AND NOT EXISTS (SELECT 1 FROM reconciliation_items i WHERE i.record_id = r.id AND i.state = 'open'
                              AND i.provider = r.provider AND i.provider_request_id = r.provider_request_id)`,
      ),
    ).toBe(0);
    expect(await count(db.sql, `SELECT 1 FROM reconciliation_items`)).toBe(result.byStatus.pending);
    // Stuck: processing and older than an hour; never a response.
    expect(
      await count(
        db.sql,
        `SELECT 1 FROM idempotency_records WHERE status = 'processing' AND (updated_at > ${db.dialect.param(1)} OR response_code IS NOT NULL)`,
        [new Date(NOW.getTime() - HOUR)],
      ),
    ).toBe(0);
    // Conflicts carry both hashes, which differ.
    expect(
      await count(
        db.sql,
        `SELECT 1 FROM idempotency_events e JOIN idempotency_records r ON r.id = e.record_id
          WHERE e.kind = 'conflict' AND (${jsonText(db, "e.detail", "expectedPayloadHash")} <> r.payload_hash
                OR ${jsonText(db, "e.detail", "receivedPayloadHash")} <> e.payload_hash
                OR e.payload_hash = r.payload_hash OR ${notMatching(db, "e.payload_hash", "^[0-9a-f]{64}$")})`,
      ),
    ).toBe(0);
    // Replays only for finished records, with their stored code.
    expect(
      await count(
        db.sql,
        `SELECT 1 FROM idempotency_events e JOIN idempotency_records r ON r.id = e.record_id
          WHERE e.kind = 'replayed' AND (r.status NOT IN ('completed', 'failed') OR ${byDialect(db, {
            postgres: "e.response_code IS DISTINCT FROM r.response_code",
            mysql: "NOT (e.response_code <=> r.response_code)",
          })})`,
      ),
    ).toBe(0);
    const t = await one<Record<string, Date>>(
      db.sql,
      `SELECT min(created_at) AS min_created, max(updated_at) AS max_updated,
              (SELECT max(occurred_at) FROM idempotency_events) AS max_event FROM idempotency_records`,
    );
    expect(t.min_created.getTime()).toBeGreaterThanOrEqual(NOW.getTime() - DAYS * DAY);
    expect(t.max_updated.getTime()).toBeLessThanOrEqual(NOW.getTime());
    expect(t.max_event.getTime()).toBeLessThanOrEqual(NOW.getTime());
    expect(await count(db.sql, `SELECT 1 FROM idempotency_records WHERE expires_at < ${db.dialect.param(1)}`, [NOW])).toBeGreaterThan(0);
  });

  it("writes records in the order writers do: ids ascend with created_at, day by day", async () => {
    // A heap in id order unrelated to time costs every index-only scan of a large range a
    // visibility-map page per entry (docs/scale.md): the bench's tables must not be shuffled.
    const rows = await db.sql.query<{ created_at: Date }>(`SELECT created_at FROM idempotency_records ORDER BY id`);
    let latest = 0;
    let behind = 0;
    for (const r of rows) {
      if (r.created_at.getTime() < latest - DAY) behind++;
      latest = Math.max(latest, r.created_at.getTime());
    }
    // Only today's records whose hour is still to come go back a whole period (at most a few %).
    expect(rows.length).toBe(records);
    expect(behind / records).toBeLessThan(0.05);
  });

  it("plants double submissions: same scope, operation and hash under another key minutes later", async () => {
    const pairs = await count(
      db.sql,
      `SELECT 1 FROM idempotency_records a JOIN idempotency_records b
          ON b.scope = a.scope AND b.operation = a.operation AND b.payload_hash = a.payload_hash AND b.id <> a.id
         AND b.created_at > a.created_at AND b.created_at <= a.created_at + ${TEN_MINUTES(db)}`,
    );
    expect(pairs).toBe(result.doubleSubmits);
  });

  it("is deterministic, and re-running the same seed inserts nothing", async () => {
    const first = await digest(db.sql);
    const again = await bulkGenerate(db.sql, { records, seed: 3, now: NOW, days: DAYS, batchSize: 2000 });
    expect(again.records).toBe(0);
    expect(again.skipped).toBe(records);
    expect(await digest(db.sql)).toEqual(first);

    const other = await createTestDatabase();
    try {
      await bulkGenerate(other.sql, { records, seed: 3, now: NOW, days: DAYS, batchSize: 1500 });
      expect(await digest(other.sql)).toEqual(first);
    } finally {
      await release(other);
    }
  });
});
