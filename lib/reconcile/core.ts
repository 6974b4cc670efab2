import { OPEN_RECONCILIATION_STATES, sqlList } from "../kernel/vocabulary";
import { Prisma } from "../generated/prisma/client";
import { appendAudit, audit, type AuditActor, type RequestMeta } from "../audit";
import { auditActor, auditRefusals, isSystemActor, requirePermission, type Actor, type SystemActor } from "../auth/users";
import type { Database } from "../db/client";
import { adapterFor } from "../providers/registry";
import { ProviderUnavailableError, UnknownProviderError, type LookupOutcome } from "../providers/types";
import { readSideConfig, type StuckThresholds } from "../records/config";
import { checkAvailability, completedResponse, currentState, failedResponse, settleRecord, type NothingToCheckCause } from "./apply";
import { backoffSeconds, reconcileConfigFromEnv, type ReconcileConfig } from "./config";
import { ProblemError } from "../kernel/problem";
import { NotFoundError } from "../kernel/errors";


/**
 * 409: asking the provider cannot work for this record (no open item and no provider
 * request to ask about, not stuck yet, or another check running). Its own problem type
 * and `cause`, so a bulk check names the real reason per row — nothing changed.
 */
export class NothingToCheckError extends ProblemError {
  constructor(detail: string, cause: NothingToCheckCause, current: Record<string, unknown>) {
    super(409, "nothing-to-check", "Nothing to ask the provider", detail, { cause, current });
  }
}

/**
 * Reconciliation: ask the provider what became of an uncertain request, then
 * resolve accordingly. Three steps, and only the first and last touch the database:
 *
 * 1. claim — one short statement moves the item open → checking with a lease
 *    (next_check_at = now + RECONCILE_LEASE_SECONDS; updated_at becomes the claim's
 *    token, strictly newer than any earlier value). The row is picked with
 *    `FOR UPDATE SKIP LOCKED`, so two processes never claim the same item at once;
 *    a checking item whose lease ran out (its checker crashed) may be claimed again.
 * 2. lookup — adapterFor(item.provider).lookup(provider_request_id), outside any
 *    transaction: no lock is held while the provider takes its time.
 * 3. settle — one transaction: succeeded → the record becomes completed (provider
 *    reference, a stored response to replay), item resolved_succeeded; failed →
 *    record failed, item resolved_failed; unknown or unreachable → record stays,
 *    item back to open with attempts + 1, last_error and the next check after an
 *    exponential backoff, or needs_manual after RECONCILE_MAX_ATTEMPTS. The record
 *    update is the guarded one of apply.ts (status + the version seen at the claim),
 *    and the item update requires the claim to be still ours (state checking and
 *    the claim's token): whoever got there first — a writer, an operator resolving
 *    by hand, another checker after the lease — wins, and this result is recorded
 *    without overwriting anything. When the record was decided first and the
 *    provider disagrees, the item goes to needs_manual.
 *
 * Every resolution is audited (records.reconcile): by the operator who asked, or
 * by the system actor "reconciler" for the background worker. An operator's check
 * is audited whatever it found.
 */

export const RECONCILE_ACTION = "records.reconcile";
export const RECONCILER_ACTOR: SystemActor = { type: "system", label: "reconciler" };

type Tx = Prisma.TransactionClient;

/** An item this process holds (state checking, until the lease ends). */
export interface ClaimedItem {
  id: bigint;
  recordId: bigint;
  provider: string;
  providerRequestId: string | null;
  attempts: number;
  /** The claim's token: the item's updated_at as the claim set it. */
  claimToken: Date;
  leaseUntil: Date;
  previousState: string;
  record: { status: string; version: number; operation: string; updatedAt: Date };
}

/** What the provider said (or why it could not be asked). */
export type ProviderAnswer =
  | { kind: "succeeded"; reference: string; amountMinor: bigint | null; currency: string | null }
  | { kind: "failed"; reason: string }
  | { kind: "unknown"; reason: string }
  | { kind: "unavailable"; reason: string }
  | { kind: "unusable"; reason: string };

