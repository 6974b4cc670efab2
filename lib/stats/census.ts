import type { SqlExecutor } from "../db/sql";
import { paramList } from "../db/params";

/**
 * The record census: how many records there are per operation and expiry hour
 * (record_census), kept by the rollup refresher and the purge — no trigger on the
 * services' tables (ADR 0007, ADR 0008).
 *
 * Each counted record is a member (record_census_members: record id → the operation and
 * expiry hour it is counted under), and record_census is the members counted per
 * (operation, hour): the two change together, in the same statements, under the
 * refresher's lock. Knowing where each record is counted is what lets the console follow
 * writers that do not keep to the letter of the protocol:
 *
 * - The records a refresh looks at ("touched"): the records of the events it rolls up
 *   (any kind, late commits included through the gaps) and the records above the record
 *   high-water mark (rollup_state 'records'; new records, found by primary key whether
 *   or not they have a `reserved` event). For each, `applySql` makes the member equal to
 *   the record as it is now: new → counted; expires_at moved (sliding expiry on a replay,
 *   a fix by hand followed by an event) → moved to its new hour; gone (deleted outside
 *   the console) → taken out. Cost: primary-key probes per new event and new record —
 *   never a pass over the table.
 * - Readers (recordCensusSql) add the same correction for the records touched since the
 *   last refresh — +1 where the record is now, −1 where its member is — so every count is
 *   exact at any moment, in one statement, and agrees with a plain count over the records
 *   (the Expiry screen) for everything that comes with an event or a new record.
 * - What comes with neither (a DELETE or an UPDATE of expires_at by hand and no event
 *   after it) is found by the sweep — every refresh re-checks the next CENSUS_SWEEP_RECORDS
 *   records by primary key, round the table — and by verifyRecordCensus (O(records), daily
 *   or on demand). What it finds is repaired record by record and reported as a departure.
 * - Departures from the protocol that the refresh, the sweep or the check saw are kept in
 *   census_departures (kind, how many records, when last) and shown on the overview.
 * - The console's purge deletes records and, in the same transaction under the refresher's
 *   lock, their members and counts (`purgeCensusSql`).
 *
 * Reading an interval of expires_at (recordCensusSql): the census's whole hours + the
 * correction for touched records in those hours + the records in the partial hours at the
 * interval's edges (index ranges of (operation, expires_at), < 1 hour each). Without a scope
 * the overview's record totals, expired-not-purged, expiring and forecast read a few thousand
 * census rows instead of every record.
 */

const HOUR_MS = 3_600_000;
const EPOCH = `timestamptz '1970-01-01 00:00:00+00'`;
export const CENSUS_HOUR_SQL = (column: string) => `date_bin(interval '1 hour', ${column}, ${EPOCH})`;
/** rollup_state row: every record with an id at or below it was looked at by a refresh (its high-water mark). */
export const RECORDS_STATE = "records";
/** rollup_state row: where the sweep goes on (watermark = the next record id to re-check). */
export const SWEEP_STATE = "census_sweep";
/** How many records each refresh re-checks by primary key (CENSUS_SWEEP_RECORDS). */
export const DEFAULT_SWEEP_RECORDS = 5_000;

/** What a departure from the protocol looks like to the census (census_departures.kind). */
export const DEPARTURE_KINDS = {
  expires_moved: "expires_at (or the operation) changed after the record was counted",
  deleted_outside: "deleted by something other than the console's purge",
  found_uncounted: "found by the sweep or the check without any event or new-record sighting (committed late, inserted by hand)",
} as const;
export type DepartureKind = keyof typeof DEPARTURE_KINDS;

const WATERMARK = (name: string) => `(SELECT COALESCE(max(s.watermark), 0) FROM rollup_state s WHERE s.name = '${name}')`;

/**
 * The records touched since the last refresh, as `id`: those of the events above the
 * watermark and of the gaps (each gap probed by primary key; OFFSET 0 keeps the planner
 * from scanning the events for them), and those above the record high-water mark.
 */
export const TOUCHED_SQL = `SELECT e.record_id AS id FROM idempotency_events e
       WHERE e.id > ${WATERMARK("events")} AND e.record_id IS NOT NULL
      UNION
      SELECT e.record_id FROM rollup_gaps g
       CROSS JOIN LATERAL (SELECT e.record_id FROM idempotency_events e WHERE e.id = g.event_id OFFSET 0) e
       WHERE e.record_id IS NOT NULL
      UNION
      SELECT r.id FROM idempotency_records r WHERE r.id > ${WATERMARK(RECORDS_STATE)}`;

/**
 * For records `ids` (a subquery of id): +1 where each is now, −1 where its member is
 * counted, as rows (operation, expires_at, n). Members are stored by hour; an hour start
 * falls in a range of whole hours exactly when the record's expiry does.
 */
