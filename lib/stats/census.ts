import type { SqlExecutor } from "../db/sql";
import { paramList } from "../records/row";

/**
 * The record census: how many records there are per operation and expiry hour
 * (record_census), kept by the rollup refresher from the same event watermark as the
 * event rollups (lib/stats/rollups.ts) — no trigger on the services' tables (ADR 0007).
 *
 * The invariant, at any moment and in any snapshot:
 *   records = census + uncounted,
 *   uncounted = the records whose `reserved` event is not rolled up yet (id above the
 *               watermark, or a gap).
 * It holds because
 * - a record and its `reserved` event are written by one statement (the protocol), so a
 *   refresh that rolls the event up finds the record (or finds it already purged — then
 *   it was never counted, see below) and adds it to its (operation, expiry hour);
 * - the console's purge deletes records under the refresher's lock and takes from the
 *   census exactly the deleted records that were counted (`purgeCensusSql`);
 * - nothing else deletes records, and expires_at is set at the reservation. A record
 *   inserted without a `reserved` event, deleted by something else, or an event that
 *   committed after its gap was given up (GAP_GRACE) breaks it: `verifyRecordCensus`
 *   recounts in one snapshot, repairs, and reports the drift.
 *
 * Reading (recordCensusSql): per interval of expires_at, the census's whole hours + the
 * records in the partial hours at the interval's edges (index ranges of (operation,
 * expires_at), < 1 hour each) + the uncounted records in the whole hours. Without a
 * scope the overview's record totals, expired-not-purged, expiring and forecast read
 * a few thousand census rows instead of every record (the scope has no census: a
 * scope's records are read from its index, see lib/stats/overview.ts).
 */

const HOUR_MS = 3_600_000;
const EPOCH = `timestamptz '1970-01-01 00:00:00+00'`;
export const CENSUS_HOUR_SQL = (column: string) => `date_bin(interval '1 hour', ${column}, ${EPOCH})`;

/** The reserved events the rollups do not hold yet (above the watermark or a gap), as a condition on `e`. */
const UNROLLED = (e: string) =>
  `${e}.kind = 'reserved' AND (${e}.id > (SELECT COALESCE(max(s.watermark), 0) FROM rollup_state s WHERE s.name = 'events')
     OR ${e}.id IN (SELECT g.event_id FROM rollup_gaps g))`;

/**
 * The records not counted yet: those of the reserved events not rolled up, as record_id —
 * two index ranges (not one OR): above the watermark, and the gaps (each gap probed by
 * primary key; OFFSET 0 keeps the planner from scanning the events for them).
 */
const uncountedIdsSql = (opFilter = "") => `SELECT e.record_id FROM idempotency_events e
     WHERE e.kind = 'reserved' AND e.record_id IS NOT NULL
       AND e.id > (SELECT COALESCE(max(s.watermark), 0) FROM rollup_state s WHERE s.name = 'events')${opFilter}
    UNION ALL
    SELECT e.record_id FROM rollup_gaps g
     CROSS JOIN LATERAL (SELECT e.kind, e.operation, e.record_id FROM idempotency_events e WHERE e.id = g.event_id OFFSET 0) e
     WHERE e.kind = 'reserved' AND e.record_id IS NOT NULL${opFilter}`;

/** An interval of expires_at: [from, to); null = open. */
export interface ExpiryInterval {
  name: string;
  from: Date | null;
  to: Date | null;
}

/**
 * Exact record counts per interval of expires_at and per operation, in one statement
 * (one snapshot). Rows: { name, operation, n }; operations with none left out.
 */
