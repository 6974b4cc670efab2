import type { RequestMeta } from "../audit";
import { auditRefusals, requirePermission, type Actor, type SystemActor } from "../auth/users";
import type { Database } from "../db/client";
import { txExecutor } from "../db/sql";
import { adapterFor } from "../providers/registry";
import { ProviderUnavailableError, UnknownProviderError, type LookupOutcome } from "../providers/types";
import { readSideConfig, type StuckThresholds } from "../records/config";
import { checkAvailability, type NothingToCheckCause } from "./apply";
import { reconcileConfigFromEnv, type ReconcileConfig } from "./config";
import { RECONCILE_ACTION, settle, type SettleContext } from "./settle";
import { reconcileStore, type ClaimRow } from "./store";
import { ProblemError } from "../kernel/problem";
import { NotFoundError } from "../kernel/errors";

export { RECONCILE_ACTION } from "./settle";

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
 * 1. claim — one short transaction moves the item open → checking with a lease
 *    (next_check_at = now + RECONCILE_LEASE_SECONDS; updated_at becomes the claim's
 *    token, strictly newer than any earlier value): one statement on PostgreSQL, a few
 *    on MySQL. The row is picked with `FOR UPDATE SKIP LOCKED`, so two processes never
 *    claim the same item at once; a checking item whose lease ran out (its checker
 *    crashed) may be claimed again.
 * 2. lookup — adapterFor(item.provider).lookup(provider_request_id), outside any
 *    transaction: no lock is held while the provider takes its time.
 * 3. settle — one transaction: succeeded → the record becomes completed (provider
 *    reference, a stored response to replay), item resolved_succeeded; failed →
 *    record failed, item resolved_failed; unknown or unreachable → record stays,
 *    item back to open with attempts + 1, last_error and the next check after an
 *    exponential backoff, or needs_manual after RECONCILE_MAX_ATTEMPTS. What should
 *    happen is decide.ts (pure); the guarded transaction that writes it is settle.ts:
 *    the record update is the guarded one of apply.ts (status + the version seen at the
 *    claim), and the item update requires the claim to be still ours (state checking and
 *    the claim's token): whoever got there first — a writer, an operator resolving
 *    by hand, another checker after the lease — wins, and this result is recorded
 *    without overwriting anything. When the record was decided first and the
 *    provider disagrees, the item goes to needs_manual.
 *
 * Every resolution is audited (records.reconcile): by the operator who asked, or
 * by the system actor "reconciler" for the background worker. An operator's check
 * is audited whatever it found.
 */

export const RECONCILER_ACTOR: SystemActor = { type: "system", label: "reconciler" };

/** The database a check uses: the pool for the claim, Prisma for the settle transaction (and its dialect). */
export type ReconcileDb = Pick<Database, "prisma" | "sql" | "dialect">;

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

interface Ctx extends SettleContext {
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

const leaseEnd = (now: Date, leaseSeconds: number) => new Date(now.getTime() + leaseSeconds * 1000);

type ClaimDb = Pick<Database, "prisma" | "dialect">;

/** A claim's statements in their own short transaction (the row locks of SKIP LOCKED last until it commits). */
function inClaim<T>(db: ClaimDb, fn: (store: ReturnType<typeof reconcileStore>) => Promise<T>): Promise<T> {
  return db.prisma.$transaction((tx) => fn(reconcileStore(txExecutor(tx, db.dialect))), CLAIM_TX);
}
// Claims are short; under a burst of them the pool may be busy for a moment.
const CLAIM_TX = { maxWait: 15_000, timeout: 15_000 };

/**
 * Due items for the background reconciler: open with next_check_at reached, or
 * checking with an expired lease. At most `limit`, oldest due first.
 */
export async function claimDueItems(db: ClaimDb, limit: number, now: Date, config: Pick<ReconcileConfig, "leaseSeconds">): Promise<ClaimedItem[]> {
  const rows = await inClaim(db, (store) => store.claimDueItems(limit, now, leaseEnd(now, config.leaseSeconds)));
  return rows.map(toClaimed);
}

/**
 * The record's newest open item, for an operator's check: open or needs_manual
 * whatever its next check, or checking with an expired lease.
 */
export async function claimItemOfRecord(db: ClaimDb, recordId: bigint, now: Date, config: Pick<ReconcileConfig, "leaseSeconds">): Promise<ClaimedItem | null> {
  const item = await inClaim(db, (store) => store.claimItemOfRecord(recordId, now, leaseEnd(now, config.leaseSeconds)));
  return item && toClaimed(item);
}

/**
 * A record that is pending (or stuck) and names its provider request but has no
 * open item (an anomaly: markPending always opens one) gets one, already claimed.
 */
async function openClaimedItem(db: ClaimDb, recordId: bigint, now: Date, leaseSeconds: number): Promise<ClaimedItem | null> {
  const row = await inClaim(db, (store) => store.openClaimedItem(recordId, now, leaseEnd(now, leaseSeconds)));
  return row && toClaimed(row);
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
    if (err instanceof ProviderUnavailableError)
      return { kind: "unavailable", reason: `provider ${item.provider} unavailable (${err.causeKind}): ${err.message}` };
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
// 3. settle (one transaction: decide.ts decides, settle.ts writes)

/** Works one claimed item: asks the provider, then settles. Never throws for provider trouble. */
export async function reconcileClaimedItem(
  db: ReconcileDb,
  item: ClaimedItem,
  actor: Actor,
  opts: ReconcileOptions & { reason?: string | null; auditAlways?: boolean } = {},
): Promise<ReconcileOutcome> {
  const ctx = ctxOf(opts);
  ctx.onLookup?.(item);
  const answer = await askProvider(item);
  return settle(db, item, answer, actor, ctx, opts.reason ?? null, opts.auditAlways ?? false);
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
export async function reconcileRecord(db: ReconcileDb, recordId: bigint, actor: Actor, opts: ReconcileOptions & { reason: string }): Promise<ReconcileOutcome> {
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
