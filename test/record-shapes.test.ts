import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { provideDatabase } from "@/lib/db/client";
import { execute } from "@/lib/db/sql";
import { readHeaders } from "@/lib/idempotency";
import { createTestDatabase, usingMysql, type TestDatabase } from "./helpers/db";
import { call, json, tokenFor } from "./helpers/records-api";

/**
 * A reader liberal in what it accepts (issue 10): rows of every shape a writer following the
 * protocol may leave — headers as pairs, as an object (values strings, numbers, lists, null,
 * nested), as header lines or as junk; payload hashes in any form; any text or JSON body;
 * odd currencies, huge amounts, keys past 255 characters, far dates; events with any detail —
 * are written with plain SQL, then every screen's API reads them for every role: always 200,
 * JSON (or CSV), the headers as pairs, nothing thrown. fast-check with a fixed seed.
 * On MySQL/MariaDB the shapes are those a MySQL writer can leave: its indexed texts (scope,
 * operation, key, payload hash, resource and request ids) are VARCHAR(255) (ADR 0012).
 */

let db: TestDatabase;
const tokens: Record<string, string> = {};
const ROLES = ["viewer", "support", "operator", "approver", "admin"] as const;

beforeAll(async () => {
  db = await createTestDatabase();
  provideDatabase(db);
  for (const role of ROLES) tokens[role] = (await tokenFor(db, [role])).token;
}, 120_000);
afterAll(() => db?.drop());

// Postgres cannot store NUL in text; writers cannot either, so the generators leave it out.
const text = (max: number) => fc.string({ unit: "grapheme", maxLength: max }).map((s) => s.replace(/\u0000/g, ""));
const nonEmpty = (max: number) => text(max).filter((s) => s.length > 0);
const jsonValue = fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.parse(JSON.stringify(v).replace(/\\u0000/g, "")));
/** At most `max` characters on MySQL, where the column is VARCHAR(255) and a longer text is refused; as generated elsewhere. */
const fit = (max: number) => (s: string) => (usingMysql ? [...s].slice(0, max).join("") : s);

const headersArb = fc.oneof(
  fc.constant(null),
  fc.array(fc.tuple(nonEmpty(30), text(60)), { maxLength: 6 }), // the contract: pairs
  fc.dictionary(nonEmpty(30), fc.oneof(text(60), fc.integer(), fc.array(text(20), { maxLength: 3 }), fc.constant(null), jsonValue), { maxKeys: 6 }), // an object
  fc.array(
    fc.tuple(nonEmpty(20), text(30)).map(([n, v]) => `${n.replace(/:/g, "")}: ${v}`),
    { maxLength: 4 },
  ), // header lines
  jsonValue, // anything else a writer may have put there
);

const hashArb = fc
  .oneof(
    fc.stringMatching(/^[0-9a-f]{64}$/),
    fc.stringMatching(/^[0-9A-F]{40}$/),
    fc.stringMatching(/^[0-9a-f]{32}$/),
    fc.base64String({ minLength: 4, maxLength: 44 }),
    nonEmpty(120),
  )
  .map(fit(255));

const dateArb = fc.date({ min: new Date("2000-01-01T00:00:00Z"), max: new Date("2080-12-31T00:00:00Z"), noInvalidDate: true });

const recordArb = fc.record({
  scope: nonEmpty(60).map(fit(255)),
  operation: fc.oneof(fc.constantFrom("capture_payment", "create_order", "refund_payment"), nonEmpty(40)).map(fit(255)),
  key: nonEmpty(300).map(fit(250)), // stored as `${n}:${key}`
  hash: hashArb,
  status: fc.constantFrom("processing", "completed", "failed", "pending"),
  code: fc.oneof(fc.constant(null), fc.integer({ min: 100, max: 599 }), fc.integer({ min: -5, max: 100_000 })),
  headers: headersArb,
  body: fc.oneof(
    fc.constant(null),
    text(400),
    jsonValue.map((v) => JSON.stringify(v)),
  ),
  resourceId: fc.option(nonEmpty(40).map(fit(255)), { nil: null }),
  provider: fc.option(fc.constantFrom("mockpay", "acmepay", "unknown-psp"), { nil: null }),
  providerRequestId: fc.option(nonEmpty(40).map(fit(255)), { nil: null }),
  amount: fc.option(fc.bigInt({ min: -(2n ** 62n), max: 2n ** 62n }), { nil: null }),
  currency: fc.option(fc.oneof(fc.constantFrom("EUR", "eur", "€", "XX", ""), text(5)), { nil: null }),
  createdAt: dateArb,
  updatedAt: dateArb,
  expiresAt: dateArb,
  version: fc.integer({ min: 0, max: 2_000_000_000 }),
  legalHold: fc.boolean(),
  events: fc.array(
    fc.record({
      kind: fc.constantFrom("reserved", "replayed", "conflict", "in_progress", "completed", "failed", "pending"),
      detail: fc.option(jsonValue, { nil: null }),
      hash: fc.option(hashArb, { nil: null }),
    }),
    { maxLength: 4 },
  ),
});

type Rec = typeof recordArb extends fc.Arbitrary<infer T> ? T : never;

/** The n-th placeholder ($n or ?), with PostgreSQL's cast where it needs one. */
const ph = (n: number, pgCast = "") => (usingMysql ? "?" : `$${n}${pgCast}`);

