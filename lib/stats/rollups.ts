import { LOCKS } from "../db/locks";
import { inTransaction, SNAPSHOT, type SqlExecutor } from "../db/sql";
import {
  applyAggregateDrift,
  applyRecords,
  DEFAULT_SWEEP_RECORDS,
  driftRecords,
  readCensusDrift,
  recordDepartures,
  RECORDS_STATE,
  rewriteCensus,
  SWEEP_STATE,
  sweepIdsSql,
  type AppliedChanges,
  type CensusDrift,
} from "./census";
import { paramList } from "../db/params";

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
 * A guard trigger refuses any other writer of the rollups and the record census.
 *
 * Ids are handed out at INSERT but become visible at COMMIT, so an id below the
 * watermark can appear later (a writer's transaction was still open). Every id
 * missing below the watermark is remembered in rollup_gaps and counted when it
 * shows up; after GAP_GRACE it is taken as rolled back and forgotten.
 *
 * One snapshot per refresh transaction. The counts, the gaps it remembers and the
 * watermark it moves must describe the same set of visible events: read in READ
 * COMMITTED, each statement sees its own snapshot, and an event committing between the
 * statement that counts and the one that notes the gaps is neither counted nor
 * remembered — lost for good (issue 10). So each refresh transaction runs in REPEATABLE
 * READ, and takes the refresher's advisory lock at the session level BEFORE it begins:
 * its snapshot is then taken after the previous writer (another refresher, a purge batch,
 * a census repair) committed, so it sees their work and nothing can change under it.
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

const STATE = "events";
/** rollup_state row: when verifyRecordCensus last ran (updated_at) and how many records it was off by (watermark). */
export const CENSUS_VERIFIED = "census_verified";
export const GAP_GRACE_SECONDS = 15 * 60;

/** The tiers, finest first; each grain divides the next. 60 = event_rollups, the rest event_rollup_tiers. */
export const ROLLUP_GRAINS = [60, 900, 3600, 86400] as const;
export const COARSE_GRAINS = ROLLUP_GRAINS.slice(1);
/**
 * Set for its transaction by the only writers of the rollup tables and the record census
 * (checked by their guard trigger, migration 20261201010000_census_members).
 */
export const WRITER_FLAG = `SELECT set_config('idempotency_console.rollup_writer', 'members', true)`;
const MAX_BIGINT = 9223372036854775807n;

export interface RefreshResult {
  watermark: bigint;
  eventsCounted: number;
  batches: number;
  gapsOpen: number;
  /** Records the census counted, moved or took out in this refresh (events, new records and the sweep together). */
  census: AppliedChanges & { swept: number };
}

export interface RefreshOptions {
  /** At most this many event ids (and as many record ids) per transaction (default 50,000). */
  batchSize?: number;
  /** Records the sweep re-checks per refresh (default CENSUS_SWEEP_RECORDS or 5,000; 0 = none). */
  sweepRecords?: number;
}

export function sweepRecordsFromEnv(env: Record<string, string | undefined> = process.env): number {
  const n = Number(env.CENSUS_SWEEP_RECORDS ?? DEFAULT_SWEEP_RECORDS);
  return Number.isInteger(n) && n >= 0 ? n : DEFAULT_SWEEP_RECORDS;
}

/**
 * Rolls up everything new, in short transactions of at most `batchSize` ids, counts the
 * records those events and the new records name into the census, then sweeps the next
 * slice of the table. `session` must be one connection. One refresher at a time across
 * processes (advisory lock); a second caller waits, then finds little or nothing to do.
 */
export async function refreshRollups(session: SqlExecutor, opts: RefreshOptions = {}): Promise<RefreshResult> {
  const batchSize = BigInt(opts.batchSize ?? 50_000);
  const sweepRecords = opts.sweepRecords ?? sweepRecordsFromEnv();
  let eventsCounted = 0;
  let batches = 0;
  const census = { added: 0, moved: 0, gone: 0, swept: 0 };
  for (;;) {
    const batch = await asRollupWriter(session, async () => {
      await session.query(`INSERT INTO rollup_state (name) VALUES ($1), ($2) ON CONFLICT (name) DO NOTHING`, [STATE, RECORDS_STATE]);
      const state = await session.query<{ name: string; watermark: bigint }>(`SELECT name, watermark FROM rollup_state WHERE name IN ($1, $2)`, [STATE, RECORDS_STATE]);
      const watermark = state.find((s) => s.name === STATE)!.watermark;
      const recordMark = state.find((s) => s.name === RECORDS_STATE)!.watermark;
      const [{ max, maxRecord }] = await session.query<{ max: bigint | null; maxRecord: bigint | null }>(
        `SELECT (SELECT max(id) FROM idempotency_events) AS max, (SELECT max(id) FROM idempotency_records) AS "maxRecord"`,
      );
      const upTo = max === null ? watermark : max < watermark + batchSize ? max : watermark + batchSize;
      const recordsUpTo = maxRecord === null || maxRecord <= recordMark ? recordMark : maxRecord < recordMark + batchSize ? maxRecord : recordMark + batchSize;

      // New events in (watermark, upTo], plus earlier gaps that have become visible, into every tier at once.
      const [counted] = await session.query<{ n: bigint }>(
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
         )
         SELECT COALESCE(sum(n), 0)::bigint AS n FROM agg`,
        [watermark, upTo, COARSE_GRAINS],
      );
      // The records those events name and the new records (before the gaps they came from are forgotten).
      const applied = await applyRecords(
        session,
        `SELECT e.record_id AS id FROM idempotency_events e WHERE e.id > $1 AND e.id <= $2 AND e.record_id IS NOT NULL
         UNION
         SELECT e.record_id FROM rollup_gaps g JOIN idempotency_events e ON e.id = g.event_id WHERE e.record_id IS NOT NULL
         UNION
         SELECT r.id FROM idempotency_records r WHERE r.id > $3 AND r.id <= $4`,
        [watermark, upTo, recordMark, recordsUpTo],
      );
      await recordDepartures(session, { expires_moved: applied.moved, deleted_outside: applied.gone });
      await session.query(`DELETE FROM rollup_gaps g USING idempotency_events e WHERE e.id = g.event_id`);
      // Ids missing in (watermark, upTo]: not committed yet, or never will be. The sentinel
      // upTo + 1 closes the range, so ids after the last visible one (a batch ends at
      // watermark + batchSize, whatever is visible) are gaps too, not skipped.
      await session.query(
        `INSERT INTO rollup_gaps (event_id)
         SELECT generate_series(prev + 1, id - 1) FROM (
           SELECT id, lag(id, 1, $1::bigint) OVER (ORDER BY id) AS prev FROM (
             SELECT id FROM idempotency_events WHERE id > $1 AND id <= $2
             UNION ALL
             SELECT $2::bigint + 1
           ) ids
         ) t WHERE id - prev > 1
         ON CONFLICT (event_id) DO NOTHING`,
        [watermark, upTo],
      );
      await session.query(`DELETE FROM rollup_gaps WHERE seen_at < now() - make_interval(secs => $1)`, [GAP_GRACE_SECONDS]);
      await session.query(`UPDATE rollup_state SET watermark = $2, updated_at = now() WHERE name = $1`, [STATE, upTo]);
      await session.query(`UPDATE rollup_state SET watermark = $2, updated_at = now() WHERE name = $1`, [RECORDS_STATE, recordsUpTo]);
      const done = (max === null || upTo >= max) && (maxRecord === null || recordsUpTo >= maxRecord);
      return { upTo, counted: Number(counted.n), applied, done };
    });
    eventsCounted += batch.counted;
    census.added += batch.applied.added;
    census.moved += batch.applied.moved;
    census.gone += batch.applied.gone;
    batches++;
    if (batch.done) {
      if (sweepRecords > 0) census.swept = await sweepCensus(session, sweepRecords);
      const [{ n }] = await session.query<{ n: bigint }>(`SELECT count(*)::bigint AS n FROM rollup_gaps`);
      return { watermark: batch.upTo, eventsCounted, batches, gapsOpen: Number(n), census };
    }
  }
}

/**
 * Re-checks the next `limit` records (and the members in the same id range) against the
 * census, round the table: what a writer did without an event — a DELETE, an UPDATE of
 * expires_at, a record committed late — is repaired and reported as a departure.
 * Returns how many records it re-checked.
 */
export async function sweepCensus(session: SqlExecutor, limit: number): Promise<number> {
  return asRollupWriter(session, async () => {
    await session.query(`INSERT INTO rollup_state (name) VALUES ($1) ON CONFLICT (name) DO NOTHING`, [SWEEP_STATE]);
    const [{ watermark: from }] = await session.query<{ watermark: bigint }>(`SELECT watermark FROM rollup_state WHERE name = $1`, [SWEEP_STATE]);
    const [{ last, n }] = await session.query<{ last: bigint | null; n: bigint }>(
      `SELECT max(id) AS last, count(*)::bigint AS n FROM (SELECT id FROM idempotency_records WHERE id >= $1 ORDER BY id LIMIT $2) s`,
      [from, limit],
    );
    // A short slice reached the end of the table: take the members beyond it too, and start again at 0.
    const end = Number(n) < limit || last === null ? MAX_BIGINT : last + 1n;
    const applied = await applyRecords(session, sweepIdsSql(), [from, end]);
    await recordDepartures(session, { found_uncounted: applied.added, expires_moved: applied.moved, deleted_outside: applied.gone });
    await session.query(`UPDATE rollup_state SET watermark = $2, updated_at = now() WHERE name = $1`, [SWEEP_STATE, end === MAX_BIGINT ? 0n : end]);
    return Number(n);
  });
}

/**
 * One transaction as the writer of the rollups and the census: the refresher's advisory
 * lock taken at the session level first, then REPEATABLE READ (see the top: the
 * snapshot must be taken after the lock), with the guard trigger's flag.
 */
async function asRollupWriter<T>(session: SqlExecutor, fn: () => Promise<T>): Promise<T> {
  await session.query(`SELECT pg_advisory_lock($1)`, [LOCKS.rollups]);
  try {
    return await inTransaction(
      session,
      async () => {
        await session.query(WRITER_FLAG);
        return fn();
      },
      "BEGIN ISOLATION LEVEL REPEATABLE READ",
    );
  } finally {
    await session.query(`SELECT pg_advisory_unlock($1)`, [LOCKS.rollups]).catch(() => {});
  }
}

/** Throws every tier away and counts everything again (batched, resumable: counts stay exact meanwhile). */
export async function rebuildRollups(session: SqlExecutor, opts: RefreshOptions = {}): Promise<RefreshResult> {
  await asRollupWriter(session, async () => {
    await session.exec(`DELETE FROM event_rollups; DELETE FROM event_rollup_tiers; DELETE FROM rollup_gaps;`);
    await session.query(
      `INSERT INTO rollup_state (name, watermark) VALUES ($1, 0)
       ON CONFLICT (name) DO UPDATE SET watermark = 0, updated_at = now()`,
      [STATE],
    );
    await rewriteCensus(session);
  });
  return refreshRollups(session, opts);
}

/**
 * Recounts the record census from the records and repairs it; returns the drift it found
 * (per operation-hour, what the overview would have been off by): none, unless a writer
 * changed records without an event the refresh could see and the sweep has not reached
 * them yet (lib/stats/census.ts). The O(records) recount reads one REPEATABLE READ
 * snapshot without the refresher's lock (refreshes and purge batches go on meanwhile);
 * only the repair — record by record, as they are at that moment — takes it. Records
 * when it last ran (rollup_state 'census_verified').
 */
export async function verifyRecordCensus(session: SqlExecutor): Promise<CensusDrift[]> {
  const check = await inTransaction(session, () => readCensusDrift(session), SNAPSHOT);
  await repairRecordCensus(session, check);
  return check.drift;
}

/** Applies what a check read in an earlier snapshot, under the refresher's lock (see above). */
export async function repairRecordCensus(
  session: SqlExecutor,
  check: { drift: readonly CensusDrift[]; records: readonly bigint[]; aggregate: readonly CensusDrift[] },
): Promise<void> {
  await asRollupWriter(session, async () => {
    await applyAggregateDrift(session, check.aggregate);
    if (check.records.length) {
      const applied = await applyRecords(session, `SELECT unnest($1::bigint[]) AS id`, [`{${check.records.join(",")}}`]);
      await recordDepartures(session, { found_uncounted: applied.added, expires_moved: applied.moved, deleted_outside: applied.gone });
    }
    await session.query(
      `INSERT INTO rollup_state (name, watermark, updated_at) VALUES ($1, $2, now())
       ON CONFLICT (name) DO UPDATE SET watermark = EXCLUDED.watermark, updated_at = now()`,
      [CENSUS_VERIFIED, driftRecords(check.drift)],
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
