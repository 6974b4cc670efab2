import { z } from "zod";
import { reasonSchema } from "../kernel/input";
import { appendAudit, type RequestMeta } from "../audit";
import { auditActor, auditRefusals, requirePermission, type Actor } from "../auth/users";
import type { Database } from "../db/client";
import { txExecutor } from "../db/sql";
import { completedResponse, currentState, failedResponse, settleRecord } from "../reconcile/apply";
import { reconcileStore } from "../reconcile/store";
import { readSideConfig, thresholdFor, type StuckThresholds } from "./config";
import type { RecordSummary } from "./row";
import { NotFoundError, StateConflictError } from "../kernel/errors";

/**
 * Resolve by hand: an operator decides a pending record (or a processing one that
 * is stuck past its operation's threshold) as completed — naming the provider's
 * reference — or failed, with a reason, against the version they saw.
 *
 * One transaction: the guarded UPDATE of lib/reconcile/apply.ts (id + allowed
 * status + version = expectedVersion + stuck age; bumps the version, stores the
 * response retries replay, appends the 'reconciled' event), then the record's
 * open reconciliation items are resolved, then the audit entry. Nothing matched →
 * 404 when the record is gone, else 409 with its current state; the refusal is
 * audited. Two operators racing: exactly one wins. A writer racing an operator:
 * the writer's complete/fail needs status = 'processing', so whoever commits
 * first wins and the other gets a StateConflictError.
 */

export const RESOLVE_ACTION = "records.resolve";

/** Operators racing on one record queue on its row lock, each holding a connection: allow for the wait. */
const RESOLVE_TX = { maxWait: 15_000, timeout: 30_000 };

/** The service's own response, when the operator knows it (what its replay would have answered). */
export const serviceResponseSchema = z
  .object({
    code: z.number({ error: "must be the HTTP status code (a whole number)" }).int().min(100).max(599),
    headers: z
      .array(z.tuple([z.string().trim().min(1).max(200), z.string().max(8000)]), { error: "must be a list of [name, value] pairs" })
      .max(100)
      .optional(),
    body: z.string().max(60_000).nullable().optional(),
  })
  .strict();

export const resolveBodySchema = z
  .object({
    outcome: z.enum(["completed", "failed"], { error: 'must be "completed" or "failed"' }),
    providerReference: z.string().trim().min(1, "must not be empty").max(200).optional(),
    /** What the effect created (an order, a charge), when known: a replay can then name it. */
    resourceType: z.string().trim().min(1, "must not be empty").max(200).optional(),
    resourceId: z.string().trim().min(1, "must not be empty").max(200).optional(),
    /** The service's own response, when known; otherwise the console stores a documented one (lib/reconcile/apply.ts). */
    response: serviceResponseSchema.optional(),
    reason: reasonSchema,
    expectedVersion: z.number({ error: "must be the record's version you saw (a whole number)" }).int().min(0).max(2147483647),
  })
  .strict()
  .superRefine((b, ctx) => {
    if (b.response && b.outcome === "completed" && b.response.code >= 400) {
      ctx.addIssue({ code: "custom", path: ["response", "code"], message: "must be below 400 for a completed record (the effect happened)" });
    }
    if (b.response && b.outcome === "failed" && b.response.code < 400) {
      ctx.addIssue({ code: "custom", path: ["response", "code"], message: "must be 400 or above for a failed record (it failed before any effect)" });
    }
    if (b.outcome === "completed" && !b.providerReference) {
      ctx.addIssue({
        code: "custom",
        path: ["providerReference"],
        message: "is required when the outcome is completed (the provider's reference of the charge)",
      });
    }
    if (b.outcome === "failed" && b.providerReference) {
      ctx.addIssue({ code: "custom", path: ["providerReference"], message: "is only given when the outcome is completed" });
    }
  });

export type ResolveBody = z.output<typeof resolveBodySchema>;

export interface ResolveResult {
  record: RecordSummary;
  outcome: "completed" | "failed";
  before: { status: string; version: number; providerReference: string | null };
  /** The reconciliation items this closed. */
  reconciliationItemsResolved: bigint[];
  auditId: bigint;
}

export interface ResolveOptions {
  now?: Date;
  stuck?: StuckThresholds;
}

