import { appendAudit, audit, type AuditActor, type RequestMeta } from "../audit";
import { auditActor, isSystemActor, type Actor } from "../auth/users";
import type { Database } from "../db/client";
import { txExecutor, type SqlExecutor } from "../db/sql";
import type { StuckThresholds } from "../records/config";
import { currentState, settleRecord } from "./apply";
import type { ReconcileConfig } from "./config";
import type { ClaimedItem, ProviderAnswer, ReconcileOutcome } from "./core";
import { decideItem, describe, recordChange, type ItemDecision, type RecordSide } from "./decide";
import { reconcileStore, type ItemRow } from "./store";

/**
 * Settle, the write (step 3 of core.ts): one transaction applies what decide.ts decides.
 * The record change is the guarded one of apply.ts (status + the version seen at the
 * claim), and the item update requires the claim to be still ours (state checking and
 * the claim's token): whoever got there first — a writer, an operator resolving by hand,
 * another checker after the lease — wins, and this result is recorded without
 * overwriting anything (superseded: the transaction rolls back). Resolutions are always
 * audited in the same transaction; an operator's check whatever it found.
 */

export const RECONCILE_ACTION = "records.reconcile";

export interface SettleContext {
  config: ReconcileConfig;
  stuck: StuckThresholds;
  clock: () => Date;
  request?: RequestMeta;
}

/** Thrown inside the settle transaction to roll it back when the claim is no longer ours. */
class ClaimLost extends Error {}

const labelOf = (a: AuditActor) => a.label ?? a.type;

/** Ends our claim of `item` as decided (null: the claim is no longer ours). */
function updateClaimedItem(ex: SqlExecutor, item: ClaimedItem, set: ItemDecision, now: Date): Promise<ItemRow | null> {
  const resolved = set.state === "resolved_succeeded" || set.state === "resolved_failed";
  return reconcileStore(ex).updateClaimedItem(item, { ...set, resolvedBy: resolved ? set.resolvedBy : null, resolvedAt: resolved ? now : null }, now);
}

export async function settle(
  db: Pick<Database, "prisma" | "sql" | "dialect">,
  item: ClaimedItem,
  answer: ProviderAnswer,
  actor: Actor,
  ctx: SettleContext,
  reason: string | null,
  auditAlways: boolean,
): Promise<ReconcileOutcome> {
  const who = auditActor(actor);
  const by = labelOf(who);
  const now = ctx.clock();
  const base = { recordId: item.recordId, itemId: item.id, answer: answer.kind };
  try {
    return await db.prisma.$transaction(async (tx) => {
      const ex = txExecutor(tx, db.dialect);
      let side: RecordSide = { kind: "untouched" };
      const change = recordChange(item, answer, by, now, ctx.stuck);
      if (change) {
        const settled = await settleRecord(ex, change);
        if (settled) side = { kind: "settled", settled };
        else {
          const current = await currentState(ex, item.recordId);
          if (!current) throw new ClaimLost(); // purged meanwhile: its items went with it
          side = { kind: "decided_first", current };
        }
      }
      const decision = decideItem(item, answer, side, { config: ctx.config, now, by, reason });
      const itemRow = await updateClaimedItem(ex, item, decision.item, now);
      if (!itemRow) throw new ClaimLost();
      let record: { status: string; version: number } | null;
      if (side.kind === "settled") record = { status: side.settled.record.status, version: side.settled.record.version };
      else if (side.kind === "decided_first") record = { status: side.current.status, version: side.current.version };
      else {
        const current = await currentState(ex, item.recordId);
        record = current && { status: current.status, version: current.version };
      }
      const { action } = decision;

      let auditId: bigint | null = null;
      // Resolutions are always audited; an operator's check whatever it found.
      if (auditAlways || action !== "rescheduled") {
        const entry = await appendAudit(tx, {
          actor: who,
          action: RECONCILE_ACTION,
          target: { table: "idempotency_records", id: item.recordId },
          before: decision.audit.before,
          after: decision.audit.after,
          reason: reason ?? (isSystemActor(actor) ? "background reconciliation" : null),
          request: ctx.request,
          outcome: "done",
          detail: {
            itemId: item.id,
            provider: item.provider,
            providerRequestId: item.providerRequestId,
            answer: answer.kind,
            ...(answer.kind === "succeeded" ? { providerReference: answer.reference } : { providerReason: answer.reason }),
            action,
            attempts: itemRow.attempts,
            itemState: itemRow.state,
          },
        });
        auditId = entry.id;
      }
      return {
        ...base,
        action,
        message: describe(item, answer, action, record),
        providerReference: decision.providerReference,
        record,
        item: itemRow,
        auditId,
      } satisfies ReconcileOutcome;
    });
  } catch (err) {
    if (!(err instanceof ClaimLost)) throw err;
    const current = await currentState(db.sql, item.recordId);
    let auditId: bigint | null = null;
    if (auditAlways) {
      const entry = await audit(db.prisma, {
        actor: who,
        action: RECONCILE_ACTION,
        target: { table: "idempotency_records", id: item.recordId },
        reason,
        request: ctx.request,
        outcome: "done",
        detail: { itemId: item.id, provider: item.provider, providerRequestId: item.providerRequestId, answer: answer.kind, action: "superseded" },
      });
      auditId = entry.id;
    }
    return {
      ...base,
      action: "superseded",
      message: `The item was resolved by someone else while the provider was being asked (the provider said ${answer.kind}); nothing was written.`,
      providerReference: null,
      record: current && { status: current.status, version: current.version },
      item: null,
      auditId,
    };
  }
}