export function recordCensusSql(intervals: readonly ExpiryInterval[], f: { operation?: string } = {}): { text: string; values: unknown[] } {
  const p = paramList();
  const op = f.operation === undefined ? null : p.add(f.operation);
  const ts = (d: number) => `${p.add(new Date(d))}::timestamptz`;
  const range = (col: string, lo: number, hi: number) =>
    [...(Number.isFinite(lo) ? [`${col} >= ${ts(lo)}`] : []), ...(Number.isFinite(hi) ? [`${col} < ${ts(hi)}`] : [])].join(" AND ") || "TRUE";
  const branches: string[] = [];
  for (const iv of intervals) {
    const lo = iv.from ? iv.from.getTime() : -Infinity;
    const hi = iv.to ? iv.to.getTime() : Infinity;
    if (!(lo < hi)) continue;
    const name = p.add(iv.name);
    const wholeLo = Number.isFinite(lo) ? Math.ceil(lo / HOUR_MS) * HOUR_MS : lo;
    const wholeHi = Number.isFinite(hi) ? Math.floor(hi / HOUR_MS) * HOUR_MS : hi;
    const edges: [number, number][] = [];
    if (wholeLo < wholeHi) {
      branches.push(
        `SELECT ${name}::text AS name, c.operation, c.count AS n FROM record_census c WHERE ${range("c.expires_hour", wholeLo, wholeHi)}${op ? ` AND c.operation = ${op}` : ""}`,
        `SELECT ${name}::text, u.operation, 1::bigint FROM unc u WHERE ${range("u.expires_at", wholeLo, wholeHi)}`,
      );
      edges.push([lo, wholeLo], [wholeHi, hi]);
    } else {
      edges.push([lo, hi]);
    }
    for (const [a, b] of edges) {
      if (!(a < b)) continue;
      // A partial hour: one index-only range of (operation, expires_at) per operation.
      branches.push(
        `SELECT ${name}::text, o.operation, (SELECT count(*) FROM idempotency_records r WHERE r.operation = o.operation AND ${range("r.expires_at", a, b)}) FROM ops o`,
      );
    }
  }
  if (!branches.length) branches.push(`SELECT NULL::text, NULL::text, 0::bigint WHERE FALSE`);
  // Each uncounted record by a primary-key probe (OFFSET 0 keeps the planner from hashing the whole table).
  const text = `WITH unc AS MATERIALIZED (
      SELECT r.operation, r.expires_at FROM (${uncountedIdsSql(op ? ` AND e.operation = ${op}` : "")}) u
       CROSS JOIN LATERAL (SELECT r.operation, r.expires_at FROM idempotency_records r WHERE r.id = u.record_id OFFSET 0) r
    ), ops AS MATERIALIZED (
      ${
        op
          ? `SELECT ${op}::text AS operation`
          : `SELECT DISTINCT operation FROM (SELECT c.operation FROM record_census c WHERE c.count > 0 UNION ALL SELECT u.operation FROM unc u) x`
      }
    )
    SELECT name, operation, sum(n)::bigint AS n FROM (
      ${branches.join("\n      UNION ALL\n      ")}
    ) x(name, operation, n) GROUP BY 1, 2 HAVING sum(n) > 0`;
  return { text, values: p.values };
}

export interface CensusCount {
  name: string;
  operation: string;
  count: number;
}

export async function countRecordsByExpiry(
  session: SqlExecutor,
  intervals: readonly ExpiryInterval[],
  f: { operation?: string } = {},
): Promise<CensusCount[]> {
  const q = recordCensusSql(intervals, f);
  const rows = await session.query<{ name: string; operation: string; n: bigint }>(q.text, q.values);
  return rows.map((r) => ({ name: r.name, operation: r.operation, count: Number(r.n) }));
}

/**
 * What the census should hold, computed from the records: every record except the
 * uncounted ones, by operation and expiry hour. O(records): for rebuilds and checks only.
 */
const CENSUS_TRUTH_SQL = `WITH unc AS MATERIALIZED (${uncountedIdsSql()})
  SELECT r.operation, ${CENSUS_HOUR_SQL("r.expires_at")} AS expires_hour, count(*)::bigint AS n
    FROM idempotency_records r
   WHERE NOT EXISTS (SELECT 1 FROM unc u WHERE u.record_id = r.id)
   GROUP BY 1, 2`;

/**
 * Part of the refresh statement (lib/stats/rollups.ts): adds the records of the reserved
 * events in `fresh` (the events this refresh rolls up) to the census. A record already
 * purged is not found, and was never counted.
 */
export const CENSUS_REFRESH_CTE = `census AS (
           INSERT INTO record_census (operation, expires_hour, count)
           SELECT r.operation, ${CENSUS_HOUR_SQL("r.expires_at")}, count(*)
             FROM fresh f JOIN idempotency_records r ON r.id = f.record_id
            WHERE f.kind = 'reserved'
            GROUP BY 1, 2
           ON CONFLICT (operation, expires_hour) DO UPDATE SET count = record_census.count + EXCLUDED.count
         )`;

/**
 * Takes purged records out of the census, in the purge's transaction, after its DELETE,
 * under the refresher's lock (so the watermark and the gaps cannot move meanwhile):
 * `deleted` is a set of (id, operation, expires_at) just deleted; the ones whose reserved
 * event is not rolled up yet were never counted and are left alone. (Never below 0: a
 * census that drifted — see the top — must not stop a purge; verifyRecordCensus repairs it.)
 */
