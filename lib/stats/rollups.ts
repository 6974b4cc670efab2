import { inTransaction, SNAPSHOT, type SqlExecutor } from "../db/sql";
import { paramList } from "../records/row";
import { applyCensusDrift, CENSUS_REFRESH_CTE, driftRecords, readCensusDrift, rewriteCensus, type CensusDrift } from "./census";

/**
 * Rollups of idempotency_events by (operation, scope, kind), kept incrementally from an
 * id watermark, in tiers:
 * - minute: event_rollups (one row per minute × operation × scope × kind);
 * - 15 minutes, hour, day: event_rollup_tiers (grain_seconds 900 / 3600 / 86400).
 * One refresh statement adds the same new events to every tier (the coarse tiers are the
 * minute counts re-binned), from the same watermark, in the same transaction as the
 * watermark moves: every tier always covers exactly the same events. Buckets are UTC and
 * aligned from the epoch, so a coarse bucket is a whole number of minute buckets and lies
 * inside one chart bucket of any step it divides (lib/stats/overview.ts uses date_bin).
 * A guard trigger (migration 20261130060000_rollup_hours) refuses any other writer.
 *
 * Ids are handed out at INSERT but become visible at COMMIT, so an id below the
 * watermark can appear later (a writer's transaction was still open). Every id
 * missing below the watermark is remembered in rollup_gaps and counted when it
 * shows up; after GAP_GRACE it is taken as rolled back and forgotten.
 *
 * Counts of a range [from, to) are exact at any moment (eventCountsSql, one statement,
 * so one snapshot): the coarsest usable tier for the whole buckets in the middle, the
 * next finer tiers for the partial buckets at both edges, down to whole minutes, plus
 * the raw events of the partial minutes at both edges, plus the raw events the rollups
 * do not cover yet (above the watermark, or a gap) inside the minute-covered span.
 * A 30-day range reads ~30 day buckets + ≤ 46 hour + ≤ 6 quarter-hour + ≤ 28 minute
 * buckets (per operation × scope × kind) instead of 43,200 minutes.
 *
 * Rollups are history: purging old events (retention) does not lower them.
 */

/** The refresher's transaction lock; the purge takes it too, to take purged records out of the census (lib/stats/census.ts). */
export const ROLLUP_LOCK_ID = 72707371;
const STATE = "events";
/** rollup_state row: when verifyRecordCensus last ran (updated_at) and how many records it was off by (watermark). */
export const CENSUS_VERIFIED = "census_verified";
export const GAP_GRACE_SECONDS = 15 * 60;

/** The tiers, finest first; each grain divides the next. 60 = event_rollups, the rest event_rollup_tiers. */
export const ROLLUP_GRAINS = [60, 900, 3600, 86400] as const;
export const COARSE_GRAINS = ROLLUP_GRAINS.slice(1);
/**
 * Set for its transaction by the only writers of the rollup tables and the record census
 * (checked by their guard trigger, migration 20261130070000_record_census).
 */
export const WRITER_FLAG = `SELECT set_config('idempotency_console.rollup_writer', 'census', true)`;

export interface RefreshResult {
  watermark: bigint;
  eventsCounted: number;
  batches: number;
  gapsOpen: number;
}

/**
 * Rolls up everything new, in short transactions of at most `batchSize` ids.
 * `session` must be one connection (a transaction spans several statements).
 * One refresher at a time across processes (advisory lock); a second caller
 * waits, then finds little or nothing to do.
 */