/** Writes one record as a writer would, in the dialect's SQL: its id. */
async function insertRecord(values: unknown[]): Promise<bigint> {
  const text = `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, response_code, response_headers, response_body,
        resource_id, provider, provider_request_id, amount_minor, currency, created_at, updated_at, expires_at, version, legal_hold)
     VALUES (${values.map((_, k) => ph(k + 1, k === 6 ? "::jsonb" : "")).join(", ")})`;
  if (usingMysql) return (await execute(db.sql, text, values)).insertId!; // no RETURNING on MySQL
  const [{ id }] = await db.sql.query<{ id: bigint }>(`${text} RETURNING id`, values);
  return id;
}

async function insert(r: Rec, n: number): Promise<bigint> {
  const id = await insertRecord([
    r.scope,
    r.operation,
    `${n}:${r.key}`,
    r.hash,
    r.status,
    r.code,
    r.headers === null ? null : JSON.stringify(r.headers),
    r.body,
    r.resourceId,
    r.provider,
    r.providerRequestId,
    r.amount,
    r.currency,
    r.createdAt,
    r.updatedAt,
    r.expiresAt,
    r.version,
    r.legalHold,
  ]);
  for (const e of r.events) {
    await db.sql.query(
      `INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind, payload_hash, detail)
       VALUES (${ph(1)}, ${ph(2)}, ${ph(3)}, ${ph(4)}, ${ph(5)}, ${ph(6)}, ${ph(7, "::jsonb")})`,
      [id, r.scope, r.operation, `${n}:${r.key}`, e.kind, e.hash, e.detail === null ? null : JSON.stringify(e.detail)],
    );
  }
  if (r.status === "pending" && r.provider) {
    await db.sql.query(
      `INSERT INTO reconciliation_items (record_id, provider, provider_request_id, next_check_at) VALUES (${ph(1)}, ${ph(2)}, ${ph(3)}, now())`,
      [id, r.provider, r.providerRequestId],
    );
  }
  return id;
}

const route = {
  detail: () => import("@/app/api/v1/records/[id]/route"),
  search: () => import("@/app/api/v1/records/route"),
  queue: () => import("@/app/api/v1/queue/route"),
  duplicates: () => import("@/app/api/v1/duplicates/route"),
  conflicts: () => import("@/app/api/v1/conflicts/route"),
  expiry: () => import("@/app/api/v1/expiry/route"),
  overview: () => import("@/app/api/v1/stats/overview/route"),
  exportList: () => import("@/app/api/v1/export/[list]/route"),
};

describe("every screen reads every record shape a writer may leave", () => {
  it("record page, search, queue, duplicates, conflicts, expiry, overview and export answer 200 for every role", async () => {
    let n = 0;
    const statuses: Record<number, number> = {};
    const shapes: Record<string, number> = {};
    const seen = (s: number) => (statuses[s] = (statuses[s] ?? 0) + 1);
    const detail = await route.detail();
    await fc.assert(
      fc.asyncProperty(recordArb, async (r) => {
        const id = await insert(r, n++);
        for (const role of ROLES) {
          const res = await call(detail.GET, `/api/v1/records/${id}`, tokens[role], {}, { id: String(id) });
          seen(res.status);
          expect(res.status, `${role} reads record ${id}`).toBe(200);
          const body = await json(res);
          expect(body.record.id).toBe(String(id));
          if (body.response) {
            const expected = readHeaders(r.headers);
            shapes[expected.shape] = (shapes[expected.shape] ?? 0) + 1;
            expect(Array.isArray(body.response.headers ?? [])).toBe(true);
            for (const h of body.response.headers ?? []) expect(h).toEqual([expect.any(String), expect.any(String)]);
            expect(body.response.headersShape).toBe(expected.shape);
            if (role !== "viewer" && body.response.access === "revealed") expect(body.response.headers).toEqual(expected.pairs);
          }
        }
      }),
      { seed: 20261201, numRuns: 80 },
    );
    // Every list over all of them, for a reader of bodies and one without.
    const lists: [string, () => Promise<{ GET: unknown }>, string, Record<string, string>?][] = [
      ["search by scope prefix", route.search, "/api/v1/records?field=scope&q=a&match=prefix"],
      ["search by key prefix", route.search, "/api/v1/records?field=key&q=1&match=prefix"],
      ["queue", route.queue, "/api/v1/queue"],
      ["duplicates", route.duplicates, "/api/v1/duplicates"],
      ["conflicts", route.conflicts, "/api/v1/conflicts"],
      ["expiry", route.expiry, "/api/v1/expiry"],
      ["overview", route.overview, "/api/v1/stats/overview?from=2000-01-01T00:00:00Z&to=2001-01-01T00:00:00Z"],
      ["overview, recent", route.overview, "/api/v1/stats/overview"],
      ["export records", route.exportList, "/api/v1/export/records?field=scope&q=a&match=prefix", { list: "records" }],
      ["export queue", route.exportList, "/api/v1/export/queue", { list: "queue" }],
    ];
    for (const role of ["viewer", "support"] as const) {
      for (const [name, load, url, params] of lists) {
        const mod = (await load()) as { GET: Parameters<typeof call>[0] };
        const res = await call(mod.GET, url, tokens[role], {}, params ?? {});
        seen(res.status);
        if (role === "viewer" && name.startsWith("export")) {
          expect(res.status, `${name} for ${role}`).toBe(403); // export is a permission of its own
          continue;
        }
        expect(res.status, `${name} for ${role}: ${res.status === 200 ? "" : await res.clone().text()}`).toBe(200);
        const type = res.headers.get("content-type") ?? "";
        if (type.includes("json")) await res.json();
        else expect(type).toContain("text/csv");
      }
    }
    console.log(`record shapes: ${n} records of random shape, ${JSON.stringify(statuses)} by status; header shapes ${JSON.stringify(shapes)}`);
    expect(Object.keys(shapes)).toEqual(expect.arrayContaining(["pairs", "object", "other"]));
  }, 300_000);
});
