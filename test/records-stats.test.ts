import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { provideDatabase } from "@/lib/db/client";
import { byDialect } from "@/lib/db/dialect";
import { generateDemoTraffic, type DemoSummary } from "@/lib/demo/traffic";
import { bucketStarts, conflictStats, type ConflictEvent, type ConflictsInput } from "@/lib/stats/conflicts";
import { expiredGroup, expiryStats } from "@/lib/stats/expiry";
import { refreshRollups } from "@/lib/stats/rollups";
import { statsStore } from "@/lib/stats/store";
import { loadRules } from "@/lib/retention/rules";
import { createTestDatabase, type TestDatabase } from "./helpers/db";
import { call, json, tokenFor } from "./helpers/records-api";
import { decodeCursor } from "@/lib/db/paging";

let db: TestDatabase;
let demo: DemoSummary;
const now = new Date("2026-11-30T12:00:00.000Z");
const DAY = 86_400_000;

beforeAll(async () => {
  db = await createTestDatabase();
  demo = await generateDemoTraffic(db, { seed: 71, requests: 1500, days: 20, now });
  provideDatabase(db);
});
afterAll(() => db?.drop());

const stats = (input: ConflictsInput) => db.withSession((s) => conflictStats(s, input));

async function allEvents(input: ConflictsInput): Promise<ConflictEvent[]> {
  const out: ConflictEvent[] = [];
  let cursor: ConflictsInput["cursor"];
  for (let i = 0; i < 1000; i++) {
    const r = await stats({ ...input, cursor });
    out.push(...r.events.items);
    if (!r.events.nextCursor) return out;
    cursor = decodeCursor(r.events.nextCursor)!;
  }
  throw new Error("too many pages");
}

/** The truth, straight from the events table (MySQL's spelling where it differs: no FILTER, no `->>` on MariaDB). */
async function rawConflicts(from: Date, to: Date, operation?: string, scope?: string) {
  const mysql = db.dialect.name === "mysql";
  const where = mysql
    ? `kind = 'conflict' AND occurred_at >= ? AND occurred_at < ? AND (? IS NULL OR operation = ?) AND (? IS NULL OR scope = ?)`
    : `kind = 'conflict' AND occurred_at >= $1 AND occurred_at < $2 AND ($3::text IS NULL OR operation = $3) AND ($4::text IS NULL OR scope = $4)`;
  const params = mysql ? [from, to, operation ?? null, operation ?? null, scope ?? null, scope ?? null] : [from, to, operation ?? null, scope ?? null];
  const groups = await db.sql.query<{ operation: string; scope: string; n: bigint; keys: bigint; first: Date; last: Date }>(
    byDialect(db, {
      postgres: `SELECT operation, scope, count(*)::bigint AS n, count(DISTINCT idempotency_key)::bigint AS keys, min(occurred_at) AS first, max(occurred_at) AS last
       FROM idempotency_events WHERE ${where} GROUP BY 1, 2 ORDER BY 1, 2`,
      mysql: `SELECT operation, scope, COUNT(*) AS n, COUNT(DISTINCT idempotency_key) AS "keys", MIN(occurred_at) AS "first", MAX(occurred_at) AS "last"
       FROM idempotency_events WHERE ${where} GROUP BY operation, scope ORDER BY operation, scope`,
    }),
    params,
  );
  const events = await db.sql.query<{ id: bigint; expected: string | null; received: string | null; record_id: bigint | null }>(
    byDialect(db, {
      postgres: `SELECT id, detail->>'expectedPayloadHash' AS expected, detail->>'receivedPayloadHash' AS received, record_id
       FROM idempotency_events WHERE ${where} ORDER BY occurred_at DESC, id DESC`,
      mysql: `SELECT id, JSON_VALUE(detail, '$.expectedPayloadHash') AS expected, JSON_VALUE(detail, '$.receivedPayloadHash') AS received, record_id
       FROM idempotency_events WHERE ${where} ORDER BY occurred_at DESC, id DESC`,
    }),
    params,
  );
  const requests = await db.sql.query<{ operation: string; requests: bigint; conflicts: bigint }>(
    byDialect(db, {
      postgres: `SELECT operation, count(*)::bigint AS requests, count(*) FILTER (WHERE kind = 'conflict')::bigint AS conflicts
       FROM idempotency_events
      WHERE kind IN ('reserved', 'replayed', 'conflict', 'in_progress') AND occurred_at >= $1 AND occurred_at < $2
        AND ($3::text IS NULL OR operation = $3) AND ($4::text IS NULL OR scope = $4)
      GROUP BY 1 ORDER BY 1`,
      mysql: `SELECT operation, COUNT(*) AS requests, CAST(SUM(kind = 'conflict') AS SIGNED) AS conflicts
       FROM idempotency_events
      WHERE kind IN ('reserved', 'replayed', 'conflict', 'in_progress') AND occurred_at >= ? AND occurred_at < ?
        AND (? IS NULL OR operation = ?) AND (? IS NULL OR scope = ?)
      GROUP BY operation ORDER BY operation`,
    }),
    params,
  );
  return { groups, events, requests };
}