export async function refreshRollups(session: SqlExecutor, opts: { batchSize?: number } = {}): Promise<RefreshResult> {
  const batchSize = BigInt(opts.batchSize ?? 50_000);
  let eventsCounted = 0;
  let batches = 0;
  for (;;) {
    const batch = await asRollupWriter(session, async () => {
      await session.query(`INSERT INTO rollup_state (name) VALUES ($1) ON CONFLICT (name) DO NOTHING`, [STATE]);
      const [{ watermark }] = await session.query<{ watermark: bigint }>(
        `SELECT watermark FROM rollup_state WHERE name = $1 FOR UPDATE`,
        [STATE],
      );
      const [{ max }] = await session.query<{ max: bigint | null }>(`SELECT max(id) AS max FROM idempotency_events`);
      const upTo = max === null ? watermark : max < watermark + batchSize ? max : watermark + batchSize;

      // New events in (watermark, upTo], plus earlier gaps that have become visible,
      // into every tier at once, and the records they reserved into the census.
      const [counted] = await session.query<{ n: bigint }>(
        `WITH fresh AS MATERIALIZED (
           SELECT occurred_at, operation, scope, kind, record_id FROM idempotency_events WHERE id > $1 AND id <= $2
           UNION ALL
           SELECT e.occurred_at, e.operation, e.scope, e.kind, e.record_id
             FROM rollup_gaps g JOIN idempotency_events e ON e.id = g.event_id
         ), ${CENSUS_REFRESH_CTE}, agg AS (
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
         )
         SELECT COALESCE(sum(n), 0)::bigint AS n FROM agg`,
        [watermark, upTo, COARSE_GRAINS],
      );
      await session.query(`DELETE FROM rollup_gaps g USING idempotency_events e WHERE e.id = g.event_id`);
      // Ids missing in (watermark, upTo]: not committed yet, or never will be.
      await session.query(
        `INSERT INTO rollup_gaps (event_id)
         SELECT generate_series(prev + 1, id - 1) FROM (
           SELECT id, lag(id, 1, $1::bigint) OVER (ORDER BY id) AS prev
             FROM idempotency_events WHERE id > $1 AND id <= $2
         ) t WHERE id - prev > 1
         ON CONFLICT (event_id) DO NOTHING`,
        [watermark, upTo],
      );
      await session.query(`DELETE FROM rollup_gaps WHERE seen_at < now() - make_interval(secs => $1)`, [GAP_GRACE_SECONDS]);
      await session.query(`UPDATE rollup_state SET watermark = $2, updated_at = now() WHERE name = $1`, [STATE, upTo]);
      return { upTo, counted: Number(counted.n), done: max === null || upTo >= max };
    });
    eventsCounted += batch.counted;
    batches++;
    if (batch.done) {
      const [{ n }] = await session.query<{ n: bigint }>(`SELECT count(*)::bigint AS n FROM rollup_gaps`);
      return { watermark: batch.upTo, eventsCounted, batches, gapsOpen: Number(n) };
    }
  }
}

/** One transaction under the refresher's lock, as a writer of the rollups and the census (the guard trigger's flag). */
async function asRollupWriter<T>(session: SqlExecutor, fn: () => Promise<T>): Promise<T> {
  return inTransaction(session, async () => {
    await session.query(`SELECT pg_advisory_xact_lock($1)`, [ROLLUP_LOCK_ID]);
    await session.query(WRITER_FLAG);
    return fn();
  });
}

/** Throws every tier away and counts everything again (batched, resumable: counts stay exact meanwhile). */
export async function rebuildRollups(session: SqlExecutor, opts: { batchSize?: number } = {}): Promise<RefreshResult> {
  await asRollupWriter(session, async () => {
    await session.exec(`DELETE FROM event_rollups; DELETE FROM event_rollup_tiers; DELETE FROM rollup_gaps;`);
    await session.query(
      `INSERT INTO rollup_state (name, watermark) VALUES ($1, 0)
       ON CONFLICT (name) DO UPDATE SET watermark = 0, updated_at = now()`,
      [STATE],
    );
    // With nothing rolled up, the census holds only the records whose reserved event is
    // gone (purged events) or never existed; the refreshes below add the rest.
    await rewriteCensus(session);
  });
  return refreshRollups(session, opts);
}

/**
 * Recounts the record census from the records and repairs it; returns the drift it found:
 * none, unless records were deleted by something other than the console's purge, inserted
 * without a `reserved` event, or had their expires_at changed (lib/stats/census.ts).
 * The O(records) recount reads one REPEATABLE READ snapshot without the refresher's lock
 * (refreshes and purge batches go on meanwhile); only the repair, added as increments,
 * takes it. Records when it last ran (rollup_state 'census_verified').
 */