/**
 * What a check ended in:
 * - completed / failed: the record was resolved;
 * - rescheduled: no final answer; the item waits for its next check;
 * - needs_manual: the item gave up (max attempts, nothing to ask, or the provider disagrees with a decided record);
 * - confirmed: the record had already been decided (by a writer or an operator) and the provider agrees; the item is closed;
 * - superseded: the claim was no longer ours when the answer came (someone resolved the item meanwhile); nothing written.
 */
export type ReconcileAction = "completed" | "failed" | "rescheduled" | "needs_manual" | "confirmed" | "superseded";

export interface ReconcileOutcome {
  recordId: bigint;
  itemId: bigint;
  answer: ProviderAnswer["kind"];
  action: ReconcileAction;
  /** One readable sentence. */
  message: string;
  providerReference: string | null;
  record: { status: string; version: number } | null;
  item: { state: string; attempts: number; nextCheckAt: Date | null; lastError: string | null } | null;
  auditId: bigint | null;
}

export interface ReconcileOptions {
  config?: ReconcileConfig;
  stuck?: StuckThresholds;
  clock?: () => Date;
  request?: RequestMeta;
  /** Called once per provider lookup (tests count them; metrics could). */
  onLookup?: (item: ClaimedItem) => void;
}

interface Ctx {
  config: ReconcileConfig;
  stuck: StuckThresholds;
  clock: () => Date;
  request?: RequestMeta;
  onLookup?: (item: ClaimedItem) => void;
}

function ctxOf(opts: ReconcileOptions): Ctx {
  return {
    config: opts.config ?? reconcileConfigFromEnv(),
    stuck: opts.stuck ?? readSideConfig().stuck,
    clock: opts.clock ?? (() => new Date()),
    request: opts.request,
    onLookup: opts.onLookup,
  };
}

// ---------------------------------------------------------------------------
// 1. claim

type ClaimRow = {
  id: bigint;
  recordId: bigint;
  provider: string;
  providerRequestId: string | null;
  attempts: number;
  claimToken: Date;
  leaseUntil: Date;
  previousState: string;
  recordStatus: string;
  recordVersion: number;
  recordOperation: string;
  recordUpdatedAt: Date;
};

const toClaimed = (r: ClaimRow): ClaimedItem => ({
  id: r.id,
  recordId: r.recordId,
  provider: r.provider,
  providerRequestId: r.providerRequestId,
  attempts: r.attempts,
  claimToken: r.claimToken,
  leaseUntil: r.leaseUntil,
  previousState: r.previousState,
  record: { status: r.recordStatus, version: r.recordVersion, operation: r.recordOperation, updatedAt: r.recordUpdatedAt },
});

/** Moves the picked rows to checking (the pick locks them with SKIP LOCKED) and returns them with their record's state. */
async function claimWhere(db: Pick<Database, "prisma">, pick: Prisma.Sql, now: Date, leaseSeconds: number): Promise<ClaimedItem[]> {
  const leaseUntil = new Date(now.getTime() + leaseSeconds * 1000);
  const rows = await db.prisma.$queryRaw<ClaimRow[]>`
    WITH pick AS (${pick}),
    claimed AS (
      UPDATE reconciliation_items i SET state = 'checking', next_check_at = ${leaseUntil}::timestamptz,
        updated_at = date_trunc('milliseconds', GREATEST(${now}::timestamptz, i.updated_at + interval '1 millisecond'))
      FROM pick WHERE i.id = pick.id
      RETURNING i.id, i.record_id, i.provider, i.provider_request_id, i.attempts, i.updated_at, i.next_check_at, pick.state AS previous_state
    )
    SELECT c.id, c.record_id AS "recordId", c.provider, c.provider_request_id AS "providerRequestId", c.attempts,
           c.updated_at AS "claimToken", c.next_check_at AS "leaseUntil", c.previous_state AS "previousState",
           r.status AS "recordStatus", r.version AS "recordVersion", r.operation AS "recordOperation", r.updated_at AS "recordUpdatedAt"
      FROM claimed c JOIN idempotency_records r ON r.id = c.record_id
     ORDER BY c.id`;
  return rows.map(toClaimed);
}

