import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IdempotencyStore } from "@/lib/idempotency";
import { byDialect } from "@/lib/db/dialect";
import type { SqlExecutor } from "@/lib/db/sql";
import { generateDemoTraffic } from "@/lib/demo/traffic";
import { mulberry32 } from "@/lib/demo/traffic-plan";
import { startPurge } from "@/lib/retention/runs";
import { workRun } from "@/lib/retention/worker";
import { readSideConfig } from "@/lib/records/config";
import { activeByOperationSql } from "@/lib/stats/store.postgres";
import * as mysqlStats from "@/lib/stats/store.mysql";
import { countRecordsByExpiry, readCensusDrift, type ExpiryInterval } from "@/lib/stats/census";
import { censusCover } from "@/lib/stats/census-store";
import fc from "fast-check";
import { recordCensusSql } from "@/lib/stats/census-store.postgres";
import { recordCensusSql as mysqlRecordCensusSql } from "@/lib/stats/census-store.mysql";
import { rebuildRollups, refreshRollups, repairRecordCensus, verifyRecordCensus } from "@/lib/stats/rollups";
import { createTestDatabase, usingMysql, usingPostgres, type TestDatabase } from "./helpers/db";
import { fillMysqlExplainDataset } from "./helpers/mysql-explain-dataset";

/**
 * The record census (lib/stats/census.ts): records per operation and expiry hour, kept by
 * the rollup refresher and the purge. Checked against the raw table by queries written
 * here: the stored census equals the hand-computed one (every record except those whose
 * reserved event is not rolled up), and countRecordsByExpiry equals a plain count over
 * idempotency_records for random intervals (open, aligned, inside one hour) — before any
 * refresh, after refreshes, with traffic above the watermark, after purges, with writers,
 * refresher and purge running at once, after a rebuild; and verifyRecordCensus finds and
 * repairs what breaks the invariant (deletes behind the console's back, records without a
 * reserved event, a changed expires_at). On MySQL/MariaDB too, with the tests' own SQL in
 * MySQL's spelling where it differs.
 */

const HOUR = 3_600_000;
const DAY = 86_400_000;
const SYSTEM = { type: "system" as const, label: "census test" };
const quiet = { log: () => {}, warn: () => {} };

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
}, 120_000);
afterAll(() => db?.drop());

/** The stored census: "operation hour" → "records / failed records". */
const stored = async (sql: SqlExecutor) =>
  Object.fromEntries(
    (
      await sql.query<{ k: string; n: bigint; f: bigint }>(
        byDialect(sql, {
          postgres: `SELECT operation || ' ' || to_char(expires_hour AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24') AS k, count AS n, failed AS f FROM record_census WHERE count > 0`,
          mysql: `SELECT CONCAT(operation, ' ', DATE_FORMAT(expires_hour, '%Y-%m-%dT%H')) AS k, count AS n, failed AS f FROM record_census WHERE count > 0`,
        }),
      )
    ).map((r) => [r.k, `${Number(r.n)} / ${Number(r.f)}`]),
  );

/**
 * What the census must hold, by hand: every record counted where it is now (and failed or
 * not as it is now), except the records touched since the last refresh (named by an event above
 * the watermark or a gap, above the record high-water mark, or failed less than 15 minutes
 * before the last refresh), which are counted as their member says (or not at all).
 */