export async function verifyRecordCensus(session: SqlExecutor): Promise<CensusDrift[]> {
  const drift = await inTransaction(session, () => readCensusDrift(session), SNAPSHOT);
  await repairRecordCensus(session, drift);
  return drift;
}

/** Adds drift read in an earlier snapshot to the census as increments, under the refresher's lock (see above). */
export async function repairRecordCensus(session: SqlExecutor, drift: readonly CensusDrift[]): Promise<void> {
  await asRollupWriter(session, async () => {
    await applyCensusDrift(session, drift);
    await session.query(
      `INSERT INTO rollup_state (name, watermark, updated_at) VALUES ($1, $2, now())
       ON CONFLICT (name) DO UPDATE SET watermark = EXCLUDED.watermark, updated_at = now()`,
      [CENSUS_VERIFIED, driftRecords(drift)],
    );
  });
}

// ---------------------------------------------------------------------------
// Reading: one query builder for every exact event count (countEvents, the overview's
// series and totals, the metrics counters).

export interface EventCountFilter {
  from: Date;
  to: Date;
  operation?: string;
  scope?: string;
}

/** A range to count in: [from, to); an absent bound is open (no from/to: all time). */
export interface EventRangeFilter {
  from?: Date | null;
  to?: Date | null;
  operation?: string;
  scope?: string;
}

export interface EventCountRow {
  operation: string;
  kind: string;
  count: number;
}

/** [lo, hi) in epoch ms; ±Infinity = open. */
export type Span = readonly [number, number];

/** Which source counts which part of [from, to). Every instant of the range is in exactly one part. */
export interface CountPlan {
  /** Per tier used (finest first): its grain and the bucket ranges read from it. */
  tiers: { grainSeconds: number; spans: Span[] }[];
  /** Read from idempotency_events whether rolled up or not: the partial minutes at the edges (or all of a short range). */
  raw: Span[];
  /** The span the tiers cover, where events not rolled up yet (above the watermark, gaps) are added raw; null if none. */
  unrolled: Span | null;
}

const ceilTo = (ms: number, step: number) => (Number.isFinite(ms) ? Math.ceil(ms / step) * step : ms);
const floorTo = (ms: number, step: number) => (Number.isFinite(ms) ? Math.floor(ms / step) * step : ms);
const nonEmpty = (spans: Span[]) => spans.filter(([lo, hi]) => lo < hi);

/**
 * Splits [fromMs, toMs) between the tiers `grains` (seconds, finest first, each dividing the
 * next): the coarsest tier with a whole bucket inside the range takes the whole buckets;
 * each finer tier the whole buckets left at both edges; raw events the rest.
 */
export function planCounts(fromMs: number, toMs: number, grains: readonly number[] = ROLLUP_GRAINS): CountPlan {
  const g = grains.map((s) => s * 1000);
  const c = g.map((step) => ceilTo(fromMs, step));
  const f = g.map((step) => floorTo(toMs, step));
  let top = g.length - 1;
  while (top >= 0 && !(c[top] < f[top])) top--;
  if (top < 0) return { tiers: [], raw: nonEmpty([[fromMs, toMs]]), unrolled: null };
  const tiers = grains.slice(0, top + 1).map((grainSeconds, i) => ({
    grainSeconds,
    spans: nonEmpty(i === top ? [[c[i], f[i]]] : [[c[i], c[i + 1]], [f[i + 1], f[i]]]),
  }));
  return { tiers: tiers.filter((t) => t.spans.length), raw: nonEmpty([[fromMs, c[0]], [f[0], toMs]]), unrolled: [c[0], f[0]] };
}

const EPOCH = `timestamptz '1970-01-01 00:00:00+00'`;