export function purgeCensusSql(deletedJson: string): { text: string; values: unknown[] } {
  return {
    text: `WITH d AS (
        SELECT (x->>'id')::bigint AS id, x->>'operation' AS operation, (x->>'expiresAt')::timestamptz AS expires_at
          FROM jsonb_array_elements($1::jsonb) x
      ), counted AS (
        SELECT d.operation, ${CENSUS_HOUR_SQL("d.expires_at")} AS expires_hour, count(*)::bigint AS n
          FROM d WHERE NOT EXISTS (SELECT 1 FROM idempotency_events e WHERE e.record_id = d.id AND ${UNROLLED("e")})
         GROUP BY 1, 2
      )
      UPDATE record_census c SET count = GREATEST(c.count - counted.n, 0)
        FROM counted WHERE c.operation = counted.operation AND c.expires_hour = counted.expires_hour
      RETURNING c.operation`,
    values: [deletedJson],
  };
}

export interface CensusDrift {
  operation: string;
  expiresHour: Date;
  /** What the census held, and what it should have held. */
  had: number;
  should: number;
}

/** How many records a drift is off by, in all (the sum of the absolute differences). */
export const driftRecords = (drift: readonly CensusDrift[]) => drift.reduce((n, d) => n + Math.abs(d.should - d.had), 0);

/** The differences between the census and the records, in the caller's snapshot (reads only). */
const CENSUS_DRIFT_SQL = `WITH truth AS MATERIALIZED (${CENSUS_TRUTH_SQL})
  SELECT COALESCE(t.operation, c.operation) AS operation, COALESCE(t.expires_hour, c.expires_hour) AS expires_hour,
         COALESCE(c.count, 0) AS had, COALESCE(t.n, 0) AS should
    FROM truth t FULL JOIN record_census c ON c.operation = t.operation AND c.expires_hour = t.expires_hour
   WHERE COALESCE(c.count, 0) <> COALESCE(t.n, 0)
   ORDER BY 1, 2`;

const driftRows = (rows: { operation: string; expires_hour: Date; had: bigint | null; should: bigint | null }[]): CensusDrift[] =>
  rows.map((r) => ({ operation: r.operation, expiresHour: r.expires_hour, had: Number(r.had ?? 0), should: Number(r.should ?? 0) }));

/**
 * The census's drift, read in one snapshot that the caller opened (REPEATABLE READ): the
 * census, the watermark, the gaps and the records as of one moment, so refreshes and purges
 * in flight (invisible to it, census change and all) never show up as drift. O(records).
 */
export async function readCensusDrift(session: SqlExecutor): Promise<CensusDrift[]> {
  return driftRows(await session.query(CENSUS_DRIFT_SQL));
}

/**
 * Adds drift found in an earlier snapshot as increments, under the refresher's lock (the
 * caller's transaction): whatever refreshes and purges changed since stays theirs.
 */
export async function applyCensusDrift(session: SqlExecutor, drift: readonly CensusDrift[]): Promise<void> {
  if (!drift.length) return;
  await session.query(
    `WITH d AS (
       SELECT x->>'operation' AS operation, (x->>'expiresHour')::timestamptz AS expires_hour, (x->>'delta')::bigint AS delta
         FROM jsonb_array_elements($1::jsonb) x
     ), up AS (
       UPDATE record_census c SET count = GREATEST(c.count + d.delta, 0)
         FROM d WHERE c.operation = d.operation AND c.expires_hour = d.expires_hour
       RETURNING c.operation, c.expires_hour
     )
     INSERT INTO record_census (operation, expires_hour, count)
     SELECT d.operation, d.expires_hour, GREATEST(d.delta, 0) FROM d
      WHERE NOT EXISTS (SELECT 1 FROM up WHERE up.operation = d.operation AND up.expires_hour = d.expires_hour)`,
    [JSON.stringify(drift.map((d) => ({ operation: d.operation, expiresHour: d.expiresHour.toISOString(), delta: d.should - d.had })))],
  );
}

/**
 * Sets the census to what it should hold (absolute), under the refresher's lock (the
 * caller's transaction) — for rebuildRollups. Returns the differences it wrote.
 */
export async function rewriteCensus(session: SqlExecutor): Promise<CensusDrift[]> {
  const drift = await readCensusDrift(session);
  await session.query(
    `INSERT INTO record_census (operation, expires_hour, count)
     SELECT x->>'operation', (x->>'expiresHour')::timestamptz, (x->>'should')::bigint FROM jsonb_array_elements($1::jsonb) x
     ON CONFLICT (operation, expires_hour) DO UPDATE SET count = EXCLUDED.count`,
    [JSON.stringify(drift.map((d) => ({ operation: d.operation, expiresHour: d.expiresHour.toISOString(), should: d.should })))],
  );
  return drift;
}
