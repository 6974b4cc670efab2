import { z } from "zod";
import { txExecutor } from "../db/sql";
import type { LegalHold, PrismaClient } from "../generated/prisma/client";
import { reasonSchema } from "../kernel/input";
import { appendAudit, type RequestMeta } from "../audit";
import { auditActor, auditRefusals, requirePermission, type Actor } from "../auth/users";
import { scopeSchema } from "../idempotency/schemas";
import { NotFoundError, StateConflictError } from "../kernel/errors";
import { intParam, optional } from "../kernel/input";
import { retentionStore, type RecordHoldState } from "./store";

export type { RecordHoldState } from "./store";

/**
 * Legal holds: nothing under a hold is purged (lib/retention/eligibility.ts).
 * - Record level: idempotency_records.legal_hold, set or lifted on one record
 *   (bumps the record's version; never its updated_at, which means "the writer's
 *   last change" to the stuck queue). Optionally conditional on the version seen.
 * - Scope level: a legal_holds row for a whole scope (tenant/subject) — its records
 *   and its events. Lifting keeps the row (history): lifted_at/by/why.
 *
 * Setting a hold takes LOCKS.legalHolds exclusively in its transaction; every purge
 * batch takes it shared. So a purge batch either committed before the hold (and the
 * rows it deleted were deleted before anyone asked to keep them) or sees the hold: no
 * batch in flight can delete a row whose hold committed first. (Lifting needs no lock:
 * it only makes more rows eligible, for the next run.)
 *
 * Every change is audited with before/after in its transaction; refusals too.
 */

export const HOLDS_TABLE = "legal_holds";
export const RECORD_HOLD_ACTION = "records.legal_hold";

export const recordHoldBodySchema = z
  .object({
    hold: z.boolean({ error: "must be true (set the hold) or false (lift it)" }),
    reason: reasonSchema,
    /** The record's version you saw; absent: applies to whatever version (setting is idempotent anyway). */
    expectedVersion: z.number().int().min(0).max(2147483647).optional(),
  })
  .strict();
export type RecordHoldBody = z.output<typeof recordHoldBodySchema>;

export const scopeHoldBodySchema = z.object({ scope: scopeSchema, reason: reasonSchema }).strict();
export const liftHoldBodySchema = z.object({ reason: reasonSchema }).strict();

export const listHoldsQuerySchema = z
  .object({
    /** active (default), lifted or all. */
    state: optional(z.enum(["active", "lifted", "all"])),
    scope: optional(scopeSchema),
    limit: optional(intParam(1, 500)),
  })
  .strict();

export interface ScopeHoldView {
  id: bigint;
  scope: string;
  reason: string;
  setByLabel: string;
  setAt: Date;
  active: boolean;
  liftedByLabel: string | null;
  liftedAt: Date | null;
  liftReason: string | null;
}

function holdView(h: LegalHold): ScopeHoldView {
  return { ...h, active: h.liftedAt === null };
}

const holdSnapshot = (r: RecordHoldState) => ({ legalHold: r.legalHold, version: r.version });

/** Sets or lifts the hold of one record. Same state again: a no-op success (audited with detail.noop). */
export async function setRecordHold(
  prisma: PrismaClient,
  actor: Actor,
  recordId: bigint,
  input: RecordHoldBody,
  request?: RequestMeta,
): Promise<{ record: RecordHoldState; noop: boolean }> {
  const target = { table: "idempotency_records", id: recordId };
  return auditRefusals(
    prisma,
    actor,
    { action: RECORD_HOLD_ACTION, target, reason: input.reason, request, detail: { hold: input.hold, expectedVersion: input.expectedVersion ?? null } },
    async () => {
      requirePermission(actor, "legal_holds.manage");
      const who = auditActor(actor);
      return prisma.$transaction(async (tx) => {
        const store = retentionStore(txExecutor(tx));
        if (input.hold) await store.lockHoldsExclusive();
        const before = await store.lockRecordHold(recordId);
        if (!before) throw new NotFoundError(`idempotency record ${recordId} does not exist (it may have been purged)`);
        if (input.expectedVersion !== undefined && input.expectedVersion !== before.version) {
          throw new StateConflictError(
            `The record changed since you saw it (version ${input.expectedVersion}); it is now version ${before.version}, legal hold ${before.legalHold ? "set" : "not set"}. Reload it and decide again.`,
            { version: before.version, legalHold: before.legalHold, status: before.status },
          );
        }
        if (before.legalHold === input.hold) {
          await appendAudit(tx, {
            actor: who,
            action: RECORD_HOLD_ACTION,
            target,
            before: holdSnapshot(before),
            after: holdSnapshot(before),
            reason: input.reason,
            request,
            outcome: "done",
            detail: { hold: input.hold, noop: true },
          });
          return { record: before, noop: true };
        }
        const after = await store.setRecordHold(recordId, input.hold);
        await appendAudit(tx, {
          actor: who,
          action: RECORD_HOLD_ACTION,
          target,
          before: holdSnapshot(before),
          after: holdSnapshot(after),
          reason: input.reason,
          request,
          outcome: "done",
          detail: { hold: input.hold },
        });
        return { record: after, noop: false };
      });
    },
  );
}

