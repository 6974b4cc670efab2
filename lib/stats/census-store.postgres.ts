import { paramList, type Statement } from "../db/params";
import type { SqlExecutor } from "../db/sql";
import { type AppliedChanges, type CensusDriftRow, type CensusCountOptions, type CensusStore, coverIntervals, type ExpiryInterval } from "./census-store";
import { GAP_GRACE_SECONDS } from "./rollup-store";
import { RECORDS_STATE } from "./rollup-store.postgres";

/**
 * The record census's statements on PostgreSQL, verbatim from lib/stats/census.ts and
 * rollups.ts (what they keep and why: census.ts).
 */

const EPOCH = `timestamptz '1970-01-01 00:00:00+00'`;
export const CENSUS_HOUR_SQL = (column: string) => `date_bin(interval '1 hour', ${column}, ${EPOCH})`;

/** A watermark as the planner can see it (a STABLE function: migration 20261207110000_rollup_watermark). */
const WATERMARK = (name: string) => `rollup_watermark('${name}')`;

/**
 * The records that became failed lately (ADR 0016): failed, with updated_at less than GAP_GRACE
 * before the last refresh (rollup_state 'events', whose updated_at a refresh's last batch sets to
 * its now(), having applied these records in its snapshot). A failed status whose event commits
 * apart from it has no event naming the record at the moment that matters — the refresh saw the
 * event while the record was still processing, or a reader looks between the status and its
 * event — but its updated_at does. A status committed more than GAP_GRACE after its updated_at
 * slips through (as an id that commits later than that: rollups.ts) and is the sweep's. A range
 * of the (status, updated_at) index: the failures of the last quarter of an hour or so — the bound
 * is a STABLE function (migration 20261206000000_census_failed) so that the planner knows it.
 */
const RECENTLY_FAILED_SQL = `SELECT r.id FROM idempotency_records r WHERE r.status = 'failed' AND r.updated_at > census_failed_since(${GAP_GRACE_SECONDS})`;

/**
 * The records touched since the last refresh, as `id`: those of the events above the
 * watermark and of the gaps (each gap probed by primary key; OFFSET 0 keeps the planner
 * from scanning the events for them), those above the record high-water mark, and those that
 * became failed lately.
 */
export const TOUCHED_SQL = `SELECT e.record_id AS id FROM idempotency_events e
       WHERE e.id > ${WATERMARK("events")} AND e.record_id IS NOT NULL
      UNION
      SELECT e.record_id FROM rollup_gaps g
       CROSS JOIN LATERAL (SELECT e.record_id FROM idempotency_events e WHERE e.id = g.event_id OFFSET 0) e
       WHERE e.record_id IS NOT NULL
      UNION
      SELECT r.id FROM idempotency_records r WHERE r.id > ${WATERMARK(RECORDS_STATE)}
      UNION
      ${RECENTLY_FAILED_SQL}`;

/**
 * For records `ids` (a subquery of id): +1 where each is now, −1 where its member is
 * counted, as rows (operation, expires_at, n, f) — f the same for the failed count (+1 if the
 * record is failed, −1 if its member is). Members are stored by hour; an hour start falls in
 * a range of whole hours exactly when the record's expiry does.
 */
const correctionSql = (ids: string) => `SELECT r.operation, r.expires_at, 1::bigint AS n, (r.status = 'failed')::int::bigint AS f FROM (${ids}) t
         CROSS JOIN LATERAL (SELECT r.operation, r.expires_at, r.status FROM idempotency_records r WHERE r.id = t.id OFFSET 0) r
        UNION ALL
        SELECT m.operation, m.expires_hour, -1::bigint, -(m.failed::int)::bigint FROM (${ids}) t
         CROSS JOIN LATERAL (SELECT m.operation, m.expires_hour, m.failed FROM record_census_members m WHERE m.record_id = t.id OFFSET 0) m`;

/**
 * Exact record counts per interval of expires_at and per operation, in one statement
 * (one snapshot): the census's whole hours + the correction for touched records in those
 * hours, and the pieces of hours at the interval's edges added or taken off (censusCover; index
 * ranges of (operation, expires_at), less than an hour each). Rows: { name, operation, n }; operations with
 * none left out. With `failed`, also rows 'status:failed': the census's failed counts of every
 * hour + the correction's.
 */