export async function resolveRecord(
  db: Pick<Database, "prisma" | "sql" | "dialect">,
  actor: Actor,
  recordId: bigint,
  input: ResolveBody,
  request?: RequestMeta,
  opts: ResolveOptions = {},
): Promise<ResolveResult> {
  const target = { table: "idempotency_records", id: recordId };
  return auditRefusals(
    db.prisma,
    actor,
    { action: RESOLVE_ACTION, target, reason: input.reason, request, detail: { outcome: input.outcome, expectedVersion: input.expectedVersion } },
    async () => {
      requirePermission(actor, "records.resolve");
      const now = opts.now ?? new Date();
      const stuck = opts.stuck ?? readSideConfig().stuck;
      const who = auditActor(actor);
      const result = await db.prisma.$transaction(async (tx) => {
        const ex = txExecutor(tx, db.dialect);
        const settled = await settleRecord(ex, {
          recordId,
          expectedVersion: input.expectedVersion,
          status: input.outcome,
          providerReference: input.outcome === "completed" ? input.providerReference! : null,
          resource: { type: input.resourceType ?? null, id: input.resourceId ?? null },
          response: input.response
            ? { code: input.response.code, headers: input.response.headers ?? [], body: input.response.body ?? null }
            : input.outcome === "completed"
              ? completedResponse({ providerReference: input.providerReference!, by: "hand", at: now })
              : failedResponse({ reason: input.reason, by: "hand", at: now }),
          lastError: input.outcome === "failed" ? `resolved by hand as failed: ${input.reason}` : null,
          eventDetail: {
            by: "hand",
            outcome: input.outcome,
            actor: who.label ?? who.type,
            ...(input.providerReference ? { providerReference: input.providerReference } : {}),
          },
          now,
          stuck,
        });
        if (!settled) return null;
        const resolution = { by: "hand", outcome: input.outcome, providerReference: input.providerReference ?? null, reason: input.reason };
        const items = await reconcileStore(ex).resolveOpenItems(
          recordId,
          input.outcome === "completed" ? "resolved_succeeded" : "resolved_failed",
          resolution,
          who.label ?? who.type,
          now,
        );
        const itemIds = items.sort((a, b) => (a < b ? -1 : 1));
        const entry = await appendAudit(tx, {
          actor: who,
          action: RESOLVE_ACTION,
          target,
          before: settled.before,
          after: {
            status: settled.record.status,
            version: settled.record.version,
            providerReference: settled.record.providerReference,
            resourceType: settled.record.resourceType,
            resourceId: settled.record.resourceId,
            // Whose response a retry now replays (the body itself stays out of the audit trail).
            response: input.response
              ? { given: "by the operator", code: input.response.code }
              : { given: "made by the console", code: settled.record.responseCode },
          },
          reason: input.reason,
          request,
          outcome: "done",
          detail: { outcome: input.outcome, expectedVersion: input.expectedVersion, reconciliationItemsResolved: itemIds },
        });
        return { ...settled, itemIds, auditId: entry.id };
      }, RESOLVE_TX);
      if (!result) throw await refusal(db, recordId, input.expectedVersion, now, stuck);
      return {
        record: result.record,
        outcome: input.outcome,
        before: result.before,
        reconciliationItemsResolved: result.itemIds,
        auditId: result.auditId,
      };
    },
  );
}

/** Why the guarded update matched nothing: gone (404), or changed / not resolvable (409 with the current state). */
async function refusal(db: Pick<Database, "prisma" | "sql">, recordId: bigint, expectedVersion: number, now: Date, stuck: StuckThresholds): Promise<Error> {
  const current = await currentState(db.sql, recordId);
  if (!current) return new NotFoundError(`idempotency record ${recordId} does not exist`);
  const state = { status: current.status, version: current.version, updatedAt: current.updatedAt.toISOString() };
  const when = `${state.updatedAt.slice(0, 19).replace("T", " ")} UTC`;
  if (current.version !== expectedVersion) {
    return new StateConflictError(
      `The record changed since you saw it (version ${expectedVersion}): it is now ${current.status}, version ${current.version}, changed ${when}. Reload it and decide again.`,
      state,
    );
  }
  if (current.status === "processing") {
    const op = await db.prisma.idempotencyRecord.findUnique({ where: { id: recordId }, select: { operation: true } });
    const threshold = thresholdFor(stuck, op?.operation ?? "");
    return new StateConflictError(
      `The record is processing but not stuck yet (its operation's threshold is ${threshold} s; it changed ${when}): a worker may still finish it. Wait, or reconcile with the provider.`,
      state,
    );
  }
  return new StateConflictError(
    `The record is ${current.status} (version ${current.version}, changed ${when}): only pending or stuck processing records can be resolved by hand.`,
    state,
  );
}
