import { byDialect } from "../db/dialect";
import type { SqlExecutor } from "../db/sql";
import type { CountPlan } from "./count-plan";
import { mysqlRollupStore } from "./rollup-store.mysql";
import { postgresRollupStore } from "./rollup-store.postgres";

/**
 * How long an id missing below the watermark is waited for before it is taken as rolled back
 * (a writer's transaction may commit that much after its INSERT), and how far back the census
 * looks for records that became failed by their updated_at (census.ts).
 */
export const GAP_GRACE_SECONDS = 15 * 60;

/** How far the refresh has looked: every event id and every record id at or below its mark. */
export interface RefreshMarks {
  events: bigint;
  records: bigint;
}

export interface EventCountsRow {
  operation: string;
  kind: string;
  n: bigint;
}

/** What the refresher's idle check found (one autocommit statement). */
export interface RefreshDue {
  /** Events, records or gaps the rollups and the census have not looked at. */
  due: boolean;
  /** The census check is due (null: its clock has not started). */
  verifyDue: boolean | null;
  /** The census check's clock has not started on this database. */
  verifyUnset: boolean;
}

/**
 * The statements of the rollups (ADR 0011): the writers' lock and flag, the refresh
 * batch (tiers, gaps, marks), the refresher's marks in rollup_state, and the exact event
 * counts. The decisions — batch bounds, when a gap is forgotten, which tier counts what
 * (count-plan.ts) — are lib/stats/rollups.ts's; these only run them.
 */
export interface RollupStore {
  /**
   * The writers' lock (LOCKS.rollups) at the session level, taken before the transaction
   * begins so that its snapshot follows the previous writer's commit.
   */
  lockWriter(): Promise<void>;
  unlockWriter(): Promise<void>;
  /** The same lock for the current transaction only (the purge's census step, inside its batch). */
  lockWriterForTransaction(): Promise<void>;
  /**
   * Marks the current transaction as a writer of the rollups and the census (their guard
   * trigger refuses any other); the first statement of a writer's transaction. MySQL: it also
   * takes the lock for the transaction, before any read (ADR 0012: a session lock does not
   * exclude the purge's transaction lock there, and the snapshot is taken by the first read).
   */
  markWriter(): Promise<void>;
  /** Ends the mark (MySQL: a session variable, which outlives the transaction on a pooled connection; PostgreSQL: nothing). */
  unmarkWriter(): Promise<void>;

  /** The events and records marks (their rows made at 0 the first time). */
  refreshMarks(): Promise<RefreshMarks>;
  /** The highest event and record ids visible (null: none). */
  highestIds(): Promise<{ event: bigint | null; record: bigint | null }>;
  /**
   * Adds the events in (from, upTo] and the gaps that have become visible to every tier at
   * once (the minute tier and the `coarseGrains`, re-binned from the minutes); returns how many.
   */
  rollUp(from: bigint, upTo: bigint, coarseGrains: readonly number[]): Promise<number>;
  /** Forgets the gaps whose event is visible now (counted by rollUp). */
  forgetFilledGaps(): Promise<void>;
  /** Remembers every id missing in (from, upTo] as a gap, the ids after the last visible one included. */
  noteGaps(from: bigint, upTo: bigint): Promise<void>;
  /** Forgets the gaps older than `seconds` (taken as rolled back). */
  forgetGapsOlderThan(seconds: number): Promise<void>;
  /**
   * Moves the marks. `refreshed`: this batch ends a refresh — the events row's updated_at (when
   * the rollups were last refreshed) becomes now; it also bounds the census's recently failed
   * records (census-store.*.ts RECENTLY_FAILED_SQL), which only a refresh's last batch applies.
   */
  setRefreshMarks(marks: RefreshMarks, refreshed: boolean): Promise<void>;
  gapsOpen(): Promise<number>;

  /** Where the census sweep goes on (the next record id to re-check; its row made at 0 the first time). */
  sweepMark(): Promise<bigint>;
  setSweepMark(next: bigint): Promise<void>;

  /** Throws every tier and gap away and sets the events mark back to 0 (a rebuild). */
  clearRollups(): Promise<void>;
  /** The census check ran now, and was off by `driftRecords` records. */
  noteCensusVerified(driftRecords: number): Promise<void>;

  /** The refresher's idle check, and whether the census check (every `verifySeconds`; 0 = never) is due. */
  refreshDue(verifySeconds: number): Promise<RefreshDue>;
  /** Starts the census check's clock (no check at boot); nothing if it runs already. */
  startVerifyClock(): Promise<void>;

  /** Exact event counts by operation and kind, as `plan` splits the range, in one statement (one snapshot). */
  eventCounts(plan: CountPlan, f: { operation?: string; scope?: string }): Promise<EventCountsRow[]>;
}

export function rollupStore(ex: SqlExecutor): RollupStore {
  return byDialect(ex, { postgres: postgresRollupStore, mysql: mysqlRollupStore })(ex);
}
