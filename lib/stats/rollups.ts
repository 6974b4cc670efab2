import { inSnapshot, inTransaction, type SqlExecutor } from "../db/sql";
import {
  applyAggregateDrift,
  DEFAULT_SWEEP_RECORDS,
  driftRecords,
  readCensusDrift,
  recordDepartures,
  rewriteCensus,
  type AppliedChanges,
  type CensusDrift,
} from "./census";
import { censusStore } from "./census-store";
import { COARSE_GRAINS, countPlan, type EventCountFilter } from "./count-plan";
import { GAP_GRACE_SECONDS, rollupStore } from "./rollup-store";

export { COARSE_GRAINS, planCounts, ROLLUP_GRAINS, type CountPlan, type EventCountFilter, type EventRangeFilter, type Span } from "./count-plan";

/**
 * Rollups of idempotency_events by (operation, scope, kind), kept incrementally from an
 * id watermark, in tiers:
 * - minute: event_rollups (one row per minute × operation × scope × kind);
 * - 15 minutes, hour, day: event_rollup_tiers (grain_seconds 900 / 3600 / 86400);
 * - over every scope: event_rollup_totals (every grain, the minute's too, without the scope):
 *   what a count without a scope filter reads, so it does not grow with the scopes (ADR 0019).
 * One refresh statement adds the same new events to every tier (the coarse tiers and the
 * totals are the minute counts re-binned), from the same watermark, in the same transaction as the
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
 * (MySQL/MariaDB: the snapshot is taken by the first read, so the lock is the transaction's
 * first statement, and the services' tables are read only by plain SELECTs in the snapshot:
 * rollup-store.mysql.ts.)
 *
 * The statements: rollup-store.ts (the interface), rollup-store.postgres.ts and
 * rollup-store.mysql.ts; the census's: census-store.ts. This module decides what they run on (batch bounds, gaps,
 * the sweep's slice, the check and its repair).
 *
 * Counts of a range [from, to) are exact at any moment (countEvents, one statement,
 * so one snapshot; count-plan.ts decides which tier counts what): the coarsest usable
 * tier for the whole buckets in the middle, the next finer tiers for the partial
 * buckets at both edges, down to whole minutes, plus
 * the raw events of the partial minutes at both edges, plus the raw events the rollups
 * do not cover yet (above the watermark, or a gap) inside the minute-covered span.
 * A 30-day range reads ~30 day buckets + ≤ 46 hour + ≤ 6 quarter-hour + ≤ 28 minute
 * buckets (per operation × scope × kind) instead of 43,200 minutes.
 *
 * Rollups are history: purging old events (retention) does not lower them.
 */

export { GAP_GRACE_SECONDS } from "./rollup-store";
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
  /**
   * How long an id missing below the watermark is waited for before it is taken as rolled back
   * (default GAP_GRACE_SECONDS). 0 forgets those noted by an earlier transaction: only where no
   * writer can still commit one (a bench's bulk load, whose multi-row inserts leave id holes).
   */
  gapGraceSeconds?: number;
  /** Called after each committed batch (a long catch-up is many: progress while it runs). */
  onBatch?: () => void;
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
  const rollups = rollupStore(session);
  let eventsCounted = 0;
  let batches = 0;
  const census = { added: 0, moved: 0, gone: 0, failedChanged: 0, swept: 0 };
  for (;;) {
    const batch = await asRollupWriter(session, async () => {
      const { events: watermark, records: recordMark } = await rollups.refreshMarks();
      const { event: max, record: maxRecord } = await rollups.highestIds();
      const upTo = max === null ? watermark : max < watermark + batchSize ? max : watermark + batchSize;
      const recordsUpTo = maxRecord === null || maxRecord <= recordMark ? recordMark : maxRecord < recordMark + batchSize ? maxRecord : recordMark + batchSize;

      const done = (max === null || upTo >= max) && (maxRecord === null || recordsUpTo >= maxRecord);

      // New events in (watermark, upTo], plus earlier gaps that have become visible, into every tier at once.
      const counted = await rollups.rollUp(watermark, upTo, COARSE_GRAINS);
      // The records those events name and the new records (before the gaps they came from are
      // forgotten); in the last batch, the records that became failed lately too (the batch that
      // moves the time they are read from: setRefreshMarks).
      const applied = await censusStore(session).applyTouched({ from: watermark, upTo }, { from: recordMark, upTo: recordsUpTo }, done);
      await recordDepartures(session, { expires_moved: applied.moved, deleted_outside: applied.gone });
      await rollups.forgetFilledGaps();
      // Ids missing in (watermark, upTo]: not committed yet, or never will be. Ids after the
      // last visible one (a batch ends at watermark + batchSize, whatever is visible) are
      // gaps too, not skipped.
      await rollups.noteGaps(watermark, upTo);
      await rollups.forgetGapsOlderThan(opts.gapGraceSeconds ?? GAP_GRACE_SECONDS);
      await rollups.setRefreshMarks({ events: upTo, records: recordsUpTo }, done);
      return { upTo, counted, applied, done };
    });
    eventsCounted += batch.counted;
    census.added += batch.applied.added;
    census.moved += batch.applied.moved;
    census.gone += batch.applied.gone;
    census.failedChanged += batch.applied.failedChanged;
    batches++;
    opts.onBatch?.();
    if (batch.done) {
      if (sweepRecords > 0) census.swept = await sweepCensus(session, sweepRecords);
      return { watermark: batch.upTo, eventsCounted, batches, gapsOpen: await rollups.gapsOpen(), census };
    }
  }
}