export function recordCensusSql(intervals: readonly ExpiryInterval[], f: CensusCountOptions = {}): Statement {
  const p = paramList();
  const op = f.operation === undefined ? null : p.add(f.operation);
  const ts = (d: number) => `${p.add(new Date(d))}::timestamptz`;
  const range = (col: string, lo: number, hi: number) =>
    [...(Number.isFinite(lo) ? [`${col} >= ${ts(lo)}`] : []), ...(Number.isFinite(hi) ? [`${col} < ${ts(hi)}`] : [])].join(" AND ") || "TRUE";
  const { whole, pieces, uses } = coverIntervals(intervals, f.now);
  // Each interval's name bound once, however many branches it has.
  const names = new Map<string, string>();
  const named = (name: string) => {
    let placeholder = names.get(name);
    if (placeholder === undefined) names.set(name, (placeholder = p.add(name)));
    return placeholder;
  };
  const branches: string[] = [];
  for (const w of whole) {
    const [count, corrected] = w.failed ? ["c.failed", "k.f"] : ["c.count", "k.n"];
    branches.push(
      `SELECT ${named(w.name)}::text AS name, c.operation, ${count} AS n FROM record_census c WHERE ${range("c.expires_hour", w.lo, w.hi)}${op ? ` AND c.operation = ${op}` : ""}`,
      `SELECT ${named(w.name)}::text, k.operation, ${corrected} FROM corr k WHERE ${range("k.expires_at", w.lo, w.hi)}`,
    );
  }
  // Less than an hour each: one index-only range of (operation, expires_at) per operation. The failed
  // records' also reads the rows, for their status (less than an hour's records): as a FILTER, not a
  // condition, which would let the planner read every failed record of the operation from the
  // unsettled-status index instead (10M records: 356 ms).
  const pieceReads = pieces.map(
    (pc, i) =>
      `SELECT ${i} AS i, o.operation, (SELECT ${pc.failed ? `count(*) FILTER (WHERE r.status = 'failed')` : "count(*)"} FROM idempotency_records r WHERE r.operation = o.operation AND ${range("r.expires_at", pc.lo, pc.hi)}) AS n FROM ops o`,
  );
  for (const u of uses) branches.push(`SELECT ${named(u.name)}::text, pc.operation, ${u.sign < 0 ? "-" : ""}pc.n FROM pieces pc WHERE pc.i = ${u.piece}`);
  if (f.failed) {
    const name = p.add("status:failed");
    branches.push(
      `SELECT ${name}::text, c.operation, c.failed FROM record_census c WHERE c.failed > 0${op ? ` AND c.operation = ${op}` : ""}`,
      `SELECT ${name}::text, k.operation, k.f FROM corr k WHERE k.f <> 0`,
    );
  }
  if (!branches.length) branches.push(`SELECT NULL::text, NULL::text, 0::bigint WHERE FALSE`);
  const text = `WITH corr AS MATERIALIZED (
      SELECT k.operation, k.expires_at, k.n, k.f FROM (
        ${correctionSql(TOUCHED_SQL)}
      ) k${op ? ` WHERE k.operation = ${op}` : ""}
    ), ops AS MATERIALIZED (
      ${
        op
          ? `SELECT ${op}::text AS operation`
          : `SELECT DISTINCT operation FROM (SELECT c.operation FROM record_census c WHERE c.count > 0 UNION ALL SELECT k.operation FROM corr k WHERE k.n > 0) x`
      }
    )${
      pieceReads.length
        ? `, pieces AS MATERIALIZED (
      ${pieceReads.join("\n      UNION ALL\n      ")}
    )`
        : ""
    }
    SELECT name, operation, sum(n)::bigint AS n FROM (
      ${branches.join("\n      UNION ALL\n      ")}
    ) x(name, operation, n) GROUP BY 1, 2 HAVING sum(n) > 0`;
  return { text, values: p.values };
}

/**
 * Makes the members of the records `ids` (a subquery of id, read in the caller's
 * snapshot) equal to the records as they are — counted where they are now, taken out
 * if they are gone — and the census with them, in one statement. Returns what changed.
 */