describe("conflicts", () => {
  const ranges: [string, Date, Date][] = [
    ["all 20 days", new Date(now.getTime() - 20 * DAY), now],
    ["last 36 h, unaligned", new Date(now.getTime() - 36 * 3600_000 + 12_345), new Date(now.getTime() - 777)],
  ];

  it("groups by operation and scope, rates per operation and the trend equal direct counts — before and after rollups", async () => {
    expect(demo.scenarios.conflicts).toBeGreaterThanOrEqual(3);
    for (const pass of ["raw", "rolled up"]) {
      if (pass === "rolled up") await db.withSession((s) => refreshRollups(s));
      for (const [label, from, to] of ranges) {
        const r = await stats({ from, to });
        const truth = await rawConflicts(from, to);
        const sorted = [...r.groups].sort((a, b) => a.operation.localeCompare(b.operation) || a.scope.localeCompare(b.scope));
        expect(
          sorted.map((g) => [g.operation, g.scope, g.conflicts, g.keys, g.firstAt, g.lastAt]),
          label,
        ).toEqual(truth.groups.map((g) => [g.operation, g.scope, Number(g.n), Number(g.keys), g.first, g.last]));
        expect(r.total).toBe(truth.events.length);
        expect(
          r.rates.map((x) => [x.operation, x.requests, x.conflicts]),
          `${label} ${pass}`,
        ).toEqual(truth.requests.map((x) => [x.operation, Number(x.requests), Number(x.conflicts)]));
        for (const rate of r.rates) expect(rate.rate).toBeCloseTo(rate.conflicts / rate.requests, 12);

        // Trend: every bucket present, counts equal to date_trunc over the raw events.
        expect(r.bucket).toBe(label.startsWith("all") ? "day" : "hour");
        expect(r.trend.map((t) => t.bucket)).toEqual(bucketStarts(from, to, r.bucket));
        const perBucket = await byDialect(db, {
          postgres: () =>
            db.sql.query<{ b: Date; operation: string; n: bigint }>(
              `SELECT date_trunc($3, occurred_at, 'UTC') AS b, operation, count(*)::bigint AS n FROM idempotency_events
            WHERE kind = 'conflict' AND occurred_at >= $1 AND occurred_at < $2 GROUP BY 1, 2`,
              [from, to, r.bucket],
            ),
          mysql: () =>
            db.sql.query<{ b: Date; operation: string; n: bigint }>(
              `SELECT CAST(DATE_FORMAT(occurred_at, '${r.bucket === "hour" ? "%Y-%m-%d %H:00:00" : "%Y-%m-%d 00:00:00"}') AS DATETIME) AS b, operation, COUNT(*) AS n
             FROM idempotency_events WHERE kind = 'conflict' AND occurred_at >= ? AND occurred_at < ? GROUP BY b, operation`,
              [from, to],
            ),
        })();
        const got = r.trend.flatMap((t) => Object.entries(t.counts).map(([op, n]) => `${t.bucket.toISOString()} ${op} ${n}`)).sort();
        expect(got).toEqual(perBucket.map((x) => `${x.b.toISOString()} ${x.operation} ${x.n}`).sort());
        expect(r.trend.reduce((s, t) => s + t.total, 0)).toBe(r.total);
      }
    }
  });

  it("drill-down: every conflict with the stored and the received payload hash, newest first, across pages", async () => {
    const [, from, to] = ranges[0];
    const items = await allEvents({ from, to, limit: 4 });
    const truth = await rawConflicts(from, to);
    expect(items.map((e) => e.id)).toEqual(truth.events.map((e) => e.id));
    for (const e of items) {
      const t = truth.events.find((x) => x.id === e.id)!;
      expect([e.expectedPayloadHash, e.receivedPayloadHash, e.recordId]).toEqual([t.expected, t.received, t.record_id]);
      expect(e.expectedPayloadHash).toMatch(/^[0-9a-f]{64}$/);
      expect(e.receivedPayloadHash).not.toBe(e.expectedPayloadHash);
      // The stored hash is the record's.
      const [rec] = await db.sql.query<{ payload_hash: string }>(`SELECT payload_hash FROM idempotency_records WHERE id = ${db.dialect.param(1)}`, [
        e.recordId,
      ]);
      expect(rec.payload_hash).toBe(e.expectedPayloadHash);
    }
  });

  it("filters by operation and scope", async () => {
    const [, from, to] = ranges[0];
    const all = await stats({ from, to });
    const { operation, scope } = all.groups[0];
    const byOp = await stats({ from, to, operation });
    expect(byOp.groups.every((g) => g.operation === operation)).toBe(true);
    expect(byOp.total).toBe((await rawConflicts(from, to, operation)).events.length);
    expect(byOp.rates.map((x) => x.operation)).toEqual([operation]);
    const byScope = await stats({ from, to, scope });
    expect(byScope.total).toBe((await rawConflicts(from, to, undefined, scope)).events.length);
    expect(ids(await allEvents({ from, to, operation, scope, limit: 1 }))).toEqual(ids((await rawConflicts(from, to, operation, scope)).events));
  });
});