/**
 * Exact event counts in [from, to) by operation and kind — per chart bucket too when
 * `stepSeconds` is given (date_bin from the epoch; then only tiers whose grain divides
 * the step are used). One statement: rollups, watermark and gaps in one snapshot. Every
 * bucket bound is a parameter, so each branch is a range of an index.
 * Rows: { b (with a step), operation, kind, n }.
 */
export function eventCountsSql(
  f: EventRangeFilter,
  opts: {
    stepSeconds?: number;
    /** The tiers it may read (default all); bench/read-side.ts compares [60], the minute tier alone. */
    grains?: readonly number[];
  } = {},
): { text: string; values: unknown[]; plan: CountPlan } {
  const step = opts.stepSeconds;
  if (step !== undefined && !(Number.isInteger(step) && step > 0 && step % 60 === 0)) {
    throw new Error(`eventCountsSql: step ${step} s is not a whole number of minutes`);
  }
  const grains = (opts.grains ?? ROLLUP_GRAINS).filter((g) => (ROLLUP_GRAINS as readonly number[]).includes(g) && (step === undefined || step % g === 0));
  const plan = planCounts(f.from ? f.from.getTime() : -Infinity, f.to ? f.to.getTime() : Infinity, grains);
  const p = paramList();
  const filters = (alias: string) =>
    [
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
      branches.push(
        tier.grainSeconds === 60
          ? `SELECT r.bucket AS t, r.operation, r.kind, r.count AS n FROM event_rollups r${where([...span("r.bucket", s), ...filters("r")])}`
          : `SELECT r.bucket AS t, r.operation, r.kind, r.count AS n FROM event_rollup_tiers r${where([
              `r.grain_seconds = ${p.add(tier.grainSeconds)}::int`,
              ...span("r.bucket", s),
              ...filters("r"),
            ])}`,
      );
    }
  }
  if (plan.unrolled) {
    // Inside the rolled-up span: what the rollups do not hold yet.
    branches.push(
      `SELECT e.occurred_at AS t, e.operation, e.kind, 1::bigint AS n FROM idempotency_events e${where([
        `e.id > (SELECT COALESCE(max(s.watermark), 0) FROM rollup_state s WHERE s.name = 'events')`,
        ...span("e.occurred_at", plan.unrolled),
        ...filters("e"),
      ])}`,
      `SELECT e.occurred_at AS t, e.operation, e.kind, 1::bigint AS n FROM rollup_gaps g JOIN idempotency_events e ON e.id = g.event_id${where([
        ...span("e.occurred_at", plan.unrolled),
        ...filters("e"),
      ])}`,
    );
  }
  for (const s of plan.raw) {
    branches.push(`SELECT e.occurred_at AS t, e.operation, e.kind, 1::bigint AS n FROM idempotency_events e${where([...span("e.occurred_at", s), ...filters("e")])}`);
  }
  if (!branches.length) branches.push(`SELECT NULL::timestamptz AS t, NULL::text AS operation, NULL::text AS kind, 0::bigint AS n WHERE FALSE`);
  const src = branches.join("\n        UNION ALL\n        ");
  const text =
    step === undefined
      ? `SELECT operation, kind, sum(n)::bigint AS n FROM (\n        ${src}\n      ) x GROUP BY 1, 2 ORDER BY 1, 2`
      : `SELECT date_bin(make_interval(secs => ${p.add(step)}::float8), t, ${EPOCH}) AS b, operation, kind, sum(n)::bigint AS n FROM (\n        ${src}\n      ) x GROUP BY 1, 2, 3`;
  return { text, values: p.values, plan };
}

/**
 * Exact event counts in [from, to) by operation and kind, from the rollup tiers plus
 * the few raw events they do not cover (one statement: one consistent snapshot).
 */
export async function countEvents(session: SqlExecutor, f: EventCountFilter): Promise<EventCountRow[]> {
  const q = eventCountsSql(f);
  const rows = await session.query<{ operation: string; kind: string; n: bigint }>(q.text, q.values);
  return rows.map((r) => ({ operation: r.operation, kind: r.kind, count: Number(r.n) }));
}
