import { z } from "zod";
import type { SqlExecutor } from "../db/sql";
import { operationSchema, scopeSchema } from "../idempotency/schemas";
import { readSideConfig, thresholdFor, type StuckThresholds } from "./config";
import type { RecordSummary } from "./row";
import { cursorParam, encodeCursor, limitParam, type KeysetPosition } from "../db/paging";
import { optional } from "../kernel/input";
import type { Page } from "../db/paging";
import { queueStore } from "./queue-store";
import { QUEUE_KINDS, type QueueKind } from "./vocabulary";

/**
 * The stuck & pending queue: what an operator has to look at.
 * - stuck: `processing` and unchanged for longer than its operation's threshold
 *   (STUCK_THRESHOLDS, default 5 minutes: lib/records/config.ts) — the worker died;
 * - pending: the outcome at the provider is unknown (a timeout), awaiting reconciliation;
 * - reconciliation: an open reconciliation item (open, checking, needs_manual) whose record
 *   is neither — the two disagree, which is worth a look too.
 * Each row carries its newest open reconciliation item (attempts, last and next check).
 *
 * Age is the time since the record last changed (updated_at), i.e. how long it has been in
 * its current state; "oldest first" is the default order. Keyset-paginated on
 * (updated_at, id). The statements, and the index each kind is read from, are in
 * queue-store.postgres.ts.
 */

export const queueQuerySchema = z
  .object({
    kind: optional(z.enum([...QUEUE_KINDS, "all"])),
    operation: optional(operationSchema),
    scope: optional(scopeSchema),
    /** The record's status: processing (only stuck ones are listed) or pending. */
    status: optional(z.enum(["processing", "pending"])),
    provider: optional(z.string().trim().min(1).max(100)),
    /** age_desc: oldest first (default); age_asc: newest first. */
    sort: optional(z.enum(["age_desc", "age_asc"])),
    limit: limitParam,
    cursor: optional(cursorParam),
  })
  .strict();

export type QueueQuery = z.output<typeof queueQuerySchema>;
export type QueueInput = Partial<Omit<QueueQuery, "limit">> & { limit?: number };

export interface ReconciliationSummary {
  id: bigint;
  state: string;
  attempts: number;
  lastCheckedAt: Date | null;
  nextCheckAt: Date | null;
  lastError: string | null;
  createdAt: Date;
}

export interface QueueItem extends RecordSummary {
  kind: QueueKind;
  /** Seconds since updated_at, at `asOf`. */
  ageSeconds: number;
  /** The stuck threshold that applied (stuck rows only). */
  thresholdSeconds: number | null;
  reconciliation: ReconciliationSummary | null;
}

export interface QueueSummary {
  stuck: number;
  pending: number;
  /** Open reconciliation items (any record state). */
  openReconciliation: number;
  /** Records neither processing nor pending that have an open item: the "reconciliation" kind. */
  reconciliationOther: number;
  oldestPendingSince: Date | null;
  oldestStuckSince: Date | null;
}

export interface QueueResult extends Page<QueueItem> {
  asOf: Date;
  thresholds: StuckThresholds;
  summary: QueueSummary;
}

export async function stuckAndPending(sql: SqlExecutor, input: QueueInput, opts: { now?: Date; thresholds?: StuckThresholds } = {}): Promise<QueueResult> {
  const now = opts.now ?? new Date();
  const thresholds = opts.thresholds ?? readSideConfig().stuck;
  const limit = input.limit ?? 50;
  const [rows, summary] = await Promise.all([queueStore(sql).page(input, thresholds, now), queueSummary(sql, thresholds, now)]);
  const more = rows.length > limit;
  const page = more ? rows.slice(0, limit) : rows;
  const items: QueueItem[] = page.map((row) => {
    const { cursorTime: _c, ri_id, ri_state, ri_attempts, ri_last_checked_at, ri_next_check_at, ri_last_error, ri_created_at, ...rec } = row;
    return {
      ...rec,
      ageSeconds: Math.max(0, Math.floor(row.ageSeconds)),
      thresholdSeconds: row.kind === "stuck" ? thresholdFor(thresholds, row.operation) : null,
      reconciliation:
        ri_id === null
          ? null
          : {
              id: ri_id,
              state: ri_state!,
              attempts: ri_attempts!,
              lastCheckedAt: ri_last_checked_at,
              nextCheckAt: ri_next_check_at,
              lastError: ri_last_error,
              createdAt: ri_created_at!,
            },
    };
  });
  const last: KeysetPosition | null = more ? { t: rows[limit - 1].cursorTime, id: rows[limit - 1].id } : null;
  return { items, nextCursor: last ? encodeCursor(last) : null, limit, asOf: now, thresholds, summary };
}

/** Queue-wide counts (no filters), each an index range. */
export async function queueSummary(sql: SqlExecutor, thresholds: StuckThresholds, now: Date): Promise<QueueSummary> {
  const row = await queueStore(sql).counts(thresholds, now);
  return {
    stuck: Number(row.stuck),
    pending: Number(row.pending),
    openReconciliation: Number(row.open),
    reconciliationOther: Number(row.other),
    oldestPendingSince: row.oldestPending,
    oldestStuckSince: row.oldestStuck,
  };
}
