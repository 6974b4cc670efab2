import { byDialect } from "../db/dialect";
import type { SqlExecutor } from "../db/sql";
import type { EventProtection, RecordProtection } from "./eligibility";
import { mysqlPurgeStore } from "./purge-store.mysql";
import { postgresPurgeStore } from "./purge-store.postgres";
import type { PolicyRule } from "./rules";

/** Rows past a policy's window: all of them, the eligible ones, and those each protection keeps (a row may count under several). */
export type WindowCounts<Reason extends string> = Record<"past" | "eligible" | Reason, bigint>;

export interface SampleRecord {
  id: bigint;
  scope: string;
  operation: string;
  status: string;
  expiresAt: Date;
}

/**
 * What an events batch did: how many events it took as candidates and how many it deleted (the
 * same on PostgreSQL, one statement; MySQL deletes those still eligible), and the highest
 * candidate id (null: none) — not the ids: a batch is up to 50,000 events.
 */
export interface DeletedEvents {
  candidates: number;
  deleted: number;
  last: bigint | null;
}

/**
 * The statements that judge and delete the writers' rows (ADR 0011), each with THE
 * eligibility condition of eligibility.ts: the dry run's counts, the estimates, and the
 * worker's batches with the locks a batch takes. `rules` are a run's (or the current)
 * policies; `only` narrows a window to one of them.
 */
export interface PurgeStore {
  /** Records past `only`'s window, with the eligible and the protected counts (the dry run, per policy). */
  recordWindowCounts(rules: readonly PolicyRule[], only: PolicyRule, asOf: Date): Promise<WindowCounts<RecordProtection>>;
  eventWindowCounts(rules: readonly PolicyRule[], only: PolicyRule, asOf: Date): Promise<WindowCounts<EventProtection>>;
  /** The first `limit` eligible records of `only`'s window, by id. */
  sampleRecords(rules: readonly PolicyRule[], only: PolicyRule, asOf: Date, limit: number): Promise<SampleRecord[]>;
  /** Eligible records, and events, under all of `rules`. */
  countEligibleRecords(rules: readonly PolicyRule[], asOf: Date): Promise<bigint>;
  countEligibleEvents(rules: readonly PolicyRule[], asOf: Date): Promise<bigint>;

  /** The highest record id (null: none). */
  maxRecordId(): Promise<bigint | null>;
  /** The highest event id a purge may reach: the last event, or the rollup watermark when that is lower. */
  maxEventId(): Promise<bigint | null>;
  /**
   * Runs `fn` (a batch, inside its transaction) under the batch's settings: every lock wait
   * bounded to a few seconds (a batch fails and is retried rather than waiting for ever), and
   * where the planner needs telling, plans that walk the batch's id window in id order.
   */
  withBatchSettings<T>(fn: () => Promise<T>): Promise<T>;
  /** Locks the next `batchSize` eligible records with lo < id ≤ hi (row locks until commit); their ids, ascending. */
  lockEligibleRecords(rules: readonly PolicyRule[], asOf: Date, lo: bigint, hi: bigint, batchSize: number): Promise<bigint[]>;
  /**
   * Deletes those of `ids` still eligible (checked again after the row locks) and takes them out
   * of the record census; how many. The caller is the census's writer (census.ts asCensusWriter).
   */
  deleteEligibleRecords(rules: readonly PolicyRule[], asOf: Date, ids: readonly bigint[]): Promise<number>;
  /**
   * Deletes the next `batchSize` eligible events with lo < id ≤ hi (append-only rows: not locked
   * first): DeletedEvents (its highest candidate is the batch's watermark when the batch was full).
   */
  deleteEligibleEvents(rules: readonly PolicyRule[], asOf: Date, lo: bigint, hi: bigint, batchSize: number): Promise<DeletedEvents>;
}

export function purgeStore(ex: SqlExecutor): PurgeStore {
  return byDialect(ex, { postgres: postgresPurgeStore, mysql: mysqlPurgeStore })(ex);
}
