import type { StuckThresholds } from "../records/config";
import { completedResponse, failedResponse, type CurrentState, type SettledRecord, type SettleRecordInput } from "./apply";
import { backoffSeconds, type ReconcileConfig } from "./config";
import type { ClaimedItem, ProviderAnswer, ReconcileAction } from "./core";

/**
 * Settle, the decision (no database, no clock of its own): from the provider's answer and
 * what the claim saw of the record and the item, what should happen — the record change
 * to try (the guarded transition of apply.ts), then, once it is known whether that
 * applied, what the item becomes, the check's action and its sentence. settle.ts
 * writes it in one transaction.
 *
 * - succeeded / failed: the record becomes completed / failed, the item resolved. When
 *   someone decided (or changed) the record first, nothing is overwritten: the provider
 *   agrees → the item is closed (confirmed); the record is decided otherwise → needs_manual;
 *   the record is still undecided (not stuck yet, or changed) → the item is checked again.
 * - unknown / unavailable: the item is checked again after an exponential backoff, or
 *   needs_manual after RECONCILE_MAX_ATTEMPTS; unusable (nothing to ask): needs_manual.
 */

/** What became of the record when the decision about the item is made. */
export type RecordSide =
  /** The guarded transition applied. */
  | { kind: "settled"; settled: SettledRecord }
  /** It did not: the record as it is now (someone decided or changed it first). */
  | { kind: "decided_first"; current: CurrentState }
  /** No final answer: the record is not touched. */
  | { kind: "untouched" };

/** What the item becomes (ReconcileStore.updateClaimedItem sets the resolution time). */
export interface ItemDecision {
  state: string;
  nextCheckAt: Date | null;
  lastError: string | null;
  resolution: unknown;
  resolvedBy: string | null;
}

export interface Decision {
  action: ReconcileAction;
  item: ItemDecision;
  providerReference: string | null;
  /** The audit entry's before/after (the record's, when it changed). */
  audit: { before: unknown; after: unknown };
}

export interface DecisionContext {
  config: ReconcileConfig;
  now: Date;
  /** Who checks (the audit actor's label). */
  by: string;
  reason: string | null;
}

const isFinal = (answer: ProviderAnswer): answer is Extract<ProviderAnswer, { kind: "succeeded" | "failed" }> =>
  answer.kind === "succeeded" || answer.kind === "failed";

/** The record change a final answer asks for; null when the provider has no final answer. */
export function recordChange(item: ClaimedItem, answer: ProviderAnswer, by: string, now: Date, stuck: StuckThresholds): SettleRecordInput | null {
  if (!isFinal(answer)) return null;
  const status = answer.kind === "succeeded" ? "completed" : "failed";
  return {
    recordId: item.recordId,
    expectedVersion: item.record.version,
    status,
    providerReference: answer.kind === "succeeded" ? answer.reference : null,
    response:
      answer.kind === "succeeded"
        ? completedResponse({
            providerReference: answer.reference,
            by: "reconciliation",
            at: now,
            amountMinor: answer.amountMinor,
            currency: answer.currency,
          })
        : failedResponse({ reason: answer.reason, by: "reconciliation", at: now }),
    lastError: answer.kind === "failed" ? `provider ${item.provider}: ${answer.reason}` : null,
    eventDetail: {
      by: "reconciliation",
      outcome: status,
      actor: by,
      itemId: item.id.toString(),
      provider: item.provider,
      ...(answer.kind === "succeeded" ? { providerReference: answer.reference } : { providerReason: answer.reason }),
    },
    now,
    stuck,
  };
}

const nextCheck = (attempts: number, ctx: DecisionContext) => new Date(ctx.now.getTime() + backoffSeconds(attempts, ctx.config) * 1000);

/** Why a final answer was not written although the record is undecided. */
function undecidedWhy(item: ClaimedItem, current: { status: string; version: number }): string {
  return current.version === item.record.version
    ? `the record is ${current.status} and not stuck yet (a worker may still finish it)`
    : `the record changed during the check (now ${current.status}, version ${current.version})`;
}