export async function listScopeHolds(prisma: Pick<PrismaClient, "legalHold">, q: z.output<typeof listHoldsQuerySchema> = {}): Promise<ScopeHoldView[]> {
  const state = q.state ?? "active";
  const rows = await prisma.legalHold.findMany({
    where: {
      ...(state === "active" ? { liftedAt: null } : state === "lifted" ? { liftedAt: { not: null } } : {}),
      ...(q.scope ? { scope: q.scope } : {}),
    },
    orderBy: [{ setAt: "desc" }, { id: "desc" }],
    take: q.limit ?? 100,
  });
  return rows.map(holdView);
}

/** Puts a whole scope under a legal hold. 409 when it already has an active one. */
export async function setScopeHold(
  prisma: PrismaClient,
  actor: Actor,
  input: z.output<typeof scopeHoldBodySchema>,
  request?: RequestMeta,
): Promise<ScopeHoldView> {
  const action = "legal_holds.set";
  return auditRefusals(prisma, actor, { action, reason: input.reason, request, detail: { scope: input.scope } }, async () => {
    requirePermission(actor, "legal_holds.manage");
    const who = auditActor(actor);
    return prisma.$transaction(async (tx) => {
      const store = retentionStore(txExecutor(tx));
      await store.lockHoldsExclusive();
      const insertedId = await store.insertScopeHold(input.scope, input.reason, who.label ?? who.type);
      if (insertedId === null) {
        const existing = await tx.legalHold.findFirst({ where: { scope: input.scope, liftedAt: null } });
        throw new StateConflictError(
          `The scope ${input.scope} is already under a legal hold (id ${existing?.id}, set by ${existing?.setByLabel}).`,
          existing ? { id: String(existing.id), scope: existing.scope, setByLabel: existing.setByLabel, setAt: existing.setAt.toISOString() } : undefined,
        );
      }
      const hold = holdView(await tx.legalHold.findUniqueOrThrow({ where: { id: insertedId } }));
      await appendAudit(tx, {
        actor: who,
        action,
        target: { table: HOLDS_TABLE, id: hold.id },
        before: null,
        after: hold,
        reason: input.reason,
        request,
        outcome: "done",
      });
      return hold;
    });
  });
}

/** Lifts a scope hold (the row stays, with who lifted it and why). 409 when already lifted. */
export async function liftScopeHold(prisma: PrismaClient, actor: Actor, id: bigint, reason: string, request?: RequestMeta): Promise<ScopeHoldView> {
  const action = "legal_holds.lift";
  const target = { table: HOLDS_TABLE, id };
  return auditRefusals(prisma, actor, { action, target, reason, request }, async () => {
    requirePermission(actor, "legal_holds.manage");
    const who = auditActor(actor);
    return prisma.$transaction(async (tx) => {
      if (!(await retentionStore(txExecutor(tx)).lockScopeHold(id))) throw new NotFoundError(`legal hold ${id} does not exist`);
      const before = holdView(await tx.legalHold.findUniqueOrThrow({ where: { id } }));
      if (!before.active) {
        throw new StateConflictError(`The legal hold ${id} on ${before.scope} was already lifted by ${before.liftedByLabel}.`, {
          id: String(before.id),
          liftedByLabel: before.liftedByLabel,
          liftedAt: before.liftedAt?.toISOString() ?? null,
        });
      }
      const after = holdView(
        await tx.legalHold.update({ where: { id }, data: { liftedAt: new Date(), liftedByLabel: who.label ?? who.type, liftReason: reason } }),
      );
      await appendAudit(tx, { actor: who, action, target, before, after, reason, request, outcome: "done" });
      return after;
    });
  });
}
