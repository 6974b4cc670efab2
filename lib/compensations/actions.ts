import { txExecutor } from "../db/sql";
import { randomBytes } from "node:crypto";
import { compensability } from "./compensable";
import { actorOf, appendAudit, type RequestMeta } from "../audit";
import type { Principal } from "../auth/permissions";
import { auditRefusals } from "../auth/users";
import type { Database } from "../db/client";
import type { SqlExecutor } from "../db/sql";
import { adapterFor } from "../providers/registry";
import { ProviderUnavailableError, UnknownProviderError } from "../providers/types";
import { leaseSeconds as configuredLease } from "./config";
import {
  COMPENSATION_STATES,
  COMPENSATIONS_TABLE,
  getCompensation,
  listCompensations,
  OUTCOME_UNKNOWN_PREFIX,
  viewOf,
  type CompensationRow,
  type CompensationState,
  type CompensationView,
  type ListQuery,
  type RequestBody,
} from "./model";
import { ProblemError } from "../kernel/problem";
import { NotFoundError, StateConflictError } from "../kernel/errors";
import { ForbiddenError } from "../kernel/errors";
import type { Page } from "../db/paging";
import { compensationStore, type CompensatedRecord, type CompensationStore } from "./store";

/**
 * The compensation process: request → four-eyes decision → execution through the
 * provider adapter (retryable). Rules:
 * - Every state change is one short transaction that also appends its audit entry
 *   (lib/audit appendAudit), guarded by the row's state and `version`; refusals decided
 *   here (403/404/409/422) are audited as "refused" (auditRefusals) after the rollback.
 * - A request locks the record (SELECT … FOR UPDATE) before summing what the record's
 *   other compensations already claim, so concurrent requests cannot together exceed
 *   the charged amount. A retry re-checks the same way (a failed compensation the
 *   provider refused stopped claiming; another one may have claimed the amount since).
 * - The provider is called OUTSIDE any transaction, after `executing` (attempts + 1,
 *   last_attempt_at) committed, always with the compensation's own
 *   provider_idempotency_key: a timeout or lost answer is recorded as `failed` with
 *   last_error "outcome unknown …", and a retry asks again with the same key, so the
 *   provider refunds at most once however often it is retried.
 * - Lock order is record, then compensation, everywhere: no deadlocks between them.
 */

export interface CompensationContext {
  database: Pick<Database, "prisma" | "sql" | "dialect">;
  principal: Principal;
  request?: RequestMeta;
  /** Overrides COMPENSATION_LEASE_SECONDS (see config.ts). */
  leaseSeconds?: number;
}

/** Lock waits are part of the design (record lock, audit chain lock): allow for them. */
const TX_OPTIONS = { maxWait: 15_000, timeout: 30_000 };

const lease = (ctx: CompensationContext) => ctx.leaseSeconds ?? configuredLease();
const target = (id: bigint) => ({ table: COMPENSATIONS_TABLE, id });

/** What the audit trail keeps of a compensation (no computed columns). */
function snapshot(row: CompensationRow) {
  const { claimsAmount: _c, stale: _s, ...rest } = row;
  return rest;
}

function current(row: CompensationRow) {
  return {
    id: row.id.toString(),
    state: row.state,
    version: row.version,
    attempts: row.attempts,
    decidedBy: row.decidedByLabel,
    lastAttemptAt: row.lastAttemptAt?.toISOString() ?? null,
    lastError: row.lastError,
  };
}

// --- Errors ---------------------------------------------------------------------------------

export class NotCompensableError extends ProblemError {
  constructor(detail: string, current: Record<string, unknown>) {
    super(409, "record-not-compensable", "The record cannot be compensated", detail, { current });
  }
}

export class ExceedsRemainingError extends ProblemError {
  constructor(detail: string, current: Record<string, unknown>) {
    super(409, "compensation-exceeds-remaining", "Amount exceeds what is left to compensate", detail, { current });
  }
}