export function applySql(ids: string, values: unknown[] = []): Statement {
  return {
    text: `WITH t AS MATERIALIZED (${ids}),
      cur AS MATERIALIZED (
        SELECT r.id, r.operation, ${CENSUS_HOUR_SQL("r.expires_at")} AS h, r.status = 'failed' AS f FROM t
         CROSS JOIN LATERAL (SELECT r.id, r.operation, r.expires_at, r.status FROM idempotency_records r WHERE r.id = t.id OFFSET 0) r
      ), mem AS MATERIALIZED (
        SELECT m.record_id AS id, m.operation, m.expires_hour AS h, m.failed AS f FROM t
         CROSS JOIN LATERAL (SELECT m.record_id, m.operation, m.expires_hour, m.failed FROM record_census_members m WHERE m.record_id = t.id OFFSET 0) m
      ), changed AS MATERIALIZED (
        SELECT COALESCE(c.id, m.id) AS id, c.operation AS cop, c.h AS ch, c.f AS cf, m.operation AS mop, m.h AS mh, m.f AS mf
          FROM cur c FULL JOIN mem m ON m.id = c.id
         WHERE c.id IS NULL OR m.id IS NULL OR c.operation <> m.operation OR c.h <> m.h OR c.f <> m.f
      ), delta AS MATERIALIZED (
        SELECT operation, h, sum(n)::bigint AS n, sum(f)::bigint AS f FROM (
          SELECT cop AS operation, ch AS h, 1 AS n, cf::int AS f FROM changed WHERE cop IS NOT NULL
          UNION ALL
          SELECT mop, mh, -1, -(mf::int) FROM changed WHERE mop IS NOT NULL
        ) x GROUP BY 1, 2 HAVING sum(n) <> 0 OR sum(f) <> 0
      ), up AS (
        UPDATE record_census c SET count = GREATEST(c.count + d.n, 0), failed = GREATEST(c.failed + d.f, 0)
          FROM delta d WHERE c.operation = d.operation AND c.expires_hour = d.h
        RETURNING c.operation, c.expires_hour
      ), ins AS (
        INSERT INTO record_census (operation, expires_hour, count, failed)
        SELECT d.operation, d.h, d.n, GREATEST(d.f, 0) FROM delta d
         WHERE d.n > 0 AND NOT EXISTS (SELECT 1 FROM up WHERE up.operation = d.operation AND up.expires_hour = d.h)
      ), put AS (
        INSERT INTO record_census_members (record_id, operation, expires_hour, failed)
        SELECT id, cop, ch, cf FROM changed WHERE cop IS NOT NULL
        ON CONFLICT (record_id) DO UPDATE SET operation = EXCLUDED.operation, expires_hour = EXCLUDED.expires_hour, failed = EXCLUDED.failed
      ), drop_gone AS (
        DELETE FROM record_census_members m USING changed c WHERE m.record_id = c.id AND c.cop IS NULL
      )
      SELECT count(*) FILTER (WHERE mop IS NULL)::int AS added,
             count(*) FILTER (WHERE mop IS NOT NULL AND cop IS NOT NULL AND (cop <> mop OR ch <> mh))::int AS moved,
             count(*) FILTER (WHERE cop IS NULL)::int AS gone,
             count(*) FILTER (WHERE mop IS NOT NULL AND cop IS NOT NULL AND cf <> mf)::int AS "failedChanged"
        FROM changed`,
    values,
  };
}

/**
 * The records a refresh batch looks at: of the events in ($1, $2] and of the gaps, the records in
 * ($3, $4], and with `recentlyFailed` (a refresh's last batch, which moves the time they are read
 * from) those that became failed lately: since the previous refresh, less GAP_GRACE.
 */
const refreshedIdsSql = (recentlyFailed: boolean) =>
  [
    `SELECT e.record_id AS id FROM idempotency_events e WHERE e.id > $1 AND e.id <= $2 AND e.record_id IS NOT NULL`,
    `SELECT e.record_id FROM rollup_gaps g JOIN idempotency_events e ON e.id = g.event_id WHERE e.record_id IS NOT NULL`,
    `SELECT r.id FROM idempotency_records r WHERE r.id > $3 AND r.id <= $4`,
    ...(recentlyFailed ? [RECENTLY_FAILED_SQL] : []),
  ].join("\n         UNION\n         ");

/**
 * The sweep's slice: the record ids in [$1, $2), and the members in the same id range
 * (records gone since). Excludes the touched records (a refresh is about to apply them;
 * they are not departures).
 */
export function sweepIdsSql(): string {
  return `SELECT s.id FROM (
      SELECT r.id FROM idempotency_records r WHERE r.id >= $1 AND r.id < $2
      UNION
      SELECT m.record_id FROM record_census_members m WHERE m.record_id >= $1 AND m.record_id < $2
    ) s WHERE s.id NOT IN (SELECT t.id FROM (${TOUCHED_SQL}) t WHERE t.id IS NOT NULL)`;
}

