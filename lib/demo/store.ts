import { byDialect } from "../db/dialect";
import type { SqlExecutor } from "../db/sql";
import { mysqlDemoStore } from "./store.mysql";
import { postgresDemoStore } from "./store.postgres";

/** One batch of bulk volume data: the series indexes [from, to) of `seed` (lib/demo/bulk.ts says what the rows are). */
export interface BulkBatch {
  seed: number;
  from: number;
  /** Exclusive. */
  to: number;
  /**
   * The whole load's indexes, [first, first + records): a record's day follows its place in them
   * (the oldest first), so ids ascend with created_at as when writers insert at now().
   */
  load: { first: number; records: number };
  now: Date;
  /** created_at spreads over this many days before `now`. */
  days: number;
  eventsPerRecord: number;
  /** 1000 buckets → UTC hour of day: the daily rhythm as a lookup table. */
  hourTable: number[];
  /** How long each operation's record protects its intent (seconds). */
  ttlSeconds: Record<string, number>;
}

/** What one batch wrote (counts; the driver's integer type). */
export type BulkBatchCounts = Record<
  | "records"
  | "completed"
  | "failed"
  | "pending"
  | "processing"
  | "dups"
  | "events"
  | "ev_reserved"
  | "ev_completed"
  | "ev_failed"
  | "ev_pending"
  | "ev_replayed"
  | "ev_conflict"
  | "ev_in_progress"
  | "items",
  bigint | number | string
>;

/** A record a worker is still on, as the live demo reads it. */
export interface InFlightRow {
  id: bigint;
  operation: string;
  amount_minor: bigint | null;
  currency: string | null;
}

/** What the simulated outbox dispatcher did to one record's message. */
export interface OutboxDispatch {
  recordId: bigint;
  topic: string;
  status: string;
  attempts: number;
  sentAt: Date | null;
  nextAttemptAt: Date | null;
  lastError: string | null;
}

/** The statements the demo data runs (ADR 0011). */
export interface DemoStore {
  /**
   * Writes one batch — records, exactly `eventsPerRecord` events each, an open reconciliation item per pending record —
   * in one statement, skipping indexes whose key exists already; returns what it wrote.
   */
  insertBulkBatch(batch: BulkBatch): Promise<BulkBatchCounts>;
  /** The records still processing that were created at or after `since`. */
  processingSince(since: Date): Promise<InFlightRow[]>;
  /** Applies what the dispatcher did to messages still pending and never attempted (one statement per call). */
  dispatchOutbox(rows: readonly OutboxDispatch[]): Promise<void>;
}

export function demoStore(ex: SqlExecutor): DemoStore {
  return byDialect(ex, { postgres: postgresDemoStore, mysql: mysqlDemoStore })(ex);
}