export class UnprocessableCompensationError extends ProblemError {
  constructor(slug: string, title: string, detail: string, extensions: Record<string, unknown> = {}) {
    super(422, slug, title, detail, extensions);
  }
}

// --- Reading (with the viewer's allowed actions) ----------------------------------------------

export async function compensationView(ctx: CompensationContext, id: bigint): Promise<CompensationView> {
  return viewOf(await getCompensation(ctx.database.sql, id, lease(ctx)), ctx.principal);
}

/** GET /api/v1/compensations: newest request first, keyset-paginated, each with what the viewer may do. */
export async function listCompensationViews(
  ctx: CompensationContext,
  query: ListQuery,
): Promise<Page<CompensationView> & { counts: Record<CompensationState, number> }> {
  const [page, counts] = await Promise.all([listCompensations(ctx.database.sql, { ...query, leaseSeconds: lease(ctx) }), countByState(ctx.database.sql)]);
  return { ...page, items: page.items.map((row) => viewOf(row, ctx.principal)), counts };
}

/** Compensations per state (the screen's tab counts): one pass over (state, requested_at). */
export async function countByState(sql: SqlExecutor): Promise<Record<CompensationState, number>> {
  const rows = await compensationStore(sql).countByState();
  const counts = Object.fromEntries(COMPENSATION_STATES.map((s) => [s, 0])) as Record<CompensationState, number>;
  for (const r of rows) counts[r.state] = Number(r.n);
  return counts;
}

// --- Request ----------------------------------------------------------------------------------

function checkRemaining(record: CompensatedRecord, claimedMinor: bigint, amountMinor: bigint): void {
  const original = record.amountMinor!;
  const remaining = original - claimedMinor;
  if (amountMinor > remaining) {
    throw new ExceedsRemainingError(
      `Record ${record.id} was charged ${original} ${record.currency} (minor units); other compensations already claim ${claimedMinor}, so at most ${remaining > 0n ? remaining : 0n} is left, not ${amountMinor}.`,
      {
        recordId: record.id.toString(),
        originalMinor: original.toString(),
        claimedMinor: claimedMinor.toString(),
        remainingMinor: (remaining > 0n ? remaining : 0n).toString(),
        currency: record.currency,
      },
    );
  }
}

export function newProviderIdempotencyKey(): string {
  return `comp_${randomBytes(18).toString("base64url")}`;
}

/**
 * Requests a compensation of a completed record's charge (state `requested`; someone
 * else must approve it). 404 no such record; 409 not completed / no provider
 * reference, amount or currency / amount above what is left; 422 currency other than
 * the record's, or a related record that does not exist or belongs to another scope.
 */
