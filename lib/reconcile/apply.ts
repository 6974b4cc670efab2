import type { SqlExecutor } from "../db/sql";
import type { HeaderPairs, StoredResponse } from "../idempotency/store";
import type { StuckThresholds } from "../records/config";
import type { RecordSummary } from "../records/row";
import { reconcileStore, type SettleRecordInput } from "./store";

export type { FinalStatus, SettleRecordInput } from "./store";

/**
 * The one guarded transition both "resolve by hand" and reconciliation make on a
 * record: pending (or processing that is stuck) → completed | failed, in ONE
 * conditional UPDATE that checks the id, the allowed status, the version the
 * caller saw (and, for processing, the stuck age), bumps the version, stores the
 * response later retries replay, and appends the 'reconciled' event in the same
 * statement (ReconcileStore.settleRecord). Nothing matched → null: the caller decides
 * between 404 and 409 and never overwrites. Writers' complete/fail only act on
 * status = 'processing', so row locks plus these conditions arbitrate a writer racing an
 * operator: whoever commits first wins; the other's condition no longer holds.
 */

/** The record's state the guard compares against (and 409s report). */
export interface CurrentState {
  id: string;
  status: string;
  version: number;
  updatedAt: Date;
}

export interface SettledRecord {
  record: RecordSummary;
  /** The state the record was in (status, provider reference) at expectedVersion. */
  before: { status: string; version: number; providerReference: string | null };
}

/** Applies the guarded transition on `ex` (inside the caller's transaction). */
export async function settleRecord(ex: SqlExecutor, input: SettleRecordInput): Promise<SettledRecord | null> {
  const row = await reconcileStore(ex).settleRecord(input);
  if (!row) return null;
  const { beforeStatus, beforeReference, ...record } = row;
  return { record, before: { status: beforeStatus, version: input.expectedVersion, providerReference: beforeReference } };
}

/** The record's current state (null when it does not exist). */
export async function currentState(ex: SqlExecutor, recordId: bigint): Promise<CurrentState | null> {
  const r = await reconcileStore(ex).recordState(recordId);
  return r ? { id: r.id.toString(), status: r.status, version: r.version, updatedAt: r.updatedAt } : null;
}

/** Whether a record in this state may be resolved at `now` (same rule as the SQL guard). */
export function isResolvable(record: { status: string; operation: string; updatedAt: Date }, now: Date, stuck: StuckThresholds): boolean {
  if (record.status === "pending") return true;
  if (record.status !== "processing") return false;
  const threshold = stuck.byOperation[record.operation] ?? stuck.defaultSeconds;
  return record.updatedAt.getTime() < now.getTime() - threshold * 1000;
}

/** Why "Check with provider" cannot work on a record right now (null: it can). */
export type NothingToCheckCause = "no_provider_request" | "not_open" | "not_stuck_yet" | "checking";

export interface CheckAvailability {
  allowed: boolean;
  cause: NothingToCheckCause | null;
  /** For the operator: why not, and what to do instead. */
  reason: string | null;
}

/**
 * Whether asking the provider can work for this record: it has an open reconciliation
 * item, or it is pending / stuck and names the provider request to ask about. The
 * record page disables the action with this reason; POST …/reconcile refuses with it.
 */
export function checkAvailability(
  record: { status: string; operation: string; updatedAt: Date; providerRequestId: string | null; provider?: string | null },
  items: { openItem: boolean; checking: boolean },
  now: Date,
  stuck: StuckThresholds,
): CheckAvailability {
  if (items.checking) return { allowed: false, cause: "checking", reason: "Another check of this record is running right now; wait for its result." };
  if (items.openItem) return { allowed: true, cause: null, reason: null };
  if (record.status !== "pending" && record.status !== "processing") {
    return {
      allowed: false,
      cause: "not_open",
      reason: `The record is ${record.status} and has no open reconciliation item: there is nothing to ask the provider.`,
    };
  }
  if (!isResolvable(record, now, stuck)) {
    const threshold = stuck.byOperation[record.operation] ?? stuck.defaultSeconds;
    return {
      allowed: false,
      cause: "not_stuck_yet",
      reason: `The record is processing (its worker may still be running); it can be checked once it is stuck, ${Math.round(threshold / 60)} min after its last change.`,
    };
  }
  if (!record.providerRequestId) {
    return {
      allowed: false,
      cause: "no_provider_request",
      reason: `The record names no provider request id, so there is nothing to ask the provider: resolve it by hand with what the provider's dashboard shows.`,
    };
  }
  return { allowed: true, cause: null, reason: null };
}

const JSON_HEADERS: HeaderPairs = [["content-type", "application/json"]];
const PROBLEM_HEADERS: HeaderPairs = [["content-type", "application/problem+json"]];

/**
 * What a retry of the original request replays once the record is completed by hand or
 * by reconciliation and the service's own response is not known (the outcome was
 * uncertain, so it was never recorded): a small JSON answer saying what is known, with a
 * top-level `resolution` member ({ by, at, … }) that marks it as the console's (README,
 * writers' contract: a service that must replay its own shape rebuilds it from
 * resource_type/resource_id when it sees one). An operator who knows the service's
 * response gives it instead (lib/records/resolve.ts).
 */
export function completedResponse(opts: {
  providerReference: string;
  by: "hand" | "reconciliation";
  at: Date;
  amountMinor?: bigint | null;
  currency?: string | null;
}): StoredResponse {
  const body = {
    status: "completed",
    providerReference: opts.providerReference,
    ...(opts.amountMinor !== undefined && opts.amountMinor !== null ? { amountMinor: opts.amountMinor.toString(), currency: opts.currency ?? null } : {}),
    resolution: {
      by: opts.by,
      at: opts.at.toISOString(),
      note:
        opts.by === "hand"
          ? "Resolved by hand by an operator: the provider's reference was confirmed; the original response was not recorded."
          : "Confirmed with the provider by reconciliation; the original response was not recorded.",
    },
  };
  return { code: 200, headers: JSON_HEADERS, body: JSON.stringify(body) };
}

/** The error response a retry replays once the record is failed by hand or by reconciliation (RFC 9457). */
export function failedResponse(opts: { reason: string; by: "hand" | "reconciliation"; at: Date }): StoredResponse {
  const body = {
    type: "https://idempotency-console.dev/problems/operation-failed",
    title: "The operation failed",
    status: 422,
    detail: opts.reason,
    resolution: { by: opts.by, at: opts.at.toISOString() },
  };
  return { code: 422, headers: PROBLEM_HEADERS, body: JSON.stringify(body) };
}