/**
 * Takes purged records out of the census, in the purge's transaction, under the refresher's
 * lock: the records of CTE `purged` (an `id` column) were just deleted; their members go, and
 * the census hours they were counted under lose one each (records never counted have no
 * member). CTEs to follow `purged` in a WITH, so the purge's DELETE and its census are one
 * statement (purge-store.postgres.ts).
 */
export const takeOutPurgedCtes = (purged: string) => `census_gone AS (
        DELETE FROM record_census_members m USING ${purged} p WHERE m.record_id = p.id
        RETURNING m.operation, m.expires_hour, m.failed
      ), census_counted AS (
        SELECT operation, expires_hour, count(*)::bigint AS n, count(*) FILTER (WHERE failed)::bigint AS f FROM census_gone GROUP BY 1, 2
      ), census_taken AS (
        UPDATE record_census c SET count = GREATEST(c.count - k.n, 0), failed = GREATEST(c.failed - k.f, 0)
          FROM census_counted k WHERE c.operation = k.operation AND c.expires_hour = k.expires_hour
      )`;

export function purgeCensusSql(ids: readonly bigint[]): Statement {
  return {
    text: `WITH purged AS (SELECT unnest($1::bigint[]) AS id), ${takeOutPurgedCtes("purged")} SELECT 1`,
    values: [`{${ids.join(",")}}`],
  };
}

/** What the census saw writers do outside the protocol, newest first (the overview). */
export const DEPARTURES_SQL = `SELECT kind, records, first_seen_at AS "firstSeenAt", last_seen_at AS "lastSeenAt" FROM census_departures WHERE records > 0 ORDER BY last_seen_at DESC`;

/** Per operation-hour: the census plus the correction for touched records vs a plain count over the records (all, and failed). */
const CENSUS_DRIFT_SQL = `WITH truth AS MATERIALIZED (
    SELECT r.operation, ${CENSUS_HOUR_SQL("r.expires_at")} AS expires_hour, count(*)::bigint AS n, count(*) FILTER (WHERE r.status = 'failed')::bigint AS f
      FROM idempotency_records r GROUP BY 1, 2
  ), said AS MATERIALIZED (
    SELECT operation, expires_hour, sum(n)::bigint AS n, sum(f)::bigint AS f FROM (
      SELECT c.operation, c.expires_hour, c.count AS n, c.failed AS f FROM record_census c
      UNION ALL
      SELECT k.operation, ${CENSUS_HOUR_SQL("k.expires_at")}, k.n, k.f FROM (${correctionSql(TOUCHED_SQL)}) k
    ) x GROUP BY 1, 2
  )
  SELECT COALESCE(t.operation, s.operation) AS operation, COALESCE(t.expires_hour, s.expires_hour) AS expires_hour,
         COALESCE(s.n, 0) AS had, COALESCE(t.n, 0) AS should, COALESCE(s.f, 0) AS had_failed, COALESCE(t.f, 0) AS should_failed
    FROM truth t FULL JOIN said s ON s.operation = t.operation AND s.expires_hour = t.expires_hour
   WHERE COALESCE(s.n, 0) <> COALESCE(t.n, 0) OR COALESCE(s.f, 0) <> COALESCE(t.f, 0)
   ORDER BY 1, 2`;

/** The records whose member differs from them (not counted, gone, moved, failed or not), touched ones excepted: what a repair applies. */
const MEMBER_DRIFT_SQL = `SELECT COALESCE(r.id, m.record_id) AS id
    FROM idempotency_records r FULL JOIN record_census_members m ON m.record_id = r.id
   WHERE (r.id IS NULL OR m.record_id IS NULL OR r.operation <> m.operation OR ${CENSUS_HOUR_SQL("r.expires_at")} <> m.expires_hour
          OR (r.status = 'failed') <> m.failed)
     AND COALESCE(r.id, m.record_id) NOT IN (SELECT t.id FROM (${TOUCHED_SQL}) t WHERE t.id IS NOT NULL)`;

/** The census against the members, per operation-hour (a census row edited by hand). */
const AGGREGATE_DRIFT_SQL = `WITH m AS MATERIALIZED (
    SELECT operation, expires_hour, count(*)::bigint AS n, count(*) FILTER (WHERE failed)::bigint AS f FROM record_census_members GROUP BY 1, 2
  )
  SELECT COALESCE(m.operation, c.operation) AS operation, COALESCE(m.expires_hour, c.expires_hour) AS expires_hour,
         COALESCE(c.count, 0) AS had, COALESCE(m.n, 0) AS should, COALESCE(c.failed, 0) AS had_failed, COALESCE(m.f, 0) AS should_failed
    FROM m FULL JOIN record_census c ON c.operation = m.operation AND c.expires_hour = m.expires_hour
   WHERE COALESCE(c.count, 0) <> COALESCE(m.n, 0) OR COALESCE(c.failed, 0) <> COALESCE(m.f, 0)`;

