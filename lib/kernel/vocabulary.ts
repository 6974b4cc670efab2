/**
 * The words of the protocol and of the console's processes, each spelled once. SQL that
 * needs a list of them derives it with sqlList (a literal list for IN (…)), so a new state
 * is one edit here.
 */

/** idempotency_records.status (CHECK-constrained). */
export const RECORD_STATUSES = ["processing", "pending", "completed", "failed"] as const;
export type RecordStatus = (typeof RECORD_STATUSES)[number];

/** idempotency_events.kind (CHECK-constrained). */
export const EVENT_KINDS = ["reserved", "replayed", "conflict", "in_progress", "completed", "failed", "pending", "reconciled"] as const;
export type EventKind = (typeof EVENT_KINDS)[number];
/** The kinds that are a request (the denominator of replay and conflict rates). */
export const REQUEST_KINDS = ["reserved", "replayed", "conflict", "in_progress"] as const;

/** reconciliation_items.state, and the ones that still await a decision. */
export const RECONCILIATION_STATES = ["open", "checking", "resolved_succeeded", "resolved_failed", "needs_manual"] as const;
export type ReconciliationState = (typeof RECONCILIATION_STATES)[number];
export const OPEN_RECONCILIATION_STATES = ["open", "checking", "needs_manual"] as const;

/** A literal SQL list of vocabulary words: ('open', 'checking'). Only for these constants (no quotes in them). */
export function sqlList(words: readonly string[]): string {
  for (const w of words) if (!/^[a-z_]+$/.test(w)) throw new Error(`sqlList: ${JSON.stringify(w)} is not a vocabulary word`);
  return `(${words.map((w) => `'${w}'`).join(", ")})`;
}