export async function requestCompensation(ctx: CompensationContext, body: RequestBody): Promise<CompensationView> {
  const { prisma } = ctx.database;
  const { principal } = ctx;
  const actor = actorOf(principal);
  const detail = {
    recordId: body.recordId.toString(),
    kind: body.kind,
    amountMinor: body.amountMinor.toString(),
    relatedRecordId: body.relatedRecordId?.toString() ?? null,
  };
  const row = await auditRefusals(
    prisma,
    principal,
    { action: "compensations.request", target: { table: "idempotency_records", id: body.recordId }, reason: body.reason, request: ctx.request, detail },
    () =>
      prisma.$transaction(async (tx) => {
        const store = compensationStore(txExecutor(tx, ctx.database.dialect));
        const record = await store.lockRecord(body.recordId);
        if (!record) throw new NotFoundError(`There is no record ${body.recordId} (it may have been purged).`);
        const facts = {
          recordId: record.id.toString(),
          status: record.status,
          provider: record.provider,
          providerReference: record.providerReference,
          amountMinor: record.amountMinor?.toString() ?? null,
          currency: record.currency,
        };
        const can = compensability(record);
        if (!can.allowed) throw new NotCompensableError(can.reason!, facts);
        if (body.currency !== undefined && body.currency !== record.currency) {
          throw new UnprocessableCompensationError(
            "currency-mismatch",
            "Currency differs from the charge's",
            `Record ${record.id} was charged in ${record.currency}; a compensation is always in the charge's currency (got ${body.currency}).`,
            { expectedCurrency: record.currency },
          );
        }
        if (body.relatedRecordId !== undefined && body.relatedRecordId !== null) {
          if (body.relatedRecordId === record.id) {
            throw new UnprocessableCompensationError(
              "invalid-related-record",
              "Invalid related record",
              "relatedRecordId names the record being compensated itself.",
            );
          }
          const relatedScope = await store.recordScope(body.relatedRecordId);
          if (relatedScope === null || relatedScope !== record.scope) {
            throw new UnprocessableCompensationError(
              "invalid-related-record",
              "Invalid related record",
              relatedScope !== null
                ? `Related record ${body.relatedRecordId} belongs to ${relatedScope}, not to ${record.scope}.`
                : `There is no related record ${body.relatedRecordId}.`,
            );
          }
        }
        checkRemaining(record, await store.claimedAmount(record.id, null), body.amountMinor);

        const created = await store.insert(
          {
            record,
            relatedRecordId: body.relatedRecordId ?? null,
            kind: body.kind,
            amountMinor: body.amountMinor,
            providerIdempotencyKey: newProviderIdempotencyKey(),
            reason: body.reason,
            requestedBy: principal.userId,
            requestedByLabel: principal.email,
          },
          lease(ctx),
        );
        await appendAudit(tx, {
          actor,
          action: "compensations.request",
          target: target(created.id),
          before: null,
          after: snapshot(created),
          reason: body.reason,
          request: ctx.request,
          outcome: "done",
          detail,
        });
        return created;
      }, TX_OPTIONS),
  );
  return viewOf(row, principal);
}

// --- Decide --------------------------------------------------------------------------------

async function lockCompensation(store: CompensationStore, id: bigint, leaseSeconds: number): Promise<CompensationRow> {
  const row = await store.lock(id, leaseSeconds);
  if (!row) throw new NotFoundError(`There is no compensation ${id}.`);
  return row;
}

/**
 * Approve or reject a `requested` compensation: only by someone other than the
 * requester (403, and the database's four-eyes CHECK refuses it too), only from
 * `requested` (409 with the current state otherwise). Approval then executes it.
 */
async function decide(ctx: CompensationContext, id: bigint, decision: "approve" | "reject", reason: string): Promise<CompensationRow> {
  const { prisma } = ctx.database;
  const { principal } = ctx;
  const action = `compensations.${decision}`;
  const leaseSeconds = lease(ctx);
  return auditRefusals(prisma, principal, { action, target: target(id), reason, request: ctx.request }, () =>
    prisma.$transaction(async (tx) => {
      const store = compensationStore(txExecutor(tx, ctx.database.dialect));
      const before = await lockCompensation(store, id, leaseSeconds);
      if (before.requestedBy === principal.userId) {
        throw new ForbiddenError(`You requested compensation ${id} yourself; four-eyes rule: someone else holding compensations.approve must ${decision} it.`);
      }
      if (before.state !== "requested") {
        throw new StateConflictError(
          `Compensation ${id} is ${before.state}${before.decidedByLabel ? ` (decided by ${before.decidedByLabel})` : ""}; only a requested compensation can be ${decision === "approve" ? "approved" : "rejected"}.`,
          current(before),
        );
      }
      const after = await store.decide(id, leaseSeconds, {
        state: decision === "approve" ? "approved" : "rejected",
        by: principal.userId,
        byLabel: principal.email,
        reason,
        version: before.version,
      });
      if (!after) throw new StateConflictError(`Compensation ${id} changed meanwhile; reload and decide again.`, current(before));
      await appendAudit(tx, {
        actor: actorOf(principal),
        action,
        target: target(id),
        before: snapshot(before),
        after: snapshot(after),
        reason,
        request: ctx.request,
        outcome: "done",
        detail: { recordId: after.recordId?.toString() ?? null, fromState: before.state, toState: after.state },
      });
      return after;
    }, TX_OPTIONS),
  );
}