/**
 * Due items for the background reconciler: open with next_check_at reached, or
 * checking with an expired lease. At most `limit`, oldest due first.
 */
export function claimDueItems(db: Pick<Database, "prisma">, limit: number, now: Date, config: Pick<ReconcileConfig, "leaseSeconds">): Promise<ClaimedItem[]> {
  return claimWhere(
    db,
    Prisma.sql`SELECT id, state FROM reconciliation_items
      WHERE (state = 'open' AND (next_check_at IS NULL OR next_check_at <= ${now}::timestamptz))
         OR (state = 'checking' AND next_check_at <= ${now}::timestamptz)
      ORDER BY next_check_at NULLS FIRST, id LIMIT ${limit}::int FOR UPDATE SKIP LOCKED`,
    now,
    config.leaseSeconds,
  );
}

/**
 * The record's newest open item, for an operator's check: open or needs_manual
 * whatever its next check, or checking with an expired lease.
 */
export async function claimItemOfRecord(
  db: Pick<Database, "prisma">,
  recordId: bigint,
  now: Date,
  config: Pick<ReconcileConfig, "leaseSeconds">,
): Promise<ClaimedItem | null> {
  const [item] = await claimWhere(
    db,
    Prisma.sql`SELECT id, state FROM reconciliation_items
      WHERE record_id = ${recordId} AND (state IN ('open', 'needs_manual') OR (state = 'checking' AND next_check_at <= ${now}::timestamptz))
      ORDER BY created_at DESC, id DESC LIMIT 1 FOR UPDATE SKIP LOCKED`,
    now,
    config.leaseSeconds,
  );
  return item ?? null;
}

/**
 * A record that is pending (or stuck) and names its provider request but has no
 * open item (an anomaly: markPending always opens one) gets one, already claimed.
 */
async function openClaimedItem(db: Pick<Database, "prisma">, recordId: bigint, now: Date, leaseSeconds: number): Promise<ClaimedItem | null> {
  const leaseUntil = new Date(now.getTime() + leaseSeconds * 1000);
  const rows = await db.prisma.$queryRaw<ClaimRow[]>`
    WITH ins AS (
      INSERT INTO reconciliation_items (record_id, provider, provider_request_id, state, next_check_at, created_at, updated_at)
      SELECT id, provider, provider_request_id, 'checking', ${leaseUntil}::timestamptz, ${now}::timestamptz, date_trunc('milliseconds', ${now}::timestamptz)
        FROM idempotency_records r
       WHERE r.id = ${recordId} AND r.provider IS NOT NULL AND r.provider_request_id IS NOT NULL
         AND NOT EXISTS (SELECT 1 FROM reconciliation_items x WHERE x.record_id = r.id AND x.state IN ${Prisma.raw(sqlList(OPEN_RECONCILIATION_STATES))})
      RETURNING *
    )
    SELECT c.id, c.record_id AS "recordId", c.provider, c.provider_request_id AS "providerRequestId", c.attempts,
           c.updated_at AS "claimToken", c.next_check_at AS "leaseUntil", 'open' AS "previousState",
           r.status AS "recordStatus", r.version AS "recordVersion", r.operation AS "recordOperation", r.updated_at AS "recordUpdatedAt"
      FROM ins c JOIN idempotency_records r ON r.id = c.record_id`;
  return rows[0] ? toClaimed(rows[0]) : null;
}

// ---------------------------------------------------------------------------
// 2. lookup (no transaction, no lock)

const errText = (err: unknown) => (err instanceof Error ? err.message : String(err));

