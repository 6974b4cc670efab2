import { sessionLock, sessionUnlock, transactionLock } from "../db/locks";
import { paramList, type Statement } from "../db/params";
import type { SqlExecutor } from "../db/sql";
import { countPlan, rollupSource, type CountOptions, type CountPlan, type EventRangeFilter, type Span } from "./count-plan";
import type { RollupStore } from "./rollup-store";

/** rollup_state row: every event with an id at or below it is in the rollups (their watermark), or a gap. */
const STATE = "events";
/** rollup_state row: every record with an id at or below it was looked at by a refresh (its high-water mark). */
export const RECORDS_STATE = "records";
/** rollup_state row: where the sweep goes on (watermark = the next record id to re-check). */
const SWEEP_STATE = "census_sweep";
/** rollup_state row: when verifyRecordCensus last ran (updated_at) and how many records it was off by (watermark). */
const CENSUS_VERIFIED = "census_verified";

/**
 * Set for its transaction by the only writers of the rollup tables and the record census
 * (checked by their guard trigger; the flag changes when what they keep does: 'totals' since migration 20261207100000_rollup_totals).
 */
export const WRITER_FLAG = `SELECT set_config('idempotency_console.rollup_writer', 'totals', true)`;

const EPOCH = `timestamptz '1970-01-01 00:00:00+00'`;

/**
 * Exact event counts in [from, to) by operation and kind — per chart bucket too when
 * `stepSeconds` is given (date_bin from the epoch; then only tiers whose grain divides
 * the step are used). One statement: rollups, watermark and gaps in one snapshot. Every
 * bucket bound is a parameter, so each branch is a range of an index.
 * Rows: { b (with a step), operation, kind, n }.
 */
export function eventCountsSql(f: EventRangeFilter, opts: CountOptions = {}): Statement & { plan: CountPlan } {
  const plan = countPlan(f, opts);
  return { ...countsSql(plan, f, opts.stepSeconds), plan };
}

/** The statement of eventCountsSql for a plan made already (count-plan.ts). */
export function countsSql(plan: CountPlan, f: { operation?: string; scope?: string }, step?: number): Statement {
  const p = paramList();
  const filters = (alias: string) => [
    ...(f.operation ? [`${alias}.operation = ${p.add(f.operation)}`] : []),
    ...(f.scope ? [`${alias}.scope = ${p.add(f.scope)}`] : []),
  ];
  const span = (column: string, [lo, hi]: Span) => [
    ...(Number.isFinite(lo) ? [`${column} >= ${p.add(new Date(lo))}::timestamptz`] : []),
    ...(Number.isFinite(hi) ? [`${column} < ${p.add(new Date(hi))}::timestamptz`] : []),
  ];
  const where = (conds: string[]) => (conds.length ? ` WHERE ${conds.join(" AND ")}` : "");
  const branches: string[] = [];
  for (const tier of plan.tiers) {
    for (const s of tier.spans) {
      const source = rollupSource(tier.grainSeconds, Boolean(f.scope));
      branches.push(
        `SELECT r.bucket AS t, r.operation, r.kind, r.count AS n FROM ${source.table} r${where([
          ...(source.byGrain ? [`r.grain_seconds = ${p.add(tier.grainSeconds)}::int`] : []),
          ...span("r.bucket", s),
          ...filters("r"),
        ])}`,
      );
    }
  }
  if (plan.unrolled) {
    // Inside the rolled-up span: what the rollups do not hold yet — the events past the watermark,
    // read by id behind a fence (OFFSET 0), the watermark a STABLE function the planner can see
    // (migration 20261207110000_rollup_watermark). As a subquery it guessed a third of the table
    // above it, and chose the occurred_at range (24 h of events, 841k at 5M records, read for none)
    // or, where ids no longer follow the table's order (after a purge freed space), a sequential
    // scan of every event (docs/scale.md).
    branches.push(
      `SELECT e.occurred_at AS t, e.operation, e.kind, 1::bigint AS n FROM (
          SELECT e.occurred_at, e.operation, e.scope, e.kind FROM idempotency_events e
           WHERE e.id > rollup_watermark('events') OFFSET 0
        ) e${where([...span("e.occurred_at", plan.unrolled), ...filters("e")])}`,
      `SELECT e.occurred_at AS t, e.operation, e.kind, 1::bigint AS n FROM rollup_gaps g JOIN idempotency_events e ON e.id = g.event_id${where([
        ...span("e.occurred_at", plan.unrolled),
        ...filters("e"),
      ])}`,
    );
  }
  for (const s of plan.raw) {
    branches.push(
      `SELECT e.occurred_at AS t, e.operation, e.kind, 1::bigint AS n FROM idempotency_events e${where([...span("e.occurred_at", s), ...filters("e")])}`,
    );
  }
  if (!branches.length) branches.push(`SELECT NULL::timestamptz AS t, NULL::text AS operation, NULL::text AS kind, 0::bigint AS n WHERE FALSE`);
  const src = branches.join("\n        UNION ALL\n        ");
  const text =
    step === undefined
      ? `SELECT operation, kind, sum(n)::bigint AS n FROM (\n        ${src}\n      ) x GROUP BY 1, 2 ORDER BY 1, 2`
      : `SELECT date_bin(make_interval(secs => ${p.add(step)}::float8), t, ${EPOCH}) AS b, operation, kind, sum(n)::bigint AS n FROM (\n        ${src}\n      ) x GROUP BY 1, 2, 3`;
  return { text, values: p.values };
}