/** Approves, then executes at once (the answer carries the outcome: executed or failed). */
export async function approveCompensation(ctx: CompensationContext, id: bigint, reason: string): Promise<CompensationView> {
  const approved = await decide(ctx, id, "approve", reason);
  const started = await startAttempt(ctx, approved, reason);
  const done = started ? await runAttempt(ctx, started) : await getCompensation(ctx.database.sql, id, lease(ctx));
  return viewOf(done, ctx.principal);
}

export async function rejectCompensation(ctx: CompensationContext, id: bigint, reason: string): Promise<CompensationView> {
  return viewOf(await decide(ctx, id, "reject", reason), ctx.principal);
}

// --- Execute ----------------------------------------------------------------------------------

/** approved → executing, committed before the provider is called. null: someone else started it first. */
async function startAttempt(ctx: CompensationContext, approved: CompensationRow, reason: string): Promise<CompensationRow | null> {
  const { prisma } = ctx.database;
  return prisma.$transaction(async (tx) => {
    const started = await compensationStore(txExecutor(tx, ctx.database.dialect)).startAttempt(approved.id, lease(ctx), approved.version);
    if (!started) return null;
    await appendAudit(tx, {
      actor: actorOf(ctx.principal),
      action: "compensations.execute",
      target: target(approved.id),
      before: { state: approved.state, attempts: approved.attempts, version: approved.version },
      after: { state: started.state, attempts: started.attempts, version: started.version, lastAttemptAt: started.lastAttemptAt },
      reason,
      request: ctx.request,
      outcome: "done",
      detail: { recordId: started.recordId?.toString() ?? null, attempt: started.attempts, providerIdempotencyKey: started.providerIdempotencyKey },
    });
    return started;
  }, TX_OPTIONS);
}

type AttemptOutcome = { kind: "executed"; providerCompensationId: string; amountMinor: bigint } | { kind: "failed"; error: string; unknown: boolean };

async function callProvider(row: CompensationRow): Promise<AttemptOutcome> {
  try {
    const adapter = adapterFor(row.provider);
    const result = await adapter.compensate({
      kind: row.kind,
      reference: row.providerReference,
      amountMinor: row.amountMinor,
      currency: row.currency,
      idempotencyKey: row.providerIdempotencyKey,
      reason: row.reason,
    });
    if (result.status === "succeeded") return { kind: "executed", providerCompensationId: result.providerCompensationId, amountMinor: result.amountMinor };
    return { kind: "failed", error: `provider refused: ${result.reason}`, unknown: false };
  } catch (err) {
    if (err instanceof UnknownProviderError) return { kind: "failed", error: `not sent: ${err.message}`, unknown: false };
    const cause =
      err instanceof ProviderUnavailableError ? `${err.causeKind}: ${err.message}` : `unexpected error: ${err instanceof Error ? err.message : String(err)}`;
    if (!(err instanceof ProviderUnavailableError)) console.error(`compensation ${row.id}: provider call failed unexpectedly:`, err);
    return {
      kind: "failed",
      error: `${OUTCOME_UNKNOWN_PREFIX} (${cause}) — the provider may have executed it; retrying is safe: it sends the same idempotency key ${row.providerIdempotencyKey}.`,
      unknown: true,
    };
  }
}