const correctionSql = (ids: string) => `SELECT r.operation, r.expires_at, 1::bigint AS n FROM (${ids}) t
         CROSS JOIN LATERAL (SELECT r.operation, r.expires_at FROM idempotency_records r WHERE r.id = t.id OFFSET 0) r
        UNION ALL
        SELECT m.operation, m.expires_hour, -1::bigint FROM (${ids}) t
         CROSS JOIN LATERAL (SELECT m.operation, m.expires_hour FROM record_census_members m WHERE m.record_id = t.id OFFSET 0) m`;

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
        `SELECT ${name}::text, k.operation, k.n FROM corr k WHERE ${range("k.expires_at", wholeLo, wholeHi)}`,
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
  const text = `WITH corr AS MATERIALIZED (
      SELECT k.operation, k.expires_at, k.n FROM (
        ${correctionSql(TOUCHED_SQL)}
      ) k${op ? ` WHERE k.operation = ${op}` : ""}
    ), ops AS MATERIALIZED (
      ${
        op
          ? `SELECT ${op}::text AS operation`
          : `SELECT DISTINCT operation FROM (SELECT c.operation FROM record_census c WHERE c.count > 0 UNION ALL SELECT k.operation FROM corr k WHERE k.n > 0) x`
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

// ---------------------------------------------------------------------------
// Writing: only under the refresher's lock, with its writer flag (lib/stats/rollups.ts).

/** How the records of one apply differed from their members. */
export interface AppliedChanges {
  /** Records counted for the first time. */
  added: number;
  /** Counted records whose hour (or operation) changed. */
  moved: number;
  /** Counted records that are gone. */
  gone: number;
}

/**
 * Makes the members of the records `ids` (a subquery of id, read in the caller's
 * snapshot) equal to the records as they are — counted where they are now, taken out
 * if they are gone — and the census with them, in one statement. Returns what changed.
 */
export function applySql(ids: string, values: unknown[] = []): { text: string; values: unknown[] } {
  return {
    text: `WITH t AS MATERIALIZED (${ids}),
      cur AS MATERIALIZED (
        SELECT r.id, r.operation, ${CENSUS_HOUR_SQL("r.expires_at")} AS h FROM t
         CROSS JOIN LATERAL (SELECT r.id, r.operation, r.expires_at FROM idempotency_records r WHERE r.id = t.id OFFSET 0) r
      ), mem AS MATERIALIZED (
        SELECT m.record_id AS id, m.operation, m.expires_hour AS h FROM t
         CROSS JOIN LATERAL (SELECT m.record_id, m.operation, m.expires_hour FROM record_census_members m WHERE m.record_id = t.id OFFSET 0) m
      ), changed AS MATERIALIZED (
        SELECT COALESCE(c.id, m.id) AS id, c.operation AS cop, c.h AS ch, m.operation AS mop, m.h AS mh
          FROM cur c FULL JOIN mem m ON m.id = c.id
         WHERE c.id IS NULL OR m.id IS NULL OR c.operation <> m.operation OR c.h <> m.h
      ), delta AS MATERIALIZED (
        SELECT operation, h, sum(n)::bigint AS n FROM (
          SELECT cop AS operation, ch AS h, 1 AS n FROM changed WHERE cop IS NOT NULL
          UNION ALL
          SELECT mop, mh, -1 FROM changed WHERE mop IS NOT NULL
        ) x GROUP BY 1, 2 HAVING sum(n) <> 0
      ), up AS (
        UPDATE record_census c SET count = GREATEST(c.count + d.n, 0)
          FROM delta d WHERE c.operation = d.operation AND c.expires_hour = d.h
        RETURNING c.operation, c.expires_hour
      ), ins AS (
        INSERT INTO record_census (operation, expires_hour, count)
        SELECT d.operation, d.h, d.n FROM delta d
         WHERE d.n > 0 AND NOT EXISTS (SELECT 1 FROM up WHERE up.operation = d.operation AND up.expires_hour = d.h)
      ), put AS (
        INSERT INTO record_census_members (record_id, operation, expires_hour)
        SELECT id, cop, ch FROM changed WHERE cop IS NOT NULL
        ON CONFLICT (record_id) DO UPDATE SET operation = EXCLUDED.operation, expires_hour = EXCLUDED.expires_hour
      ), drop_gone AS (
        DELETE FROM record_census_members m USING changed c WHERE m.record_id = c.id AND c.cop IS NULL
      )
      SELECT count(*) FILTER (WHERE mop IS NULL)::int AS added,
             count(*) FILTER (WHERE mop IS NOT NULL AND cop IS NOT NULL)::int AS moved,
             count(*) FILTER (WHERE cop IS NULL)::int AS gone
        FROM changed`,
    values,
  };
}

export async function applyRecords(session: SqlExecutor, ids: string, values: unknown[] = []): Promise<AppliedChanges> {
  const q = applySql(ids, values);
  const [row] = await session.query<AppliedChanges>(q.text, q.values);
  return row;
}

/** Adds what a refresh, the sweep or a check saw writers do outside the protocol to census_departures. */
export async function recordDepartures(session: SqlExecutor, seen: Partial<Record<DepartureKind, number>>): Promise<void> {
  const rows = Object.entries(seen).filter(([, n]) => n && n > 0);
  if (!rows.length) return;
  await session.query(
    `INSERT INTO census_departures (kind, records, first_seen_at, last_seen_at)
     SELECT x->>'kind', (x->>'n')::bigint, now(), now() FROM jsonb_array_elements($1::jsonb) x
     ON CONFLICT (kind) DO UPDATE SET records = census_departures.records + EXCLUDED.records, last_seen_at = now()`,
    [JSON.stringify(rows.map(([kind, n]) => ({ kind, n })))],
  );
}

export interface Departure {
  kind: DepartureKind;
  description: string;
  records: number;
  firstSeenAt: Date;
  lastSeenAt: Date;
}

export const DEPARTURES_SQL = `SELECT kind, records, first_seen_at AS "firstSeenAt", last_seen_at AS "lastSeenAt" FROM census_departures WHERE records > 0 ORDER BY last_seen_at DESC`;

export const departureRows = (rows: { kind: string; records: bigint; firstSeenAt: Date; lastSeenAt: Date }[]): Departure[] =>
  rows
    .filter((r): r is typeof r & { kind: DepartureKind } => r.kind in DEPARTURE_KINDS)
    .map((r) => ({ kind: r.kind, description: DEPARTURE_KINDS[r.kind], records: Number(r.records), firstSeenAt: r.firstSeenAt, lastSeenAt: r.lastSeenAt }));

/**
 * The sweep's next slice: up to `limit` record ids from `from` on, and the members in the
 * same id range (records gone since). Excludes the touched records (a refresh is about to
 * apply them; they are not departures). Returns the statement and where the next slice starts
 * (null: the slice reached the end of the table; start again at 0).
 */
export function sweepIdsSql(): string {
  return `SELECT s.id FROM (
      SELECT r.id FROM idempotency_records r WHERE r.id >= $1 AND r.id < $2
      UNION
      SELECT m.record_id FROM record_census_members m WHERE m.record_id >= $1 AND m.record_id < $2
    ) s WHERE s.id NOT IN (SELECT t.id FROM (${TOUCHED_SQL}) t WHERE t.id IS NOT NULL)`;
}

/**
 * Takes purged records out of the census, in the purge's transaction, after its DELETE,
 * under the refresher's lock: `ids` were just deleted; their members go, and the census
 * hours they were counted under lose one each (records never counted have no member).
 */
export function purgeCensusSql(ids: readonly bigint[]): { text: string; values: unknown[] } {
  return {
    text: `WITH gone AS (
        DELETE FROM record_census_members m WHERE m.record_id = ANY ($1::bigint[])
        RETURNING m.operation, m.expires_hour
      ), counted AS (
        SELECT operation, expires_hour, count(*)::bigint AS n FROM gone GROUP BY 1, 2
      )
      UPDATE record_census c SET count = GREATEST(c.count - counted.n, 0)
        FROM counted WHERE c.operation = counted.operation AND c.expires_hour = counted.expires_hour
      RETURNING c.operation`,
    values: [`{${ids.join(",")}}`],
  };
}

// ---------------------------------------------------------------------------
// Checking: O(records), for cron and on demand.

export interface CensusDrift {
  operation: string;
  expiresHour: Date;
  /** What the census (with the correction for touched records) said, and what the records say. */
  had: number;
  should: number;
}

/** How many records a drift is off by, in all (the sum of the absolute differences). */
export const driftRecords = (drift: readonly CensusDrift[]) => drift.reduce((n, d) => n + Math.abs(d.should - d.had), 0);

/** Per operation-hour: the census plus the correction for touched records vs a plain count over the records. */
const CENSUS_DRIFT_SQL = `WITH truth AS MATERIALIZED (
    SELECT r.operation, ${CENSUS_HOUR_SQL("r.expires_at")} AS expires_hour, count(*)::bigint AS n FROM idempotency_records r GROUP BY 1, 2
  ), said AS MATERIALIZED (
    SELECT operation, expires_hour, sum(n)::bigint AS n FROM (
      SELECT c.operation, c.expires_hour, c.count AS n FROM record_census c
      UNION ALL
      SELECT k.operation, ${CENSUS_HOUR_SQL("k.expires_at")}, k.n FROM (${correctionSql(TOUCHED_SQL)}) k
    ) x GROUP BY 1, 2
  )
  SELECT COALESCE(t.operation, s.operation) AS operation, COALESCE(t.expires_hour, s.expires_hour) AS expires_hour,
         COALESCE(s.n, 0) AS had, COALESCE(t.n, 0) AS should
    FROM truth t FULL JOIN said s ON s.operation = t.operation AND s.expires_hour = t.expires_hour
   WHERE COALESCE(s.n, 0) <> COALESCE(t.n, 0)
   ORDER BY 1, 2`;

/** The records whose member differs from them (not counted, gone, moved), touched ones excepted: what a repair applies. */
const MEMBER_DRIFT_SQL = `SELECT COALESCE(r.id, m.record_id) AS id
    FROM idempotency_records r FULL JOIN record_census_members m ON m.record_id = r.id
   WHERE (r.id IS NULL OR m.record_id IS NULL OR r.operation <> m.operation OR ${CENSUS_HOUR_SQL("r.expires_at")} <> m.expires_hour)
     AND COALESCE(r.id, m.record_id) NOT IN (SELECT t.id FROM (${TOUCHED_SQL}) t WHERE t.id IS NOT NULL)`;

/** The census against the members, per operation-hour (a census row edited by hand). */
const AGGREGATE_DRIFT_SQL = `WITH m AS MATERIALIZED (
    SELECT operation, expires_hour, count(*)::bigint AS n FROM record_census_members GROUP BY 1, 2
  )
  SELECT COALESCE(m.operation, c.operation) AS operation, COALESCE(m.expires_hour, c.expires_hour) AS expires_hour,
         COALESCE(c.count, 0) AS had, COALESCE(m.n, 0) AS should
    FROM m FULL JOIN record_census c ON c.operation = m.operation AND c.expires_hour = m.expires_hour
   WHERE COALESCE(c.count, 0) <> COALESCE(m.n, 0)`;

type DriftRow = { operation: string; expires_hour: Date; had: bigint | null; should: bigint | null };
const driftRows = (rows: DriftRow[]): CensusDrift[] =>
  rows.map((r) => ({ operation: r.operation, expiresHour: r.expires_hour, had: Number(r.had ?? 0), should: Number(r.should ?? 0) }));

export interface CensusCheckResult {
  /** What the overview would have been off by, per operation-hour. */
  drift: CensusDrift[];
  /** The records to apply (member ≠ record), and census rows that disagree with their members. */
  records: bigint[];
  aggregate: CensusDrift[];
}

/**
 * Everything a check needs, read in one snapshot that the caller opened (REPEATABLE READ):
 * the census, members, watermarks, gaps and records as of one moment, so refreshes and
 * purges in flight (invisible to it) never show up as drift. O(records).
 */
export async function readCensusDrift(session: SqlExecutor): Promise<CensusCheckResult> {
  const drift = driftRows(await session.query<DriftRow>(CENSUS_DRIFT_SQL));
  const records = (await session.query<{ id: bigint }>(MEMBER_DRIFT_SQL)).map((r) => BigInt(r.id));
  const aggregate = driftRows(await session.query<DriftRow>(AGGREGATE_DRIFT_SQL));
  return { drift, records, aggregate };
}

/**
 * Sets census rows that disagree with their members (read in an earlier snapshot) by the
 * difference, under the refresher's lock. Only a census row edited by hand needs it: the
 * refresher and the purge change both in the same statements.
 */
export async function applyAggregateDrift(session: SqlExecutor, drift: readonly CensusDrift[]): Promise<void> {
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
 * Counts every record from scratch (for rebuildRollups, under the refresher's lock): the
 * members are all records visible now, the census their count per operation-hour, and
 * the record high-water mark the highest member.
 */
export async function rewriteCensus(session: SqlExecutor): Promise<void> {
  await session.exec(`DELETE FROM record_census_members; DELETE FROM record_census;`);
  await session.exec(
    `INSERT INTO record_census_members (record_id, operation, expires_hour)
       SELECT id, operation, ${CENSUS_HOUR_SQL("expires_at")} FROM idempotency_records;
     INSERT INTO record_census (operation, expires_hour, count)
       SELECT operation, expires_hour, count(*) FROM record_census_members GROUP BY 1, 2;
     INSERT INTO rollup_state (name, watermark) SELECT '${RECORDS_STATE}', COALESCE(max(record_id), 0) FROM record_census_members
       ON CONFLICT (name) DO UPDATE SET watermark = EXCLUDED.watermark, updated_at = now();`,
  );
}