/**
 * Re-checks the next `limit` records (and the members in the same id range) against the
 * census, round the table: what a writer did without an event — a DELETE, an UPDATE of
 * expires_at, a record committed late, a status set to failed without an event or updated_at —
 * is repaired and reported as a departure.
 * Returns how many records it re-checked.
 */
export async function sweepCensus(session: SqlExecutor, limit: number): Promise<number> {
  const rollups = rollupStore(session);
  const census = censusStore(session);
  return asRollupWriter(session, async () => {
    const from = await rollups.sweepMark();
    const { last, n } = await census.sweepSlice(from, limit);
    // A short slice reached the end of the table: take the members beyond it too, and start again at 0.
    const end = Number(n) < limit || last === null ? MAX_BIGINT : last + 1n;
    const applied = await census.applySwept(from, end);
    await recordDepartures(session, {
      found_uncounted: applied.added,
      expires_moved: applied.moved,
      deleted_outside: applied.gone,
      failed_unseen: applied.failedChanged,
    });
    await rollups.setSweepMark(end === MAX_BIGINT ? 0n : end);
    return Number(n);
  });
}

/**
 * One transaction as the writer of the rollups and the census: the refresher's advisory
 * lock taken at the session level first, then REPEATABLE READ (see the top: the
 * snapshot must be taken after the lock; dialect.beginRepeatableRead begins it so that
 * the first read takes it), with the guard trigger's flag.
 */
async function asRollupWriter<T>(session: SqlExecutor, fn: () => Promise<T>): Promise<T> {
  const writer = rollupStore(session);
  await writer.lockWriter();
  try {
    return await inTransaction(
      session,
      async () => {
        await writer.markWriter();
        return fn();
      },
      session.dialect.beginRepeatableRead,
    );
  } finally {
    await writer.unmarkWriter().catch(() => {});
    await writer.unlockWriter().catch(() => {});
  }
}

/** Throws every tier away and counts everything again (batched, resumable: counts stay exact meanwhile). */
export async function rebuildRollups(session: SqlExecutor, opts: RefreshOptions = {}): Promise<RefreshResult> {
  await asRollupWriter(session, async () => {
    await rollupStore(session).clearRollups();
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
  const check = await inSnapshot(session, () => readCensusDrift(session));
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
      const applied = await censusStore(session).applyRecords(check.records);
      await recordDepartures(session, {
        found_uncounted: applied.added,
        expires_moved: applied.moved,
        deleted_outside: applied.gone,
        failed_unseen: applied.failedChanged,
      });
    }
    await rollupStore(session).noteCensusVerified(driftRecords(check.drift));
  });
}

// ---------------------------------------------------------------------------
// Reading: exact event counts (countEvents; the overview's series and totals and the
// metrics counters read the same statement, rollup-store.postgres.ts countsSql).

export interface EventCountRow {
  operation: string;
  kind: string;
  count: number;
}

/**
 * Exact event counts in [from, to) by operation and kind, from the rollup tiers plus
 * the few raw events they do not cover (one statement: one consistent snapshot).
 */
export async function countEvents(session: SqlExecutor, f: EventCountFilter): Promise<EventCountRow[]> {
  const rows = await rollupStore(session).eventCounts(countPlan(f), f);
  return rows.map((r) => ({ operation: r.operation, kind: r.kind, count: Number(r.n) }));
}