/** Calls the provider (no transaction open), then records executed or failed — unless another attempt took over meanwhile. */
async function runAttempt(ctx: CompensationContext, started: CompensationRow): Promise<CompensationRow> {
  const outcome = await callProvider(started);
  const { prisma } = ctx.database;
  const leaseSeconds = lease(ctx);
  return prisma.$transaction(async (tx) => {
    const store = compensationStore(txExecutor(tx, ctx.database.dialect));
    const after =
      outcome.kind === "executed"
        ? await store.markExecuted(started.id, leaseSeconds, started.attempts, outcome.providerCompensationId)
        : await store.markFailed(started.id, leaseSeconds, started.attempts, outcome.error.slice(0, 4000));
    const providerAnswer =
      outcome.kind === "executed"
        ? { providerCompensationId: outcome.providerCompensationId, amountMinor: outcome.amountMinor.toString() }
        : { error: outcome.error, outcomeUnknown: outcome.unknown };
    if (!after) {
      // A retry took this attempt over (its lease ran out): that attempt records the result (same key, same answer).
      const now = await lockCompensation(store, started.id, leaseSeconds);
      await appendAudit(tx, {
        actor: actorOf(ctx.principal),
        action: outcome.kind === "executed" ? "compensations.executed" : "compensations.execution_failed",
        target: target(started.id),
        request: ctx.request,
        outcome: "refused",
        detail: { attempt: started.attempts, superseded: true, current: current(now), ...providerAnswer },
      });
      return now;
    }
    await appendAudit(tx, {
      actor: actorOf(ctx.principal),
      action: outcome.kind === "executed" ? "compensations.executed" : "compensations.execution_failed",
      target: target(started.id),
      before: { state: started.state, version: started.version, lastError: started.lastError },
      after: {
        state: after.state,
        version: after.version,
        providerCompensationId: after.providerCompensationId,
        executedAt: after.executedAt,
        lastError: after.lastError,
      },
      request: ctx.request,
      outcome: outcome.kind === "executed" ? "done" : "failed",
      detail: { recordId: after.recordId?.toString() ?? null, attempt: after.attempts, ...providerAnswer },
    });
    return after;
  }, TX_OPTIONS);
}

// --- Retry ---------------------------------------------------------------------------------

/**
 * Sends a compensation again: from `failed`, or from `executing`/`approved` left
 * behind longer than the lease by a process that died. Re-checks the record's
 * remaining amount (under its row lock) and sends the same provider idempotency key.
 */
export async function retryCompensation(ctx: CompensationContext, id: bigint, reason: string): Promise<CompensationView> {
  const { prisma, sql: pool } = ctx.database;
  const { principal } = ctx;
  const leaseSeconds = lease(ctx);
  const started = await auditRefusals(prisma, principal, { action: "compensations.retry", target: target(id), reason, request: ctx.request }, async () => {
    const peek = await getCompensation(pool, id, leaseSeconds);
    return prisma.$transaction(async (tx) => {
      const store = compensationStore(txExecutor(tx, ctx.database.dialect));
      // Record first, then the compensation (the lock order of requests).
      const record = peek.recordId !== null ? await store.lockRecord(peek.recordId) : undefined;
      const before = await lockCompensation(store, id, leaseSeconds);
      if (!(before.state === "failed" || before.stale)) {
        const why =
          before.state === "executing"
            ? `an attempt started ${before.lastAttemptAt?.toISOString()} is still within its lease of ${leaseSeconds} s; retry once it has failed or the lease has run out`
            : before.state === "approved"
              ? `it was approved moments ago and is about to be executed`
              : `only failed compensations (or attempts left behind by a crash) are retried`;
        throw new StateConflictError(`Compensation ${id} is ${before.state}: ${why}.`, current(before));
      }
      if (record && record.amountMinor !== null) checkRemaining(record, await store.claimedAmount(record.id, before.id), before.amountMinor);
      const after = await store.restartAttempt(id, leaseSeconds, before.version);
      if (!after) throw new StateConflictError(`Compensation ${id} changed meanwhile; reload and try again.`, current(before));
      await appendAudit(tx, {
        actor: actorOf(principal),
        action: "compensations.retry",
        target: target(id),
        before: { state: before.state, attempts: before.attempts, version: before.version, lastError: before.lastError, lastAttemptAt: before.lastAttemptAt },
        after: { state: after.state, attempts: after.attempts, version: after.version, lastAttemptAt: after.lastAttemptAt },
        reason,
        request: ctx.request,
        outcome: "done",
        detail: { recordId: after.recordId?.toString() ?? null, attempt: after.attempts, tookOver: before.state !== "failed" ? before.state : null },
      });
      return after;
    }, TX_OPTIONS);
  });
  return viewOf(await runAttempt(ctx, started), principal);
}