const ids = (rows: { id: bigint }[]) => rows.map((r) => r.id.toString());

/** Records expiring in [fromMs, toMs) of operation `op` and scope `scope` (null: any), counted directly. */
async function expiringBetween(fromMs: number, toMs: number, op: string | null, scope: string | null): Promise<number> {
  const [{ n }] = await byDialect(db, {
    postgres: () =>
      db.sql.query<{ n: bigint }>(
        `SELECT count(*)::bigint AS n FROM idempotency_records WHERE expires_at >= $1 AND expires_at < $2
        AND ($3::text IS NULL OR operation = $3) AND ($4::text IS NULL OR scope = $4)`,
        [new Date(fromMs), new Date(toMs), op, scope],
      ),
    mysql: () =>
      db.sql.query<{ n: bigint }>(
        `SELECT COUNT(*) AS n FROM idempotency_records WHERE expires_at >= ? AND expires_at < ? AND (? IS NULL OR operation = ?) AND (? IS NULL OR scope = ?)`,
        [new Date(fromMs), new Date(toMs), op, op, scope, scope],
      ),
  })();
  return Number(n);
}

/**
 * A histogram's buckets (24 UTC hours or 30 UTC days from `at`): from `at` to its end without a
 * gap, inner bounds on the UTC hour or midnight, each counted directly.
 */
async function expectBuckets(buckets: { start: Date; end: Date; count: number }[], at: Date, per: "hour" | "day", op: string | null, scope: string | null) {
  const [unit, count] = per === "hour" ? [3_600_000, 24] : [DAY, 30];
  const t = at.getTime();
  expect(buckets).toHaveLength(t % unit === 0 ? count : count + 1);
  expect(buckets[0].start.getTime()).toBe(t);
  expect(buckets.at(-1)!.end.getTime()).toBe(t + count * unit);
  for (const [i, b] of buckets.entries()) {
    if (i > 0) expect(b.start.getTime()).toBe(buckets[i - 1].end.getTime());
    if (i > 0) expect(b.start.getTime() % unit).toBe(0);
    expect(b.count, `${b.start.toISOString()} – ${b.end.toISOString()}`).toBe(await expiringBetween(b.start.getTime(), b.end.getTime(), op, scope));
  }
}