/** What the item becomes and what the check did, given what became of the record. */
export function decideItem(item: ClaimedItem, answer: ProviderAnswer, side: RecordSide, ctx: DecisionContext): Decision {
  const none = { providerReference: null, audit: { before: null, after: null } };
  if (!isFinal(answer)) {
    const attempts = item.attempts + 1;
    const giveUp = answer.kind === "unusable" || attempts >= ctx.config.maxAttempts;
    return {
      action: giveUp ? "needs_manual" : "rescheduled",
      item: {
        state: giveUp ? "needs_manual" : "open",
        nextCheckAt: giveUp ? null : nextCheck(attempts, ctx),
        lastError: answer.reason,
        resolution: null,
        resolvedBy: null,
      },
      ...none,
    };
  }
  if (side.kind === "untouched") throw new Error("a final answer is decided on once the record change was tried");
  const status = answer.kind === "succeeded" ? "completed" : "failed";
  const resolution = {
    by: "reconciliation",
    actor: ctx.by,
    provider: item.provider,
    answer: answer.kind,
    ...(answer.kind === "succeeded"
      ? { providerReference: answer.reference, amountMinor: answer.amountMinor?.toString() ?? null, currency: answer.currency }
      : { providerReason: answer.reason }),
    recordUpdated: side.kind === "settled",
    ...(ctx.reason ? { reason: ctx.reason } : {}),
  };
  const resolved = { state: `resolved_${answer.kind}`, nextCheckAt: null, lastError: null, resolution, resolvedBy: ctx.by };
  if (side.kind === "settled") {
    const { record, before } = side.settled;
    return {
      action: status,
      item: resolved,
      providerReference: record.providerReference,
      audit: { before, after: { status: record.status, version: record.version, providerReference: record.providerReference } },
    };
  }
  // Someone decided (or changed) the record first: record what the provider said, overwrite nothing.
  const { current } = side;
  if (current.status === status) return { action: "confirmed", item: resolved, ...none };
  if (current.status === "completed" || current.status === "failed") {
    const lastError = `the provider says ${answer.kind} but the record is ${current.status}: decide by hand (a compensation may be needed)`;
    return { action: "needs_manual", item: { state: "needs_manual", nextCheckAt: null, lastError, resolution, resolvedBy: null }, ...none };
  }
  const attempts = item.attempts + 1;
  return {
    action: "rescheduled",
    item: {
      state: "open",
      nextCheckAt: nextCheck(attempts, ctx),
      lastError: `${undecidedWhy(item, current)}; checking again`,
      resolution: null,
      resolvedBy: null,
    },
    ...none,
  };
}

/** The check's outcome in one readable sentence; `record` is the record as the outcome reports it. */
export function describe(item: ClaimedItem, answer: ProviderAnswer, action: ReconcileAction, record: { status: string; version: number } | null): string {
  if (isFinal(answer)) {
    if (action === "completed" || action === "failed") {
      return answer.kind === "succeeded"
        ? `The provider confirmed the charge (${answer.reference}): the record is completed.`
        : `The provider reports it failed (${answer.reason}): the record is failed.`;
    }
    const current = record!;
    if (action === "confirmed") return `The record was already ${current.status} (version ${current.version}); the provider agrees, so the item is closed.`;
    if (action === "needs_manual")
      return `The record is ${current.status} (version ${current.version}) but the provider says ${answer.kind}: the item needs a decision by hand.`;
    return `The provider says ${answer.kind}, but ${undecidedWhy(item, current)}: nothing was written, the item will be checked again.`;
  }
  const what = answer.kind === "unknown" ? `The provider has no final answer (${answer.reason})` : `The provider could not be asked (${answer.reason})`;
  if (action === "needs_manual") {
    return answer.kind === "unusable"
      ? `Nothing to ask the provider (${answer.reason}): the item needs a decision by hand.`
      : `${what}; after ${item.attempts + 1} attempts the item needs a decision by hand.`;
  }
  return `${what}; the record stays ${record?.status ?? "as it is"} until its next check.`;
}