export async function askProvider(item: ClaimedItem): Promise<ProviderAnswer> {
  if (!item.providerRequestId) {
    return { kind: "unusable", reason: "the item names no provider request id: there is nothing to ask the provider" };
  }
  let answer: LookupOutcome;
  try {
    answer = await adapterFor(item.provider).lookup(item.providerRequestId);
  } catch (err) {
    if (err instanceof ProviderUnavailableError) return { kind: "unavailable", reason: `provider ${item.provider} unavailable (${err.causeKind}): ${err.message}` };
    if (err instanceof UnknownProviderError) return { kind: "unavailable", reason: err.message };
    return { kind: "unavailable", reason: `lookup at ${item.provider} failed: ${errText(err)}` };
  }
  switch (answer.status) {
    case "succeeded":
      return { kind: "succeeded", reference: answer.reference, amountMinor: answer.amountMinor, currency: answer.currency };
    case "failed":
      return { kind: "failed", reason: answer.reason };
    default:
      return { kind: "unknown", reason: answer.reason };
  }
}

// ---------------------------------------------------------------------------
// 3. settle (one transaction)

/** Thrown inside the settle transaction to roll it back when the claim is no longer ours. */
class ClaimLost extends Error {}

interface ItemRow {
  state: string;
  attempts: number;
  nextCheckAt: Date | null;
  lastError: string | null;
}

async function updateClaimedItem(
  tx: Tx,
  item: ClaimedItem,
  set: { state: string; nextCheckAt: Date | null; lastError: string | null; resolution: unknown; resolvedBy: string | null },
  now: Date,
): Promise<ItemRow | null> {
  const resolved = set.state === "resolved_succeeded" || set.state === "resolved_failed";
  const rows = await tx.$queryRaw<ItemRow[]>`
    UPDATE reconciliation_items SET state = ${set.state}, attempts = attempts + 1, last_checked_at = ${now}::timestamptz,
      next_check_at = ${set.nextCheckAt}::timestamptz, last_error = ${set.lastError},
      resolution = ${set.resolution === null ? null : JSON.stringify(set.resolution)}::jsonb,
      resolved_by = ${resolved ? set.resolvedBy : null}, resolved_at = ${resolved ? now : null}::timestamptz, updated_at = ${now}::timestamptz
    WHERE id = ${item.id} AND state = 'checking' AND updated_at = ${item.claimToken}::timestamptz
    RETURNING state, attempts, next_check_at AS "nextCheckAt", last_error AS "lastError"`;
  return rows[0] ?? null;
}

const labelOf = (a: AuditActor) => a.label ?? a.type;

/** Works one claimed item: asks the provider, then settles. Never throws for provider trouble. */
export async function reconcileClaimedItem(db: Pick<Database, "prisma">, item: ClaimedItem, actor: Actor, opts: ReconcileOptions & { reason?: string | null; auditAlways?: boolean } = {}): Promise<ReconcileOutcome> {
  const ctx = ctxOf(opts);
  ctx.onLookup?.(item);
  const answer = await askProvider(item);
  return settle(db, item, answer, actor, ctx, opts.reason ?? null, opts.auditAlways ?? false);
}