describe("expiry", () => {
  it("histograms (next 24 h by hour, next 30 days by day) and expired-not-purged equal direct counts", async () => {
    // A legal hold and an open reconciliation item on expired completed records: not purgeable.
    const expiredDone = await db.sql.query<{ id: bigint }>(
      `SELECT id FROM idempotency_records WHERE status = 'completed' AND expires_at < ${db.dialect.param(1)} ORDER BY id LIMIT 2`,
      [now],
    );
    await db.sql.query(`UPDATE idempotency_records SET legal_hold = true WHERE id = ${db.dialect.param(1)}`, [expiredDone[0].id]);
    // Two open items on one record: it is one record with an open item.
    for (const state of ["open", "needs_manual"]) {
      await db.sql.query(`INSERT INTO reconciliation_items (record_id, provider, state) VALUES (${db.dialect.param(1)}, 'mockpay', ${db.dialect.param(2)})`, [
        expiredDone[1].id,
        state,
      ]);
    }
    // Purge candidates follow the retention policies (lib/retention/eligibility.ts): every record 0 days
    // past expiry by default, capture_payment 2 days; pending outbox messages protect a record too.
    await db.sql.query(`INSERT INTO retention_policies (operation, keep_records_days, keep_events_days) VALUES (NULL, 0, 30), ('capture_payment', 2, 30)`);

    for (const filter of [{}, { operation: "capture_payment" }, { scope: "tenant:acme" }]) {
      const s = await expiryStats(db, { now, ...filter });
      const op = (filter as { operation?: string }).operation ?? null;
      const scope = (filter as { scope?: string }).scope ?? null;
      const count = (fromMs: number, toMs: number) => expiringBetween(fromMs, toMs, op, scope);
      await expectBuckets(s.next24h, now, "hour", op, scope);
      await expectBuckets(s.next30d, now, "day", op, scope);
      expect(s.expiringNext24h).toBe(await count(now.getTime(), now.getTime() + DAY));
      expect(s.expiringNext30d).toBe(await count(now.getTime(), now.getTime() + 30 * DAY));

      type Truth = { operation: string; status: string; n: bigint; held: bigint; open: bigint; purgeable: bigint; oldest: Date };
      const truth = await byDialect(db, {
        postgres: () =>
          db.sql.query<Truth>(
            `SELECT operation, status, count(*)::bigint AS n, sum(CASE WHEN legal_hold THEN 1 ELSE 0 END)::bigint AS held,
                sum(CASE WHEN id IN (SELECT record_id FROM reconciliation_items WHERE state IN ('open', 'checking', 'needs_manual')) THEN 1 ELSE 0 END)::bigint AS open,
                sum(CASE WHEN status IN ('completed', 'failed') AND NOT legal_hold
                          AND id NOT IN (SELECT record_id FROM reconciliation_items WHERE state IN ('open', 'checking', 'needs_manual'))
                          AND id NOT IN (SELECT record_id FROM outbox_messages WHERE status = 'pending' AND record_id IS NOT NULL)
                          AND expires_at < $1::timestamptz - CASE WHEN operation = 'capture_payment' THEN interval '48 hours' ELSE interval '0' END
                     THEN 1 ELSE 0 END)::bigint AS purgeable,
                min(expires_at) AS oldest
           FROM idempotency_records WHERE expires_at < $1 AND ($2::text IS NULL OR operation = $2) AND ($3::text IS NULL OR scope = $3)
          GROUP BY 1, 2 ORDER BY 1, 2`,
            [now, op, scope],
          ),
        mysql: () =>
          db.sql.query<Truth>(
            `SELECT operation, status, COUNT(*) AS n, CAST(SUM(CASE WHEN legal_hold THEN 1 ELSE 0 END) AS SIGNED) AS held,
                CAST(SUM(CASE WHEN id IN (SELECT record_id FROM reconciliation_items WHERE state IN ('open', 'checking', 'needs_manual')) THEN 1 ELSE 0 END) AS SIGNED) AS "open",
                CAST(SUM(CASE WHEN status IN ('completed', 'failed') AND NOT legal_hold
                          AND id NOT IN (SELECT record_id FROM reconciliation_items WHERE state IN ('open', 'checking', 'needs_manual'))
                          AND id NOT IN (SELECT record_id FROM outbox_messages WHERE status = 'pending' AND record_id IS NOT NULL)
                          AND expires_at < ? - INTERVAL (CASE WHEN operation = 'capture_payment' THEN 48 ELSE 0 END) HOUR
                     THEN 1 ELSE 0 END) AS SIGNED) AS purgeable,
                MIN(expires_at) AS oldest
           FROM idempotency_records WHERE expires_at < ? AND (? IS NULL OR operation = ?) AND (? IS NULL OR scope = ?)
          GROUP BY operation, status ORDER BY operation, status`,
            [now, now, op, op, scope, scope],
          ),
      })();
      expect(s.expired.groups).toEqual(truth.map(expiredGroup));
    }
    const all = await expiryStats(db, { now });
    // The demo traffic's own tally (taken when each record was created, relative to the same now).
    expect(all.expired.total).toBe(demo.scenarios.expired);
    expect(all.expiringNext24h).toBe(demo.scenarios.expiringNext24h);
    expect(all.expired.total - all.expired.purgeable).toBeGreaterThanOrEqual(2);
  });

  it("without a scope, the expired groups come from the census and equal the plain count over every expired record (every protection, every policy shape, before and after a refresh)", async () => {
    const $ = (i: number) => db.dialect.param(i);
    // Off the hour, so that every interval has partial hours at its edges (read from the records, not the census).
    const at = new Date(now.getTime() + 17 * 60_000 + 23_456);
    const pick = (status: string, offset: number) =>
      db.sql.query<{ id: bigint }>(`SELECT id FROM idempotency_records WHERE status = ${$(1)} AND expires_at < ${$(2)} ORDER BY id LIMIT 1 OFFSET ${offset}`, [
        status,
        now,
      ]);
    // Every protection on expired records of each status: a held failed record, a compensation
    // (on the record it compensates and on the duplicate it undoes), an outbox message under a
    // service's own status name, an open item and a hold on a processing record, and a held scope.
    const [failedHeld] = await pick("failed", 0);
    const [{ operation: op }] = await db.sql.query<{ operation: string }>(`SELECT operation FROM idempotency_records WHERE id = ${$(1)}`, [failedHeld.id]);
    const [comp, related, outbox] = [...(await pick("completed", 10)), ...(await pick("completed", 11)), ...(await pick("failed", 1))];
    // An expired processing record, as a writer inserts one (above the census's record mark: counted by the readers' correction until a refresh).
    const columns = (
      await db.sql.query<{ c: string }>(
        `SELECT column_name AS c FROM information_schema.columns WHERE table_name = 'idempotency_records' AND table_schema = ${byDialect(db, { postgres: "current_schema()", mysql: "DATABASE()" })} AND column_name NOT IN ('id', 'idempotency_key', 'expires_at', 'status', 'legal_hold')`,
      )
    ).map((r) => r.c);
    await db.sql.query(
      `INSERT INTO idempotency_records (${columns.join(", ")}, idempotency_key, expires_at, status, legal_hold)
       SELECT ${columns.join(", ")}, 'census-expiry-processing', ${$(1)}, 'processing', false FROM idempotency_records WHERE id = ${$(2)}`,
      [new Date(now.getTime() - 3 * DAY), failedHeld.id],
    );
    const [unsettled] = await db.sql.query<{ id: bigint }>(`SELECT id FROM idempotency_records WHERE idempotency_key = 'census-expiry-processing'`);
    await db.sql.query(`UPDATE idempotency_records SET legal_hold = true WHERE id IN (${$(1)}, ${$(2)})`, [failedHeld.id, unsettled.id]);
    await db.sql.query(`INSERT INTO reconciliation_items (record_id, provider, state) VALUES (${$(1)}, 'mockpay', 'checking')`, [unsettled.id]);
    await db.sql.query(
      `INSERT INTO compensations (record_id, related_record_id, scope, operation, idempotency_key, kind, amount_minor, currency, provider, provider_reference,
                                  provider_idempotency_key, state, reason, requested_by, requested_by_label)
       VALUES (${$(1)}, ${$(2)}, 'tenant:x', 'capture_payment', 'k', 'refund', 100, 'EUR', 'mockpay', 'ref', 'census-expiry-comp', 'requested', 'test', 1, 'test')`,
      [comp.id, related.id],
    );
    await db.sql.query(`INSERT INTO outbox_messages (record_id, topic, payload, status) VALUES (${$(1)}, 't', '{}', 'queued'), (${$(2)}, 't', '{}', 'sent')`, [
      outbox.id,
      comp.id,
    ]);
    await db.sql.query(`INSERT INTO legal_holds (scope, reason, set_by_label) VALUES ('tenant:globex', 'test', 'test')`);

    const groups = async (f: { operation?: string }) => {
      const plain = await db.withSession(async (s) => {
        const rules = await loadRules(s);
        return statsStore(s).expiredGroups(f, at, rules);
      });
      const fromCensus = await expiryStats(db, { now: at, ...f });
      // The histograms from the census (off the hour: a partial first and last bucket) and from the plain statement (a scope's).
      const days = await statsStore(db.sql).expiringPerDay(f, at);
      expect(fromCensus.next30d.map((d) => d.count)).toEqual(fromCensus.next30d.map((_, i) => Number(days.find((d) => Number(d.i) === i)?.n ?? 0)));
      await expectBuckets(fromCensus.next30d, at, "day", f.operation ?? null, null);
      expect(fromCensus.expiringNext30d).toBeGreaterThan(0);
      const hours = await statsStore(db.sql).expiringPerHour(f, at);
      expect(fromCensus.next24h.map((h) => h.count)).toEqual(fromCensus.next24h.map((_, i) => Number(hours.find((h) => Number(h.i) === i)?.n ?? 0)));
      await expectBuckets(fromCensus.next24h, at, "hour", f.operation ?? null, null);
      expect(fromCensus.expiringNext24h).toBeGreaterThan(0);
      expect(
        plain.length,
        JSON.stringify(plain, (_, v) => (typeof v === "bigint" ? Number(v) : v)),
      ).toBeGreaterThanOrEqual(3);
      expect(fromCensus.expired.groups).toEqual(plain.map(expiredGroup));
      return fromCensus.expired;
    };
    const policies = [
      // [default, the operation's own]: days, or false for a disabled policy; undefined for none.
      [0, 2],
      [false, 1],
      [3, false],
      [undefined, undefined],
      [1, undefined],
    ] as const;
    for (const refreshed of [false, true]) {
      if (refreshed) await db.withSession((s) => refreshRollups(s));
      for (const [byDefault, own] of policies) {
        await db.sql.query(`DELETE FROM retention_policies`);
        for (const [operation, days] of [
          [null, byDefault],
          [op, own],
        ] as const) {
          if (days === undefined) continue;
          await db.sql.query(
            `INSERT INTO retention_policies (operation, keep_records_days, keep_events_days, enabled) VALUES (${$(1)}, ${$(2)}, 30, ${$(3)})`,
            [operation, days === false ? 5 : days, days !== false],
          );
        }
        const all = await groups({});
        await groups({ operation: op });
        if (byDefault === 0) expect(all.purgeable).toBeGreaterThan(0);
      }
    }
  });
});

