import { byDialect } from "../db/dialect";
import type { SqlExecutor } from "../db/sql";
import type { StuckThresholds } from "./config";
import type { QueueInput } from "./queue";
import { mysqlQueueStore } from "./queue-store.mysql";
import { postgresQueueStore } from "./queue-store.postgres";
import type { RecordSummary } from "./row";
import type { QueueKind } from "./vocabulary";

/** A queue row as the statement returns it: the record, its kind and age, and its newest open reconciliation item (ri_*, all null without one). */
export type QueueRow = RecordSummary & {
  kind: QueueKind;
  cursorTime: string;
  ageSeconds: number;
  ri_id: bigint | null;
  ri_state: string | null;
  ri_attempts: number | null;
  ri_last_checked_at: Date | null;
  ri_next_check_at: Date | null;
  ri_last_error: string | null;
  ri_created_at: Date | null;
};

/** The queue's counts as the statement returns them (counts as 64-bit integers). */
export interface QueueCountsRow {
  stuck: bigint;
  pending: bigint;
  /** Open reconciliation items (any record state). */
  open: bigint;
  /** Records neither processing nor pending with an open item. */
  other: bigint;
  oldestPending: Date | null;
  oldestStuck: Date | null;
}

/** The statements the stuck & pending queue runs (ADR 0011). */
export interface QueueStore {
  /**
   * One page of the queue: the records of the input's kinds (stuck at `now` under `thresholds`, pending, open
   * reconciliation) and filters, ordered by age on (updated_at, id) from the cursor; `limit + 1` rows to detect a next page.
   */
  page(input: QueueInput, thresholds: StuckThresholds, now: Date): Promise<QueueRow[]>;
  /** Queue-wide counts (no filters) and the oldest stuck and pending records' updated_at, at `now`. */
  counts(thresholds: StuckThresholds, now: Date): Promise<QueueCountsRow>;
}

export function queueStore(ex: SqlExecutor): QueueStore {
  return byDialect(ex, { postgres: postgresQueueStore, mysql: mysqlQueueStore })(ex);
}