/** The rollups' statements on PostgreSQL, verbatim from lib/stats/rollups.ts and refresher.ts. */
export function postgresRollupStore(ex: SqlExecutor): RollupStore {
  const setWatermark = (name: string, watermark: bigint) =>
    ex.query(`UPDATE rollup_state SET watermark = $2, updated_at = now() WHERE name = $1`, [name, watermark]);
  return {
    async lockWriter() {
      await sessionLock(ex, "rollups");
    },
    async unlockWriter() {
      await sessionUnlock(ex, "rollups");
    },
    async lockWriterForTransaction() {
      await transactionLock(ex, "rollups");
    },
    async markWriter() {
      await ex.query(WRITER_FLAG);
    },
    async unmarkWriter() {
      // Nothing: the flag is local to the transaction (set_config(…, true)).
    },

    async refreshMarks() {
      await ex.query(`INSERT INTO rollup_state (name) VALUES ($1), ($2) ON CONFLICT (name) DO NOTHING`, [STATE, RECORDS_STATE]);
      const state = await ex.query<{ name: string; watermark: bigint }>(`SELECT name, watermark FROM rollup_state WHERE name IN ($1, $2)`, [
        STATE,
        RECORDS_STATE,
      ]);
      return { events: state.find((s) => s.name === STATE)!.watermark, records: state.find((s) => s.name === RECORDS_STATE)!.watermark };
    },
    async highestIds() {
      const [{ max, maxRecord }] = await ex.query<{ max: bigint | null; maxRecord: bigint | null }>(
        `SELECT (SELECT max(id) FROM idempotency_events) AS max, (SELECT max(id) FROM idempotency_records) AS "maxRecord"`,
      );
      return { event: max, record: maxRecord };
    },
    async rollUp(from, upTo, coarseGrains) {
      const [counted] = await ex.query<{ n: bigint }>(
        `WITH fresh AS MATERIALIZED (
           SELECT occurred_at, operation, scope, kind FROM idempotency_events WHERE id > $1 AND id <= $2
           UNION ALL
           SELECT e.occurred_at, e.operation, e.scope, e.kind
             FROM rollup_gaps g JOIN idempotency_events e ON e.id = g.event_id
         ), agg AS (
           SELECT date_trunc('minute', occurred_at) AS bucket, operation, scope, kind, count(*) AS n
             FROM fresh GROUP BY 1, 2, 3, 4
         ), up AS (
           INSERT INTO event_rollups (bucket, operation, scope, kind, count)
           SELECT bucket, operation, scope, kind, n FROM agg
           ON CONFLICT (bucket, operation, scope, kind) DO UPDATE SET count = event_rollups.count + EXCLUDED.count
         ), tiers AS (
           INSERT INTO event_rollup_tiers (grain_seconds, bucket, operation, scope, kind, count)
           SELECT g.s, date_bin(make_interval(secs => g.s), a.bucket, timestamptz '1970-01-01 00:00:00+00'), a.operation, a.scope, a.kind, sum(a.n)
             FROM agg a CROSS JOIN unnest($3::int[]) AS g(s)
            GROUP BY 1, 2, 3, 4, 5
           ON CONFLICT (grain_seconds, bucket, operation, scope, kind) DO UPDATE SET count = event_rollup_tiers.count + EXCLUDED.count
         ), totals AS (
           INSERT INTO event_rollup_totals (grain_seconds, bucket, operation, kind, count)
           SELECT g.s, date_bin(make_interval(secs => g.s), a.bucket, timestamptz '1970-01-01 00:00:00+00'), a.operation, a.kind, sum(a.n)
             FROM agg a CROSS JOIN unnest(array_prepend(60, $3::int[])) AS g(s)
            GROUP BY 1, 2, 3, 4
           ON CONFLICT (grain_seconds, bucket, operation, kind) DO UPDATE SET count = event_rollup_totals.count + EXCLUDED.count
         )
         SELECT COALESCE(sum(n), 0)::bigint AS n FROM agg`,
        [from, upTo, coarseGrains],
      );
      return Number(counted.n);
    },
    async forgetFilledGaps() {
      await ex.query(`DELETE FROM rollup_gaps g USING idempotency_events e WHERE e.id = g.event_id`);
    },
    async noteGaps(from, upTo) {
      // The sentinel upTo + 1 closes the range, so ids after the last visible one are gaps too.
      await ex.query(
        `INSERT INTO rollup_gaps (event_id)
         SELECT generate_series(prev + 1, id - 1) FROM (
           SELECT id, lag(id, 1, $1::bigint) OVER (ORDER BY id) AS prev FROM (
             SELECT id FROM idempotency_events WHERE id > $1 AND id <= $2
             UNION ALL
             SELECT $2::bigint + 1
           ) ids
         ) t WHERE id - prev > 1
         ON CONFLICT (event_id) DO NOTHING`,
        [from, upTo],
      );
    },
    async forgetGapsOlderThan(seconds) {
      await ex.query(`DELETE FROM rollup_gaps WHERE seen_at < now() - make_interval(secs => $1)`, [seconds]);
    },
    async setRefreshMarks(marks, refreshed) {
      if (refreshed) await setWatermark(STATE, marks.events);
      else await ex.query(`UPDATE rollup_state SET watermark = $2 WHERE name = $1`, [STATE, marks.events]);
      await setWatermark(RECORDS_STATE, marks.records);
    },
    async gapsOpen() {
      const [{ n }] = await ex.query<{ n: bigint }>(`SELECT count(*)::bigint AS n FROM rollup_gaps`);
      return Number(n);
    },

    async sweepMark() {
      await ex.query(`INSERT INTO rollup_state (name) VALUES ($1) ON CONFLICT (name) DO NOTHING`, [SWEEP_STATE]);
      const [{ watermark }] = await ex.query<{ watermark: bigint }>(`SELECT watermark FROM rollup_state WHERE name = $1`, [SWEEP_STATE]);
      return watermark;
    },
    async setSweepMark(next) {
      await setWatermark(SWEEP_STATE, next);
    },

    async clearRollups() {
      await ex.exec(`DELETE FROM event_rollups; DELETE FROM event_rollup_tiers; DELETE FROM event_rollup_totals; DELETE FROM rollup_gaps;`);
      await ex.query(
        `INSERT INTO rollup_state (name, watermark) VALUES ($1, 0)
       ON CONFLICT (name) DO UPDATE SET watermark = 0, updated_at = now()`,
        [STATE],
      );
    },
    async noteCensusVerified(driftRecords) {
      await ex.query(
        `INSERT INTO rollup_state (name, watermark, updated_at) VALUES ($1, $2, now())
       ON CONFLICT (name) DO UPDATE SET watermark = EXCLUDED.watermark, updated_at = now()`,
        [CENSUS_VERIFIED, driftRecords],
      );
    },

    async refreshDue(verifySeconds) {
      const [due] = await ex.query<{ due: boolean; verifyDue: boolean | null; verifyUnset: boolean }>(
        `SELECT COALESCE((SELECT max(id) FROM idempotency_events), 0) > COALESCE((SELECT watermark FROM rollup_state WHERE name = 'events'), 0)
                OR COALESCE((SELECT max(id) FROM idempotency_records), 0) > COALESCE((SELECT watermark FROM rollup_state WHERE name = 'records'), 0)
                OR EXISTS (SELECT 1 FROM rollup_gaps) AS due,
                $1::int > 0 AND (SELECT updated_at FROM rollup_state WHERE name = $2) < now() - make_interval(secs => $1::int) AS "verifyDue",
                NOT EXISTS (SELECT 1 FROM rollup_state WHERE name = $2) AS "verifyUnset"`,
        [verifySeconds, CENSUS_VERIFIED],
      );
      return due;
    },
    async startVerifyClock() {
      await ex.query(`INSERT INTO rollup_state (name, watermark) VALUES ($1, 0) ON CONFLICT (name) DO NOTHING`, [CENSUS_VERIFIED]);
    },

    async eventCounts(plan, f) {
      const q = countsSql(plan, f);
      return ex.query<{ operation: string; kind: string; n: bigint }>(q.text, q.values);
    },
  };
}