export function postgresCensusStore(ex: SqlExecutor): CensusStore {
  const apply = async (q: Statement) => {
    const [row] = await ex.query<AppliedChanges>(q.text, q.values);
    return row;
  };
  return {
    async countByExpiry(intervals, f) {
      const q = recordCensusSql(intervals, f);
      return ex.query<{ name: string; operation: string; n: bigint }>(q.text, q.values);
    },

    applyTouched: (events, records, recentlyFailed) => apply(applySql(refreshedIdsSql(recentlyFailed), [events.from, events.upTo, records.from, records.upTo])),
    async sweepSlice(from, limit) {
      const [slice] = await ex.query<{ last: bigint | null; n: bigint }>(
        `SELECT max(id) AS last, count(*)::bigint AS n FROM (SELECT id FROM idempotency_records WHERE id >= $1 ORDER BY id LIMIT $2) s`,
        [from, limit],
      );
      return slice;
    },
    applySwept: (from, end) => apply(applySql(sweepIdsSql(), [from, end])),
    applyRecords: (ids) => apply(applySql(`SELECT unnest($1::bigint[]) AS id`, [`{${ids.join(",")}}`])),
    async addDepartures(seen) {
      await ex.query(
        `INSERT INTO census_departures (kind, records, first_seen_at, last_seen_at)
     SELECT x->>'kind', (x->>'n')::bigint, now(), now() FROM jsonb_array_elements($1::jsonb) x
     ON CONFLICT (kind) DO UPDATE SET records = census_departures.records + EXCLUDED.records, last_seen_at = now()`,
        [JSON.stringify(seen.map(({ kind, n }) => ({ kind, n })))],
      );
    },

    censusDrift: () => ex.query<CensusDriftRow>(CENSUS_DRIFT_SQL),
    memberDrift: async () => (await ex.query<{ id: bigint }>(MEMBER_DRIFT_SQL)).map((r) => BigInt(r.id)),
    aggregateDrift: () => ex.query<CensusDriftRow>(AGGREGATE_DRIFT_SQL),
    async correctAggregates(drift) {
      await ex.query(
        `WITH d AS (
       SELECT x->>'operation' AS operation, (x->>'expiresHour')::timestamptz AS expires_hour, (x->>'delta')::bigint AS delta,
              (x->>'failedDelta')::bigint AS failed_delta
         FROM jsonb_array_elements($1::jsonb) x
     ), up AS (
       UPDATE record_census c SET count = GREATEST(c.count + d.delta, 0), failed = GREATEST(c.failed + d.failed_delta, 0)
         FROM d WHERE c.operation = d.operation AND c.expires_hour = d.expires_hour
       RETURNING c.operation, c.expires_hour
     )
     INSERT INTO record_census (operation, expires_hour, count, failed)
     SELECT d.operation, d.expires_hour, GREATEST(d.delta, 0), GREATEST(d.failed_delta, 0) FROM d
      WHERE NOT EXISTS (SELECT 1 FROM up WHERE up.operation = d.operation AND up.expires_hour = d.expires_hour)`,
        [JSON.stringify(drift.map((d) => ({ operation: d.operation, expiresHour: d.expiresHour.toISOString(), delta: d.delta, failedDelta: d.failedDelta })))],
      );
    },
    async rewrite() {
      await ex.exec(`DELETE FROM record_census_members; DELETE FROM record_census;`);
      await ex.exec(
        `INSERT INTO record_census_members (record_id, operation, expires_hour, failed)
       SELECT id, operation, ${CENSUS_HOUR_SQL("expires_at")}, status = 'failed' FROM idempotency_records;
     INSERT INTO record_census (operation, expires_hour, count, failed)
       SELECT operation, expires_hour, count(*), count(*) FILTER (WHERE failed) FROM record_census_members GROUP BY 1, 2;
     INSERT INTO rollup_state (name, watermark) SELECT '${RECORDS_STATE}', COALESCE(max(record_id), 0) FROM record_census_members
       ON CONFLICT (name) DO UPDATE SET watermark = EXCLUDED.watermark, updated_at = now();`,
      );
    },

    async takeOutPurged(ids) {
      const q = purgeCensusSql(ids);
      await ex.query(q.text, q.values);
    },
  };
}