async function settle(
  db: Pick<Database, "prisma">,
  item: ClaimedItem,
  answer: ProviderAnswer,
  actor: Actor,
  ctx: Ctx,
  reason: string | null,
  auditAlways: boolean,
): Promise<ReconcileOutcome> {
  const who = auditActor(actor);
  const by = labelOf(who);
  const now = ctx.clock();
  const base = { recordId: item.recordId, itemId: item.id, answer: answer.kind };
  try {
    return await db.prisma.$transaction(async (tx) => {
      let action: ReconcileAction;
      let message: string;
      let itemRow: ItemRow | null;
      let record: { status: string; version: number } | null = null;
      let providerReference: string | null = null;
      let auditBefore: unknown = null;
      let auditAfter: unknown = null;

      if (answer.kind === "succeeded" || answer.kind === "failed") {
        const status = answer.kind === "succeeded" ? "completed" : "failed";
        const settled = await settleRecord(tx, {
          recordId: item.recordId,
          expectedVersion: item.record.version,
          status,
          providerReference: answer.kind === "succeeded" ? answer.reference : null,
          response:
            answer.kind === "succeeded"
              ? completedResponse({ providerReference: answer.reference, by: "reconciliation", at: now, amountMinor: answer.amountMinor, currency: answer.currency })
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
          stuck: ctx.stuck,
        });
        const resolution = {
          by: "reconciliation",
          actor: by,
          provider: item.provider,
          answer: answer.kind,
          ...(answer.kind === "succeeded"
            ? { providerReference: answer.reference, amountMinor: answer.amountMinor?.toString() ?? null, currency: answer.currency }
            : { providerReason: answer.reason }),
          recordUpdated: Boolean(settled),
          ...(reason ? { reason } : {}),
        };
        if (settled) {
          itemRow = await updateClaimedItem(tx, item, { state: `resolved_${answer.kind}`, nextCheckAt: null, lastError: null, resolution, resolvedBy: by }, now);
          if (!itemRow) throw new ClaimLost();
          action = status;
          record = { status: settled.record.status, version: settled.record.version };
          providerReference = settled.record.providerReference;
          auditBefore = settled.before;
          auditAfter = { status: settled.record.status, version: settled.record.version, providerReference: settled.record.providerReference };
          message =
            answer.kind === "succeeded"
              ? `The provider confirmed the charge (${answer.reference}): the record is completed.`
              : `The provider reports it failed (${answer.reason}): the record is failed.`;
        } else {
          // Someone decided (or changed) the record first: record what the provider said, overwrite nothing.
          const current = await currentState(tx, item.recordId);
          if (!current) throw new ClaimLost(); // purged meanwhile: its items went with it
          record = { status: current.status, version: current.version };
          const agrees = current.status === status;
          const decided = current.status === "completed" || current.status === "failed";
          if (agrees) {
            itemRow = await updateClaimedItem(tx, item, { state: `resolved_${answer.kind}`, nextCheckAt: null, lastError: null, resolution, resolvedBy: by }, now);
            action = "confirmed";
            message = `The record was already ${current.status} (version ${current.version}); the provider agrees, so the item is closed.`;
          } else if (decided) {
            const lastError = `the provider says ${answer.kind} but the record is ${current.status}: decide by hand (a compensation may be needed)`;
            itemRow = await updateClaimedItem(tx, item, { state: "needs_manual", nextCheckAt: null, lastError, resolution, resolvedBy: null }, now);
            action = "needs_manual";
            message = `The record is ${current.status} (version ${current.version}) but the provider says ${answer.kind}: the item needs a decision by hand.`;
          } else {
            const attempts = item.attempts + 1;
            const next = new Date(now.getTime() + backoffSeconds(attempts, ctx.config) * 1000);
            const why =
              current.version === item.record.version
                ? `the record is ${current.status} and not stuck yet (a worker may still finish it)`
                : `the record changed during the check (now ${current.status}, version ${current.version})`;
            itemRow = await updateClaimedItem(tx, item, { state: "open", nextCheckAt: next, lastError: `${why}; checking again`, resolution: null, resolvedBy: null }, now);
            action = "rescheduled";
            message = `The provider says ${answer.kind}, but ${why}: nothing was written, the item will be checked again.`;
          }
          if (!itemRow) throw new ClaimLost();
        }
      } else {
        const attempts = item.attempts + 1;
        const giveUp = answer.kind === "unusable" || attempts >= ctx.config.maxAttempts;
        const next = giveUp ? null : new Date(now.getTime() + backoffSeconds(attempts, ctx.config) * 1000);
        itemRow = await updateClaimedItem(
          tx,
          item,
          { state: giveUp ? "needs_manual" : "open", nextCheckAt: next, lastError: answer.reason, resolution: null, resolvedBy: null },
          now,
        );
        if (!itemRow) throw new ClaimLost();
        const current = await currentState(tx, item.recordId);
        record = current && { status: current.status, version: current.version };
        action = giveUp ? "needs_manual" : "rescheduled";
        const what = answer.kind === "unknown" ? `The provider has no final answer (${answer.reason})` : `The provider could not be asked (${answer.reason})`;
        message = giveUp
          ? answer.kind === "unusable"
            ? `Nothing to ask the provider (${answer.reason}): the item needs a decision by hand.`
            : `${what}; after ${attempts} attempts the item needs a decision by hand.`
          : `${what}; the record stays ${record?.status ?? "as it is"} until its next check.`;
      }

      let auditId: bigint | null = null;
      // Resolutions are always audited; an operator's check whatever it found.
      if (auditAlways || action !== "rescheduled") {
        const entry = await appendAudit(tx, {
          actor: who,
          action: RECONCILE_ACTION,
          target: { table: "idempotency_records", id: item.recordId },
          before: auditBefore,
          after: auditAfter,
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
            attempts: itemRow!.attempts,
            itemState: itemRow!.state,
          },
        });
        auditId = entry.id;
      }
      return { ...base, action, message, providerReference, record, item: itemRow, auditId } satisfies ReconcileOutcome;
    });
  } catch (err) {
    if (!(err instanceof ClaimLost)) throw err;
    const current = await currentState(db.prisma, item.recordId);
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

// ---------------------------------------------------------------------------
// An operator's check of one record

/**
 * POST /api/v1/records/{id}/reconcile: claims the record's open item (or opens
 * one for a pending/stuck record that names its provider request), asks the
 * provider, settles, and audits the check whatever it found. 404 when the record
 * does not exist; 409 when there is nothing to check or another process is
 * checking it right now.
 */
export async function reconcileRecord(
  db: Pick<Database, "prisma">,
  recordId: bigint,
  actor: Actor,
  opts: ReconcileOptions & { reason: string },
): Promise<ReconcileOutcome> {
  const target = { table: "idempotency_records", id: recordId };
  return auditRefusals(db.prisma, actor, { action: RECONCILE_ACTION, target, reason: opts.reason, request: opts.request }, async () => {
    requirePermission(actor, "records.reconcile");
    const ctx = ctxOf(opts);
    const now = ctx.clock();
    let item = await claimItemOfRecord(db, recordId, now, ctx.config);
    if (!item) {
      const record = await db.prisma.idempotencyRecord.findUnique({
        where: { id: recordId },
        select: { id: true, status: true, version: true, updatedAt: true, operation: true, providerRequestId: true, provider: true },
      });
      if (!record) throw new NotFoundError(`idempotency record ${recordId} does not exist`);
      const state = { status: record.status, version: record.version, updatedAt: record.updatedAt.toISOString() };
      const busy = await db.prisma.reconciliationItem.findFirst({
        where: { recordId, state: "checking" },
        orderBy: { nextCheckAt: "desc" },
        select: { nextCheckAt: true },
      });
      const can = checkAvailability(record, { openItem: false, checking: busy !== null }, now, ctx.stuck);
      if (can.allowed) item = await openClaimedItem(db, recordId, now, ctx.config.leaseSeconds);
      if (!item) {
        const detail =
          can.cause === "checking"
            ? `Another check of this record is running right now (its claim lasts until ${busy?.nextCheckAt?.toISOString() ?? "?"}); wait for its result.`
            : can.cause === "no_provider_request"
              ? `The record is ${record.status} but names no provider request id, so there is nothing to ask the provider: resolve it by hand.`
              : `Nothing to reconcile: the record is ${record.status} (version ${record.version}) and has no open reconciliation item.`;
        throw new NothingToCheckError(detail, can.cause ?? "not_open", state);
      }
    }
    ctx.onLookup?.(item);
    const answer = await askProvider(item);
    return settle(db, item, answer, actor, ctx, opts.reason, true);
  });
}