describe("GET /api/v1/conflicts and /api/v1/expiry", () => {
  it("answer JSON for stats.read, and refuse bad parameters with 400 problem+json", async () => {
    const conflicts = await import("@/app/api/v1/conflicts/route");
    const expiry = await import("@/app/api/v1/expiry/route");
    const { token } = await tokenFor(db, ["viewer"]);
    const from = new Date(now.getTime() - 20 * DAY).toISOString();
    const res = await call(conflicts.GET, `/api/v1/conflicts?from=${from}&to=${now.toISOString()}&limit=3`, token);
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body.bucket).toBe("day");
    expect(body.events.items).toHaveLength(3);
    expect(body.events.items[0]).toMatchObject({ id: expect.stringMatching(/^\d+$/), occurredAt: expect.stringMatching(/Z$/) });
    expect(body.trend).toHaveLength(21);
    const e = await call(expiry.GET, "/api/v1/expiry?operation=capture_payment", token);
    expect(e.status).toBe(200);
    const hours = (await json(e)).next24h as { start: string; end: string }[];
    expect(Date.parse(hours.at(-1)!.end) - Date.parse(hours[0].start)).toBe(DAY);

    for (const qs of [
      "bucket=minute",
      `from=${new Date(now.getTime() - 40 * DAY).toISOString()}&to=${now.toISOString()}&bucket=hour`,
      "from=2026-11-30T10:00:00Z&to=2026-11-30T09:00:00Z",
      "from=2020-01-01T00:00:00Z&to=2026-01-01T00:00:00Z",
      "limit=500",
      "cursor=abc",
      "kind=conflict",
    ]) {
      const bad = await call(conflicts.GET, `/api/v1/conflicts?${qs}`, token);
      expect(bad.status, qs).toBe(400);
      expect(bad.headers.get("content-type")).toBe("application/problem+json");
    }
    for (const qs of ["operation=NOPE", "status=expired", "scope=a b"]) {
      expect((await call(expiry.GET, `/api/v1/expiry?${qs}`, token)).status, qs).toBe(400);
    }
    const recordsOnly = await tokenFor(db, ["viewer"], ["records.read"]);
    expect((await call(expiry.GET, "/api/v1/expiry", recordsOnly.token)).status).toBe(403);
    expect((await call(conflicts.GET, "/api/v1/conflicts", recordsOnly.token)).status).toBe(403);
    expect((await call(expiry.POST, "/api/v1/expiry", token, { method: "POST" })).status).toBe(405);
  });
});
