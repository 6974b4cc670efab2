import { byDialect } from "../db/dialect";
import type { SqlExecutor } from "../db/sql";
import type { StoredResponse } from "../idempotency/store";
import type { StuckThresholds } from "../records/config";
import type { RecordSummary } from "../records/row";
import { mysqlReconcileStore } from "./store.mysql";
import { postgresReconcileStore } from "./store.postgres";

/** A claimed item (state checking) with its record's state, as the claim returns it. */
export interface ClaimRow {
  id: bigint;
  recordId: bigint;
  provider: string;
  providerRequestId: string | null;
  attempts: number;
  /** updated_at as the claim set it. */
  claimToken: Date;
  leaseUntil: Date;
  previousState: string;
  recordStatus: string;
  recordVersion: number;
  recordOperation: string;
  recordUpdatedAt: Date;
}

/** How a claim ends for its item: what the item becomes. */
export interface ItemChange {
  state: string;
  nextCheckAt: Date | null;
  lastError: string | null;
  resolution: unknown;
  resolvedBy: string | null;
  resolvedAt: Date | null;
}

export interface ItemRow {
  state: string;
  attempts: number;
  nextCheckAt: Date | null;
  lastError: string | null;
}

export type FinalStatus = "completed" | "failed";

export interface SettleRecordInput {
  recordId: bigint;
  expectedVersion: number;
  status: FinalStatus;
  providerReference: string | null;
  /** What the effect created, when the operator knows it (kept as it is when null). */
  resource?: { type: string | null; id: string | null };
  response: StoredResponse;
  lastError: string | null;
  /** The 'reconciled' event's detail (e.g. { by: "hand", outcome, actor }). */
  eventDetail: Record<string, unknown>;
  now: Date;
  stuck: StuckThresholds;
}

/** The record as the guarded transition left it, with what it was before. */
export type SettleRow = RecordSummary & { beforeStatus: string; beforeReference: string | null };

export interface RecordStateRow {
  id: bigint;
  status: string;
  version: number;
  updatedAt: Date;
}

/** Records awaiting reconciliation that a bulk check selects (any of them may be absent). */
export interface AwaitingFilter {
  operation?: string;
  scope?: string;
  provider?: string;
}

/**
 * The statements of reconciliation (ADR 0011): claiming items (row locks that skip
 * locked rows, a lease, the claim's token), the guarded transition of a record to
 * completed or failed with its 'reconciled' event (apply.ts), the item's end, the bulk
 * selection, and the reconciler's one-instance lock. The claims and the settle take row locks:
 * run them in a transaction (txExecutor; one statement each on PostgreSQL, several on MySQL).
 */
export interface ReconcileStore {
  /** Claims due items — open with next_check_at reached, or checking with an expired lease — at most `limit`, oldest due first. */
  claimDueItems(limit: number, now: Date, leaseUntil: Date): Promise<ClaimRow[]>;
  /** Claims the record's newest open item: open or needs_manual whatever its next check, or checking with an expired lease. */
  claimItemOfRecord(recordId: bigint, now: Date, leaseUntil: Date): Promise<ClaimRow | null>;
  /** Opens an item, already claimed, for a record that names its provider request and has no open item. */
  openClaimedItem(recordId: bigint, now: Date, leaseUntil: Date): Promise<ClaimRow | null>;
  /** Ends the claim (attempts + 1) if it is still ours: state checking and the claim's token. */
  updateClaimedItem(item: { id: bigint; claimToken: Date }, change: ItemChange, now: Date): Promise<ItemRow | null>;
  /**
   * pending (or processing that is stuck) → completed | failed, in one statement that checks
   * the id, the status, the version seen and the stuck age, bumps the version, stores the
   * response and appends the 'reconciled' event. Nothing matched → null.
   */
  settleRecord(input: SettleRecordInput): Promise<SettleRow | null>;
  recordState(recordId: bigint): Promise<RecordStateRow | null>;
  /** Resolves the record's open items by hand; their ids. */
  resolveOpenItems(recordId: bigint, state: "resolved_succeeded" | "resolved_failed", resolution: unknown, resolvedBy: string, now: Date): Promise<bigint[]>;
  /** Pending records or records with an open item, matching the filter, oldest change first: the first `limit` ids… */
  awaitingIds(filter: AwaitingFilter, limit: number): Promise<bigint[]>;
  /** …and how many there are. */
  countAwaiting(filter: AwaitingFilter): Promise<bigint>;
  /** Runs `fn` only if this session gets the reconciler's lock (held through `fn`); null when another instance has it. */
  withReconcilerLock<T>(fn: () => Promise<T>): Promise<T | null>;
}

export function reconcileStore(ex: SqlExecutor): ReconcileStore {
  return byDialect(ex, { postgres: postgresReconcileStore, mysql: mysqlReconcileStore })(ex);
}