const expected = async (sql: SqlExecutor) =>
  Object.fromEntries(
    (
      await sql.query<{ k: string; n: bigint; f: bigint }>(
        `WITH touched AS (
           SELECT e.record_id AS id FROM idempotency_events e
            WHERE e.record_id IS NOT NULL
              AND (e.id > COALESCE((SELECT watermark FROM rollup_state WHERE name = 'events'), 0) OR e.id IN (SELECT event_id FROM rollup_gaps))
           UNION
           SELECT id FROM idempotency_records WHERE id > COALESCE((SELECT watermark FROM rollup_state WHERE name = 'records'), 0)
           UNION
           SELECT id FROM idempotency_records WHERE status = 'failed' AND updated_at > ${byDialect(sql, {
             postgres: `COALESCE((SELECT updated_at FROM rollup_state WHERE name = 'events'), '-infinity') - interval '15 minutes'`,
             mysql: `COALESCE((SELECT updated_at FROM rollup_state WHERE name = 'events') - INTERVAL 15 MINUTE, '1000-01-01')`,
           })}
         )
         ${byDialect(sql, {
           postgres: `SELECT operation || ' ' || to_char(h AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24') AS k, count(*)::bigint AS n, count(*) FILTER (WHERE f)::bigint AS f FROM (
           SELECT r.operation, date_trunc('hour', r.expires_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS h, r.status = 'failed' AS f
             FROM idempotency_records r WHERE r.id NOT IN (SELECT id FROM touched)
           UNION ALL
           SELECT m.operation, m.expires_hour, m.failed FROM record_census_members m WHERE m.record_id IN (SELECT id FROM touched)
         ) x GROUP BY 1`,
           mysql: `SELECT CONCAT(x.operation, ' ', DATE_FORMAT(x.h, '%Y-%m-%dT%H')) AS k, COUNT(*) AS n, SUM(x.f) AS f FROM (
           SELECT r.operation, CAST(DATE_FORMAT(r.expires_at, '%Y-%m-%d %H:00:00') AS DATETIME) AS h, r.status = 'failed' AS f
             FROM idempotency_records r WHERE r.id NOT IN (SELECT id FROM touched)
           UNION ALL
           SELECT m.operation, m.expires_hour, m.failed FROM record_census_members m WHERE m.record_id IN (SELECT id FROM touched)
         ) x GROUP BY k`,
         })}`,
      )
    ).map((r) => [r.k, `${Number(r.n)} / ${Number(r.f)}`]),
  );

function intervals(now: number, seed: number): ExpiryInterval[] {
  const rnd = mulberry32(seed);
  const at = (ms: number) => new Date(Math.round(ms));
  const out: ExpiryInterval[] = [
    { name: "all", from: null, to: null },
    { name: "expired", from: null, to: at(now) },
    { name: "not expired", from: at(now), to: null },
    { name: "next 24 h", from: at(now), to: at(now + DAY) },
    { name: "aligned hours", from: at(Math.floor(now / HOUR) * HOUR - 5 * HOUR), to: at(Math.floor(now / HOUR) * HOUR + 7 * HOUR) },
    { name: "inside one hour", from: at(Math.floor(now / HOUR) * HOUR + 60_000), to: at(Math.floor(now / HOUR) * HOUR + 50 * 60_000) },
    { name: "empty", from: at(now), to: at(now) },
    // Edges read on either side of them (censusCover): late in their hours (the piece up to the next
    // hour added, the piece after the end taken off), early (the piece before the start taken off,
    // the piece before the end added), and short across one hour's end (read as it is).
    {
      name: "edges late in their hours",
      from: at(Math.floor(now / HOUR) * HOUR + 50 * 60_000),
      to: at(Math.floor(now / HOUR) * HOUR + 3 * HOUR + 41 * 60_000),
    },
    {
      name: "edges early in their hours",
      from: at(Math.floor(now / HOUR) * HOUR - 2 * HOUR + 9 * 60_000),
      to: at(Math.floor(now / HOUR) * HOUR + 5 * HOUR + 12 * 60_000),
    },
    { name: "across an hour's end", from: at(Math.floor(now / HOUR) * HOUR + 40 * 60_000), to: at(Math.floor(now / HOUR) * HOUR + 80 * 60_000) },
  ];
  for (let i = 0; i < 12; i++) {
    const a = now + (rnd() - 0.6) * 40 * DAY;
    out.push({ name: `random ${i}`, from: at(a), to: at(a + rnd() * (i % 3 === 0 ? 2 * HOUR : 10 * DAY)) });
  }
  return out;
}

async function raw(sql: SqlExecutor, iv: ExpiryInterval[], operation?: string) {
  const out: Record<string, number> = {};
  for (const i of iv) {
    const rows = await byDialect(sql, {
      postgres: () =>
        sql.query<{ operation: string; n: bigint }>(
          `SELECT operation, count(*)::bigint AS n FROM idempotency_records
        WHERE ($1::timestamptz IS NULL OR expires_at >= $1) AND ($2::timestamptz IS NULL OR expires_at < $2) AND ($3::text IS NULL OR operation = $3)
        GROUP BY 1`,
          [i.from, i.to, operation ?? null],
        ),
      mysql: () =>
        sql.query<{ operation: string; n: bigint }>(
          `SELECT operation, COUNT(*) AS n FROM idempotency_records
        WHERE (? IS NULL OR expires_at >= ?) AND (? IS NULL OR expires_at < ?) AND (? IS NULL OR operation = ?)
        GROUP BY operation`,
          [i.from, i.from, i.to, i.to, operation ?? null, operation ?? null],
        ),
    })();
    for (const r of rows) out[`${i.name} ${r.operation}`] = Number(r.n);
  }
  const failed = await sql.query<{ operation: string; n: bigint }>(
    `SELECT operation, count(*) AS n FROM idempotency_records WHERE status = 'failed'${operation ? ` AND operation = ${sql.dialect.param(1)}` : ""} GROUP BY operation`,
    operation ? [operation] : [],
  );
  for (const r of failed) out[`status:failed ${r.operation}`] = Number(r.n);
  return out;
}

/** The census's counts of `iv` and of the failed records (one statement); with `now`, the edges after it read after them (censusCover). */
async function viaCensus(sql: SqlExecutor, iv: ExpiryInterval[], operation?: string, now?: Date) {
  const rows = await countRecordsByExpiry(sql, iv, { operation, failed: true, now });
  return Object.fromEntries(rows.map((r) => [`${r.name} ${r.operation}`, r.count]));
}

async function expectExact(label: string, seed = 1) {
  expect(await stored(db.sql), `${label}: stored census`).toEqual(await expected(db.sql));
  const now = new Date();
  const iv = intervals(now.getTime(), seed);
  const all = await raw(db.sql, iv);
  expect(await viaCensus(db.sql, iv, undefined, now), `${label}: counts`).toEqual(all);
  expect(await viaCensus(db.sql, iv), `${label}: counts, every edge on its shorter side`).toEqual(all);
  expect(await viaCensus(db.sql, iv, "capture_payment", now), `${label}: counts, one operation`).toEqual(await raw(db.sql, iv, "capture_payment"));
}

const policies = () =>
  db.sql.exec(`INSERT INTO retention_policies (operation, keep_records_days, keep_events_days, enabled, updated_by_label)
               VALUES (NULL, 1, 1000, true, 'census test') ${byDialect(db, { postgres: "ON CONFLICT DO NOTHING", mysql: "ON DUPLICATE KEY UPDATE id = id" })}`);

/** Deletes the record `where` picks (one id) and answers its columns: PostgreSQL's DELETE … RETURNING, or a read then a delete by id. */
async function deleteRecord<T>(where: string, columns: string): Promise<T> {
  return byDialect(db, {
    postgres: async () => (await db.sql.query<T>(`DELETE FROM idempotency_records WHERE id = (${where}) RETURNING ${columns}`))[0],
    mysql: async () => {
      const [row] = await db.sql.query<T>(`SELECT id AS "deleteId", ${columns} FROM idempotency_records WHERE id = (${where})`);
      const { deleteId, ...rest } = row as T & { deleteId: bigint };
      await db.sql.query(`DELETE FROM idempotency_records WHERE id = ?`, [deleteId]);
      return rest as T;
    },
  })();
}

/** A time `sql` (PostgreSQL's spelling: now() ± interval '…') in the database's dialect. */
const sqlNow = (pg: string, mysql: string) => byDialect(db, { postgres: pg, mysql });

async function purge(reason: string, batchSize = 7) {
  const run = await startPurge(db.prisma, SYSTEM, { reason, batchSize, pauseMs: 0 }, { workerId: "census", leaseSeconds: 60, requireConfirmation: false });
  const out = await workRun(db, run.id, { workerId: "census", log: quiet });
  expect(out.outcome).toBe("finished");
  return Number(out.run!.recordsDeleted);
}

describe("record census (lib/stats/census.ts)", () => {
  it("is exact before any refresh, after refreshes, with traffic above the watermark and a partial refresh", async () => {
    await generateDemoTraffic(db, { seed: 11, requests: 300, days: 30 });
    const [{ n }] = await db.sql.query<{ n: bigint }>(`SELECT count(*) AS n FROM record_census`);
    expect(n).toBe(0n); // nothing rolled up: every record is counted raw
    await expectExact("before any refresh", 1);
    await db.withSession((s) => refreshRollups(s));
    expect(Object.keys(await stored(db.sql)).length).toBeGreaterThan(10);
    await expectExact("refreshed", 2);
    await generateDemoTraffic(db, { seed: 12, requests: 120, days: 3 });
    await expectExact("above the watermark", 3);
    await db.withSession((s) => refreshRollups(s, { batchSize: 50 }));
    await expectExact("partially refreshed", 4);
    expect(await db.withSession((s) => verifyRecordCensus(s))).toEqual([]);
  }, 240_000);

  it("a purge takes out exactly the counted records it deletes, in its own transaction (some not counted yet)", async () => {
    await policies();
    // Two expired records in the same operation and expiry hour: A counted (and kept by a
    // legal hold), B not counted yet (its reserved event above the watermark) — the purge
    // deletes B and must leave A's hour alone.
    const clock = new Date(Date.now() - 40 * DAY);
    const old = new IdempotencyStore(db.prisma, { clock: () => clock });
    const reserve = async (key: string) => {
      const r = await old.begin({ scope: "tenant:census-hold", operation: "create_order", key, payload: { key }, ttlSeconds: 3600 });
      if (r.outcome !== "owner") throw new Error("expected to own the key");
      return old.complete(r.record.id, { code: 201, headers: [], body: "{}" });
    };
    const a = await reserve("census-a");
    await db.sql.query(`UPDATE idempotency_records SET legal_hold = true WHERE id = ${db.dialect.param(1)}`, [a.id]);
    await db.withSession((s) => refreshRollups(s));
    const b = await reserve("census-b");
    // New expired records whose reserved events are not rolled up: purged before the census ever counts them.
    await generateDemoTraffic(db, { seed: 13, requests: 80, days: 20, now: new Date(Date.now() - 25 * DAY) });
    const [{ n: unrolled }] = await db.sql.query<{ n: bigint }>(
      `SELECT count(*) AS n FROM idempotency_events e JOIN idempotency_records r ON r.id = e.record_id
        WHERE e.kind = 'reserved' AND e.id > (SELECT watermark FROM rollup_state WHERE name = 'events') AND r.expires_at < ${sqlNow("now() - interval '1 day'", "UTC_TIMESTAMP(6) - INTERVAL 1 DAY")}`,
    );
    expect(Number(unrolled)).toBeGreaterThan(0);
    const before = await db.sql.query<{ n: bigint }>(`SELECT count(*) AS n FROM idempotency_records`);
    const deleted = await purge("census: purge with uncounted records");
    expect(deleted).toBeGreaterThan(0);
    const after = await db.sql.query<{ n: bigint }>(`SELECT count(*) AS n FROM idempotency_records`);
    expect(Number(before[0].n) - Number(after[0].n)).toBe(deleted);
    const left = await byDialect(db, {
      postgres: () => db.sql.query<{ id: bigint }>(`SELECT id FROM idempotency_records WHERE id = ANY($1::bigint[])`, [[a.id, b.id]]),
      mysql: () => db.sql.query<{ id: bigint }>(`SELECT id FROM idempotency_records WHERE id IN (?, ?)`, [a.id, b.id]),
    })();
    expect(left.map((r) => r.id)).toEqual([a.id]);
    await expectExact("after a purge", 5);
    await db.withSession((s) => refreshRollups(s));
    await expectExact("after a purge, refreshed", 6);
    expect(await db.withSession((s) => verifyRecordCensus(s))).toEqual([]);
  }, 240_000);

  it("writers, the refresher, a purge and census checks at once: exact afterwards, and never any drift", async () => {
    let writing = true;
    let written = 0;
    // Writers reserve and complete records that are already expired (purge-eligible) and fresh ones.
    const writer = async (lane: number) => {
      const rnd = mulberry32(100 + lane);
      for (let i = 0; writing && i < 400; i++) {
        const past = rnd() < 0.5;
        const clock = past ? new Date(Date.now() - (3 + rnd() * 20) * DAY) : new Date();
        const s = new IdempotencyStore(db.prisma, { clock: () => clock });
        const r = await s.begin({
          scope: `tenant:race${lane}`,
          operation: rnd() < 0.5 ? "capture_payment" : "create_order",
          key: `race-${lane}-${i}`,
          payload: { i, lane },
          ttlSeconds: Math.floor(600 + rnd() * 2 * 86400),
        });
        if (r.outcome === "owner") await s.complete(r.record.id, { code: 201, headers: [], body: "{}" });
        written++;
      }
    };
    const refresher = async () => {
      while (writing) {
        await db.withSession((s) => refreshRollups(s, { batchSize: 25 }));
        await new Promise((r) => setTimeout(r, 5));
      }
    };
    const purges = async () => {
      let deleted = 0;
      for (let i = 0; i < 4; i++) {
        await new Promise((r) => setTimeout(r, 150));
        deleted += await purge(`census: purge during writes ${i}`, 5);
      }
      return deleted;
    };
    // verifyRecordCensus reads its snapshot without the lock, while all of the above goes on:
    // refreshes and purges in flight must never look like drift.
    const verifies: number[] = [];
    const verifier = async () => {
      while (writing) {
        const drift = await db.withSession((s) => verifyRecordCensus(s));
        verifies.push(drift.length);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    const lanes = usingPostgres ? 4 : 2;
    const work = Promise.all(Array.from({ length: lanes }, (_, l) => writer(l)));
    const loop = refresher();
    const checks = verifier();
    const deleted = await purges();
    await work;
    writing = false;
    await Promise.all([loop, checks]);
    expect(verifies.length).toBeGreaterThan(2);
    expect(verifies.filter((n) => n > 0)).toEqual([]);
    expect(written).toBeGreaterThan(100);
    expect(deleted).toBeGreaterThan(0);
    await expectExact("after the race, before the last refresh", 7);
    await db.withSession((s) => refreshRollups(s));
    await expectExact("after the race", 8);
    expect(await db.withSession((s) => verifyRecordCensus(s))).toEqual([]);
  }, 300_000);

  it("a record inserted without a reserved event is counted at once; a delete or a moved expiry without any event is drift the check repairs", async () => {
    await db.withSession((s) => refreshRollups(s, { sweepRecords: 0 }));
    // Inserted without a reserved event: above the record high-water mark, so counted exactly
    // before any refresh (and by the next one), never drift.
    await db.sql.query(
      byDialect(db, {
        postgres: `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, created_at, updated_at, expires_at)
       VALUES ('tenant:rogue', 'create_order', 'rogue-1', $1, 'completed', now(), now(), '2030-01-01T00:30:00Z')`,
        mysql: `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, created_at, updated_at, expires_at)
       VALUES ('tenant:rogue', 'create_order', 'rogue-1', ?, 'completed', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), '2030-01-01 00:30:00')`,
      }),
      ["b".repeat(64)],
    );
    await expectExact("a record without a reserved event, before a refresh", 12);
    // Deleted behind the console's back and expires_at moved, neither with an event.
    const gone = await deleteRecord<{ operation: string; expires_at: Date }>(
      `SELECT min(id) FROM idempotency_records WHERE status = 'completed' AND NOT legal_hold`,
      "operation, expires_at",
    );
    const [moved] = await db.sql.query<{ id: bigint; operation: string; expires_at: Date }>(
      `SELECT id, operation, expires_at FROM idempotency_records WHERE id = (SELECT max(id) FROM idempotency_records WHERE scope LIKE 'tenant:race%')`,
    );
    await db.sql.query(
      byDialect(db, {
        postgres: `UPDATE idempotency_records SET expires_at = '2031-06-01T10:15:00Z' WHERE id = $1`,
        mysql: `UPDATE idempotency_records SET expires_at = '2031-06-01 10:15:00' WHERE id = ?`,
      }),
      [moved.id],
    );
    const drift = await db.withSession((s) => verifyRecordCensus(s));
    const hour = (d: Date) => new Date(Math.floor(d.getTime() / HOUR) * HOUR).toISOString();
    expect(drift.map((d) => `${d.operation} ${d.expiresHour.toISOString()} ${d.should - d.had}`)).toEqual(
      expect.arrayContaining([`${gone.operation} ${hour(gone.expires_at)} -1`, `${moved.operation} 2031-06-01T10:00:00.000Z 1`]),
    );
    // The hour the moved record left lost one (unless it is the deleted record's hour too); the rogue record is no drift.
    const net = drift.reduce((n, d) => n + d.should - d.had, 0);
    expect(net).toBe(-1); // −1 deleted, ±0 moved
    expect(drift.length).toBeLessThanOrEqual(3);
    expect(drift.some((d) => d.expiresHour.toISOString() === "2030-01-01T00:00:00.000Z")).toBe(false);
    expect(hour(moved.expires_at)).not.toBe("2031-06-01T10:00:00.000Z");
    await expectExact("repaired", 9);
    expect(await db.withSession((s) => verifyRecordCensus(s))).toEqual([]);
    // What the check found is reported as departures from the protocol.
    const departures = await db.sql.query<{ kind: string; records: bigint }>(`SELECT kind, records FROM census_departures ORDER BY kind`);
    expect(departures.map((d) => d.kind)).toEqual(expect.arrayContaining(["deleted_outside", "expires_moved"]));
  }, 120_000);

  it("the sweep finds what writers did without any event (a delete, a moved expiry) round the table, repairs it and reports it", async () => {
    await db.withSession((s) => refreshRollups(s, { sweepRecords: 0 }));
    await db.sql.exec(`DELETE FROM census_departures`);
    const gone = await deleteRecord<{ id: bigint }>(`SELECT max(id) FROM idempotency_records WHERE status = 'completed' AND NOT legal_hold`, "id");
    // (MySQL cannot name the updated table in a subquery: the id is read first there.)
    const [{ first }] = await db.sql.query<{ first: bigint }>(`SELECT min(id) AS first FROM idempotency_records`);
    await db.sql.query(
      `UPDATE idempotency_records SET expires_at = expires_at + ${sqlNow("interval '5 days'", "INTERVAL 5 DAY")} WHERE id = ${db.dialect.param(1)}`,
      [first],
    );
    expect(await stored(db.sql)).not.toEqual(await expected(db.sql));
    // Small slices: several refreshes go round the table once.
    const [{ n }] = await db.sql.query<{ n: bigint }>(`SELECT count(*) AS n FROM idempotency_records`);
    const slice = 40;
    for (let i = 0; i <= Number(n) / slice + 1; i++) await db.withSession((s) => refreshRollups(s, { sweepRecords: slice }));
    expect(await stored(db.sql)).toEqual(await expected(db.sql));
    await expectExact("after the sweep", 13);
    const departures = Object.fromEntries(
      (await db.sql.query<{ kind: string; records: bigint }>(`SELECT kind, records FROM census_departures`)).map((d) => [d.kind, Number(d.records)]),
    );
    expect(departures).toEqual({ deleted_outside: 1, expires_moved: 1 });
    expect(await db.withSession((s) => verifyRecordCensus(s))).toEqual([]);
    expect((await db.sql.query(`SELECT 1 FROM record_census_members WHERE record_id = ${db.dialect.param(1)}`, [gone.id])).length).toBe(0);
  }, 120_000);

  it("a record that fails apart from its event (the event first, or the status first) is counted failed at every moment; a failure with neither an event nor a fresh updated_at is the sweep's", async () => {
    await db.withSession((s) => refreshRollups(s, { sweepRecords: 0 }));
    await db.sql.exec(`DELETE FROM census_departures`);
    const P = (i: number) => db.dialect.param(i);
    const now = sqlNow("now()", "UTC_TIMESTAMP(6)");
    const event = (id: bigint, key: string, kind: string) =>
      db.sql.query(
        `INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind) VALUES (${P(1)}, 'tenant:fails', 'capture_payment', ${P(2)}, '${kind}')`,
        [id, key],
      );
    // A service's writes, each its own statement (autocommit): the record, then its events.
    const reserve = async (key: string) => {
      await db.sql.query(
        `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, created_at, updated_at, expires_at)
         VALUES ('tenant:fails', 'capture_payment', ${P(1)}, ${P(2)}, 'processing', ${now}, ${now}, ${sqlNow("now() + interval '2 days'", "UTC_TIMESTAMP(6) + INTERVAL 2 DAY")})`,
        [key, "c".repeat(64)],
      );
      const [{ id }] = await db.sql.query<{ id: bigint }>(`SELECT id FROM idempotency_records WHERE scope = 'tenant:fails' AND idempotency_key = ${P(1)}`, [
        key,
      ]);
      await event(BigInt(id), key, "reserved");
      return BigInt(id);
    };
    const fail = (id: bigint, updatedAt = now) =>
      db.sql.query(`UPDATE idempotency_records SET status = 'failed', response_code = 402, updated_at = ${updatedAt} WHERE id = ${P(1)}`, [id]);
    const member = async (id: bigint) =>
      (await db.sql.query<{ f: unknown }>(`SELECT failed AS f FROM record_census_members WHERE record_id = ${P(1)}`, [id])).map(
        (r) => r.f === true || Number(r.f) === 1,
      )[0];
    const refresh = () => db.withSession((s) => refreshRollups(s, { sweepRecords: 0 }));

    // The `failed` event first: the refresh rolls it up while the record is still processing.
    const a = await reserve("fails-a");
    await event(a, "fails-a", "failed");
    await refresh();
    expect(await member(a)).toBe(false);
    await fail(a);
    await expectExact("failed after its event was rolled up", 21);
    await refresh();
    expect(await member(a)).toBe(true);
    await expectExact("failed after its event, refreshed", 22);

    // The status first, its event later: counted before the event, and by the refresh in between.
    const b = await reserve("fails-b");
    await refresh();
    await fail(b);
    await expectExact("failed, its event not written yet", 23);
    await refresh();
    expect(await member(b)).toBe(true);
    await event(b, "fails-b", "failed");
    await expectExact("failed, then its event", 24);
    await refresh();

    // Failed, then completed on a retry (with its event): out of the failed count at once.
    await db.sql.query(`UPDATE idempotency_records SET status = 'completed', response_code = 201, updated_at = ${now} WHERE id = ${P(1)}`, [b]);
    await event(b, "fails-b", "completed");
    await expectExact("no longer failed", 25);
    await refresh();
    expect(await member(b)).toBe(false);

    // Failed with neither an event nor a fresh updated_at: invisible to the refresh; the sweep
    // finds it, repairs it and reports it.
    const c = await reserve("fails-c");
    await refresh();
    await fail(c, sqlNow("now() - interval '2 hours'", "UTC_TIMESTAMP(6) - INTERVAL 2 HOUR"));
    expect(await stored(db.sql)).not.toEqual(await expected(db.sql));
    const [{ n }] = await db.sql.query<{ n: bigint }>(`SELECT count(*) AS n FROM idempotency_records`);
    for (let i = 0; i <= Number(n) / 200 + 1; i++) await db.withSession((s) => refreshRollups(s, { sweepRecords: 200 }));
    expect(await member(c)).toBe(true);
    await expectExact("a failure without an event, after the sweep", 26);
    const departures = Object.fromEntries(
      (await db.sql.query<{ kind: string; records: bigint }>(`SELECT kind, records FROM census_departures`)).map((d) => [d.kind, Number(d.records)]),
    );
    expect(departures).toEqual({ failed_unseen: 1 });
    expect(await db.withSession((s) => verifyRecordCensus(s))).toEqual([]);
  }, 120_000);

  it("the check finds and repairs a failed count that is off, and says by how much", async () => {
    await db.withSession((s) => refreshRollups(s, { sweepRecords: 0 }));
    const [rec] = await db.sql.query<{ id: bigint; operation: string; expires_at: Date }>(
      `SELECT id, operation, expires_at FROM idempotency_records WHERE status = 'completed' ORDER BY id LIMIT 1`,
    );
    await db.sql.query(
      `UPDATE idempotency_records SET status = 'failed', updated_at = ${sqlNow("now() - interval '1 day'", "UTC_TIMESTAMP(6) - INTERVAL 1 DAY")} WHERE id = ${db.dialect.param(1)}`,
      [rec.id],
    );
    const drift = await db.withSession((s) => verifyRecordCensus(s));
    const hour = new Date(Math.floor(rec.expires_at.getTime() / HOUR) * HOUR);
    expect(drift).toEqual([expect.objectContaining({ operation: rec.operation, expiresHour: hour, shouldFailed: expect.any(Number) })]);
    expect([drift[0].should - drift[0].had, drift[0].shouldFailed - drift[0].hadFailed]).toEqual([0, 1]);
    await expectExact("the failed count repaired", 27);
    expect(await db.withSession((s) => verifyRecordCensus(s))).toEqual([]);
  });

  it("a repair applies what it read record by record: a refresh between the check's snapshot and its repair is kept", async () => {
    await db.withSession((s) => refreshRollups(s, { sweepRecords: 0 }));
    // Drift in one operation-hour (a record deleted behind the console's back)…
    const gone = await deleteRecord<{ operation: string; expires_at: Date; created_at: Date }>(
      `SELECT max(id) FROM idempotency_records WHERE status = 'completed' AND NOT legal_hold AND expires_at BETWEEN ${sqlNow(
        "now() + interval '2 hours' AND now() + interval '20 days'",
        "UTC_TIMESTAMP(6) + INTERVAL 2 HOUR AND UTC_TIMESTAMP(6) + INTERVAL 20 DAY",
      )}`,
      "operation, expires_at, created_at",
    );
    const check = await db.withSession(async (s) => {
      await s.exec(s.dialect.snapshot); // PostgreSQL's: BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY
      try {
        return await readCensusDrift(s);
      } finally {
        await s.exec("COMMIT");
      }
    });
    const hour = new Date(Math.floor(gone.expires_at.getTime() / HOUR) * HOUR);
    expect(check.drift.map((d) => [d.operation, d.expiresHour.toISOString(), d.should - d.had])).toEqual([[gone.operation, hour.toISOString(), -1]]);
    // …then, before the repair, a new record in the same operation-hour is reserved and rolled up.
    const ttl = Math.round((hour.getTime() + 30 * 60_000 - Date.now()) / 1000);
    const r = await new IdempotencyStore(db.prisma).begin({
      scope: "tenant:census-repair",
      operation: gone.operation,
      key: "repair-1",
      payload: { x: 1 },
      ttlSeconds: ttl,
    });
    expect(Math.floor(r.record.expiresAt.getTime() / HOUR) * HOUR).toBe(hour.getTime());
    await db.withSession((s) => refreshRollups(s, { sweepRecords: 0 }));
    await db.withSession((s) => repairRecordCensus(s, check));
    await expectExact("repaired after a refresh in between", 11);
  });

  it("a rebuild recounts it, including records whose reserved events were purged", async () => {
    // Reserved events gone (an events purge), records still there: they stay counted.
    await db.sql.exec(
      byDialect(db, {
        postgres: `DELETE FROM idempotency_events WHERE id IN (SELECT id FROM idempotency_events WHERE kind = 'reserved' ORDER BY id LIMIT 30)`,
        mysql: `DELETE FROM idempotency_events WHERE kind = 'reserved' ORDER BY id LIMIT 30`,
      }),
    );
    const before = await stored(db.sql);
    await db.withSession((s) => rebuildRollups(s, { batchSize: 500 }));
    expect(await stored(db.sql)).toEqual(before);
    await expectExact("rebuilt", 10);
    expect(await db.withSession((s) => verifyRecordCensus(s))).toEqual([]);
  }, 120_000);

  // The previous version's flag is PostgreSQL's (set_config); MySQL's counterpart follows.
  it.skipIf(usingMysql)("the old refresh (flag of the previous version) is refused on the census", async () => {
    await expect(db.sql.query(`INSERT INTO record_census (operation, expires_hour, count) VALUES ('x', '2030-01-01T00:00:00Z', 1)`)).rejects.toThrow(
      /upgrade the console/,
    );
    await expect(
      db.withSession(async (s) => {
        await s.exec("BEGIN");
        try {
          await s.query(`SELECT set_config('idempotency_console.rollup_writer', 'failed', true)`);
          await s.query(`INSERT INTO event_rollups (bucket, operation, scope, kind, count) VALUES (date_trunc('minute', now()), 'x', 'y', 'reserved', 1)`);
        } finally {
          await s.exec("ROLLBACK");
        }
      }),
    ).rejects.toThrow(/upgrade the console/);
  });

  it.skipIf(!usingMysql)("MySQL: the census and the rollups refuse writers without the rollup writers' flag, or with another value", async () => {
    await expect(db.sql.query(`INSERT INTO record_census (operation, expires_hour, count) VALUES ('x', '2030-01-01 00:00:00', 1)`)).rejects.toThrow(
      /upgrade the console/,
    );
    await expect(
      db.withSession(async (s) => {
        await s.exec("SET @idempotency_console_rollup_writer = 'failed'");
        try {
          await s.query(`INSERT INTO event_rollups (bucket, operation, scope, kind, count) VALUES ('2030-01-01 00:00:00', 'x', 'y', 'reserved', 1)`);
        } finally {
          await s.exec("SET @idempotency_console_rollup_writer = NULL");
        }
      }),
    ).rejects.toThrow(/upgrade the console/);
  });

  it.skipIf(!usingMysql)(
    "MySQL: reads the census and index ranges, never a whole services' table; small statuses from the index alone (EXPLAIN, 40k records)",
    async () => {
      // Its own database of a size where the optimizer has to choose, analyzed: on this file's few
      // hundred records (or before InnoDB recalculates its statistics) reading a whole index is
      // the right plan, and CI once saw it.
      const own = await createTestDatabase();
      try {
        const now = new Date();
        await fillMysqlExplainDataset(own.sql, now);
        await own.withSession((s) => refreshRollups(s));
        // And the gaps a bulk INSERT … SELECT leaves (ids reserved, never used; they close after
        // the grace): 20,000 of them, which make MariaDB expect a large touched set.
        await own.sql.query(`INSERT INTO rollup_gaps (event_id) SELECT id + 10000000 FROM idempotency_events WHERE id <= 20000`);
        await own.sql.query(`ANALYZE TABLE idempotency_records, idempotency_events, record_census, record_census_members, rollup_gaps, rollup_state`);
        await explainCensus(own, now);
      } finally {
        await own.drop();
      }
    },
    300_000,
  );

  async function explainCensus(own: TestDatabase, now: Date) {
    type Plan = { table: string; type: string; key: string | null; Extra: string | null };
    const explain = (q: { text: string; values: unknown[] }) => own.sql.query<Plan>(`EXPLAIN ${q.text}`, q.values);
    // The services' tables are aliased e and r in the statement, the census's members m: never
    // read whole (the touched ids drive the correction's joins). The partial hours at the edges
    // are ranges of (operation, expires_at): with an operation filter, a range of it; without,
    // a range per operation and edge ("Range checked for each record": ALL in the type column,
    // each row's range chosen at run time), the operations by a loose scan of that index.
    const RANGE_PER_ROW = /Range checked for each record/;
    for (const f of [{}, { operation: "capture_payment" }]) {
      const plan = await explain(mysqlRecordCensusSql(intervals(now.getTime(), 12).slice(0, 4), { ...f, failed: true }));
      const where = JSON.stringify(plan.map((r) => `${r.table} ${r.type} ${r.key} ${r.Extra}`));
      expect(
        plan.filter((r) => ["e", "r", "m", "ops"].includes(r.table) && ["ALL", "index"].includes(r.type) && !RANGE_PER_ROW.test(r.Extra ?? "")),
        where,
      ).toEqual([]);
      expect(
        plan.some((r) => r.table === "c"),
        where,
      ).toBe(true); // record_census
      // The edges' reads: of an expires_at index, or chosen per row (the correction reads r by primary key).
      const edges = plan.filter((r) => r.table === "r" && (/expires_at/.test(r.key ?? "") || RANGE_PER_ROW.test(r.Extra ?? "")));
      expect(edges.length, where).toBeGreaterThan(0);
      if ("operation" in f) {
        expect(
          edges.every((r) => r.key === "idempotency_records_operation_expires_at_idx"),
          where,
        ).toBe(true);
      } else {
        expect(
          edges.every((r) => RANGE_PER_ROW.test(r.Extra ?? "")),
          where,
        ).toBe(true);
        expect(
          plan.some((r) => r.table === "ops" && r.key === "idempotency_records_operation_expires_at_idx" && /Using index for group-by/.test(r.Extra ?? "")),
          where,
        ).toBe(true);
      }
      // The records that became failed lately: a range of (status, updated_at), not every failed record.
      expect(
        plan.some((r) => r.table === "r" && r.type === "range" && r.key === "idempotency_records_status_updated_at_idx"),
        where,
      ).toBe(true);
    }
    for (const q2 of [mysqlStats.activeByOperationSql({ operation: "capture_payment" }, readSideConfig().stuck, now)]) {
      const p2 = await explain(q2);
      expect(
        p2.every((r) => r.key === "idempotency_records_unsettled_status_idx" && /Using index/.test(r.Extra ?? "")),
        JSON.stringify(p2.map((r) => `${r.table} ${r.type} ${r.key} ${r.Extra}`)),
      ).toBe(true);
    }
  }

  it.skipIf(!usingPostgres)("reads the census and index ranges, never a whole table; small statuses index-only (EXPLAIN on Postgres)", async () => {
    const now = new Date();
    const q = recordCensusSql(intervals(now.getTime(), 12).slice(0, 4), { failed: true });
    await db.withSession(async (s) => {
      await s.exec("BEGIN");
      try {
        // As in a table of many days: failed records of earlier days many, recent ones few (rolled back after).
        await s.exec(`INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, updated_at, expires_at)
                      SELECT 'tenant:explain', 'capture_payment', 'old-failed-' || g, 'h', 'failed', now() - interval '2 days', now() + interval '1 day'
                        FROM generate_series(1, 400) g;
                      UPDATE idempotency_records SET updated_at = updated_at - interval '3 days';
                      ANALYZE idempotency_records;`);
        await s.exec("SET LOCAL enable_seqscan = off");
        const plan = (await s.query<{ "QUERY PLAN": string }>(`EXPLAIN ${q.text}`, q.values)).map((r) => r["QUERY PLAN"]).join("\n");
        expect(plan).not.toMatch(/Seq Scan on idempotency_(records|events)/);
        expect(plan).toMatch(/record_census/);
        expect(plan).toMatch(/idempotency_records_operation_expires_at_idx/);
        // The records that became failed lately: a range of (status, updated_at), planned as the few
        // rows it is (a bound the planner cannot see is taken as a third of the failed records, which
        // at 10M made it read every failed entry of the unsettled index instead).
        const recent = [
          ...plan.matchAll(
            /Scan (?:on|using) (idempotency_records_\w+)[^\n]*rows=(\d+)[^\n]*\n\s+Index Cond: \(\(status = 'failed'::text\) AND \(updated_at > /g,
          ),
        ];
        const [{ n: failed }] = await s.query<{ n: bigint }>(`SELECT count(*) AS n FROM idempotency_records WHERE status = 'failed'`);
        expect(recent.length, plan).toBeGreaterThan(0);
        for (const [, index, rows] of recent)
          expect([index, Number(rows) < Number(failed) / 10], plan).toEqual(["idempotency_records_status_updated_at_idx", true]);
        // The small statuses, per operation too, from the partial unsettled-status index alone.
        await s.exec("SET LOCAL enable_bitmapscan = off");
        for (const q2 of [activeByOperationSql({ operation: "capture_payment" }, readSideConfig().stuck, now)]) {
          const p2 = (await s.query<{ "QUERY PLAN": string }>(`EXPLAIN ${q2.text}`, q2.values)).map((r) => r["QUERY PLAN"]).join("\n");
          expect(p2).toMatch(/Index Only Scan using idempotency_records_unsettled_status_idx/);
          expect(p2).not.toMatch(/Seq Scan on idempotency_records|Heap Scan on idempotency_records|Index Scan/);
        }
      } finally {
        await s.exec("ROLLBACK");
      }
    });
  });
});

describe("censusCover (how an interval is read: the census's whole hours and pieces of hours)", () => {
  it("adds up to the interval at every instant, with whole hours on the hour and each piece at most an hour (half of one before now), or the short interval itself", () => {
    const time = fc.integer({ min: 0, max: 10 * DAY }).map((ms) => Date.UTC(2026, 11, 1) + ms);
    const end = fc.oneof({ weight: 1, arbitrary: fc.constant(NaN) }, { weight: 6, arbitrary: time });
    fc.assert(
      fc.property(end, end, end, fc.array(time, { maxLength: 30 }), (a, b, now, probes) => {
        const lo = Number.isNaN(a) ? -Infinity : a;
        const hi = Number.isNaN(b) ? Infinity : b;
        fc.pre(lo < hi);
        const { whole, pieces } = censusCover(lo, hi, now);
        const inside = (t: number, x: number, y: number) => (x <= t && t < y ? 1 : 0);
        for (const t of [...probes, ...[lo, hi].filter(Number.isFinite), ...pieces.flatMap((p) => [p.lo, p.hi, p.lo - 1, p.hi - 1])]) {
          const counted = (whole ? inside(t, whole.lo, whole.hi) : 0) + pieces.reduce((n, p) => n + p.sign * inside(t, p.lo, p.hi), 0);
          expect(counted, `t=${new Date(t).toISOString()}`).toBe(inside(t, lo, hi));
        }
        if (whole) {
          for (const e of [whole.lo, whole.hi]) if (Number.isFinite(e)) expect(e % HOUR).toBe(0);
          for (const p of pieces) {
            expect(p.hi - p.lo).toBeLessThan(HOUR);
            const edge = p.lo === lo || p.hi === lo ? lo : hi; // the interval's edge the piece runs from
            if (!(edge > now)) expect(p.hi - p.lo).toBeLessThanOrEqual(HOUR / 2);
            else expect(p.lo, "after now: the piece after the edge").toBe(edge);
          }
        } else {
          expect(pieces).toEqual([{ lo, hi, sign: 1 }]);
          expect(hi - lo).toBeLessThanOrEqual(HOUR);
        }
      }),
      { numRuns: 3000 },
    );
  });

  it("reads each edge on its shorter side — 10 minutes past the hour from the hour, 50 past towards the next — and an edge after now after it", () => {
    const h = Date.UTC(2026, 11, 2, 10);
    const min = 60_000;
    expect(censusCover(h + 10 * min, h + 5 * HOUR + 50 * min)).toEqual({
      whole: { lo: h, hi: h + 6 * HOUR },
      pieces: [
        { lo: h, hi: h + 10 * min, sign: -1 },
        { lo: h + 5 * HOUR + 50 * min, hi: h + 6 * HOUR, sign: -1 },
      ],
    });
    expect(censusCover(h + 50 * min, h + 5 * HOUR + 10 * min)).toEqual({
      whole: { lo: h + HOUR, hi: h + 5 * HOUR },
      pieces: [
        { lo: h + 50 * min, hi: h + HOUR, sign: 1 },
        { lo: h + 5 * HOUR, hi: h + 5 * HOUR + 10 * min, sign: 1 },
      ],
    });
    // now + 24 h, 10 minutes past the hour: the 50 minutes after it taken off, not the 10 before it added.
    const now = h + 10 * min;
    expect(censusCover(now, now + DAY, now)).toEqual({
      whole: { lo: h, hi: h + DAY + HOUR },
      pieces: [
        { lo: h, hi: now, sign: -1 },
        { lo: now + DAY, hi: h + DAY + HOUR, sign: -1 },
      ],
    });
  });

  it("reads a piece shared by several intervals once, on both dialects (the overview's now: expired, the next 24 h, today)", () => {
    const h = Date.UTC(2026, 11, 2, 10);
    const now = h + 10 * 60_000; // every interval's piece at now is [h, now): added to some, taken off others
    const ivs: ExpiryInterval[] = [
      { name: "expired", from: null, to: new Date(now) },
      { name: "next24h", from: new Date(now), to: new Date(now + DAY) },
      { name: "today", from: new Date(h - 10 * HOUR), to: new Date(now) },
      { name: "failedNext24h", from: new Date(now), to: new Date(now + DAY), failed: true },
    ];
    // Each read of a piece binds its edge once; the whole hours bind hours, never now.
    const readsOfNow = (q: { values: unknown[] }) => q.values.filter((v) => v instanceof Date && v.getTime() === now).length;
    for (const f of [{ now: new Date(now) }, { now: new Date(now), operation: "capture_payment" }]) {
      expect(readsOfNow(recordCensusSql(ivs, f)), "PostgreSQL").toBe(2); // all records once, the failed once
      expect(readsOfNow(mysqlRecordCensusSql(ivs, f)), "MySQL").toBe(2);
    }
  });
});
