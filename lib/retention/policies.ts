import { z } from "zod";
import type { PrismaClient } from "../generated/prisma/client";
import { reasonSchema } from "../kernel/input";
import { appendAudit, type RequestMeta } from "../audit";
import { auditActor, auditRefusals, requirePermission, type Actor } from "../auth/users";
import { operationSchema } from "../idempotency/schemas";
import type { PolicyRule } from "./rules";
import { NotFoundError, StateConflictError } from "../kernel/errors";
import { txExecutor } from "../db/sql";
import { retentionStore } from "./store";

export { loadRules, type PolicyRule } from "./rules";

/**
 * Retention policies: per operation, plus one default (operation NULL) for every
 * operation without its own. A policy keeps completed/failed records
 * keep_records_days after their expires_at, and events keep_events_days after they
 * occurred (days of 24 h). A disabled policy purges nothing: a disabled
 * per-operation policy keeps that operation's rows forever even when the default
 * is enabled; a disabled (or absent) default keeps every operation without its
 * own policy. No policy at all = nothing is eligible.
 *
 * Every change commits with its audit entry (before/after) in one transaction;
 * refusals (404, 409) are audited too (auditRefusals).
 */

export const POLICIES_TABLE = "retention_policies";
const days = (what: string) =>
  z
    .number({ error: `must be a whole number of days (0–36500) to keep ${what}` })
    .int(`must be a whole number of days (0–36500) to keep ${what}`)
    .min(0, "must be from 0 to 36500")
    .max(36500, "must be from 0 to 36500");

export const createPolicyBodySchema = z
  .object({
    /** null (or absent) = the default policy. */
    operation: operationSchema.nullable().default(null),
    keepRecordsDays: days("records after they expire"),
    keepEventsDays: days("events after they occurred"),
    enabled: z.boolean().default(true),
    reason: reasonSchema,
  })
  .strict();
export type CreatePolicyBody = z.output<typeof createPolicyBodySchema>;

export const updatePolicyBodySchema = z
  .object({
    keepRecordsDays: days("records after they expire"),
    keepEventsDays: days("events after they occurred"),
    /** Absent: unchanged. */
    enabled: z.boolean().optional(),
    reason: reasonSchema,
  })
  .strict();
export type UpdatePolicyBody = z.output<typeof updatePolicyBodySchema>;

export const deletePolicyBodySchema = z.object({ reason: reasonSchema }).strict();

export interface PolicyView {
  id: bigint;
  /** null = the default policy. */
  operation: string | null;
  keepRecordsDays: number;
  keepEventsDays: number;
  enabled: boolean;
  updatedByLabel: string | null;
  createdAt: Date;
  updatedAt: Date;
}

type PolicyRow = Awaited<ReturnType<PrismaClient["retentionPolicy"]["findMany"]>>[number];

function view(p: PolicyRow): PolicyView {
  return {
    id: p.id,
    operation: p.operation,
    keepRecordsDays: p.keepRecordsDays,
    keepEventsDays: p.keepEventsDays,
    enabled: p.enabled,
    updatedByLabel: p.updatedByLabel,
    createdAt: p.createdAt,
    updatedAt: p.updatedAt,
  };
}

const snapshot = (p: PolicyView) => ({ operation: p.operation, keepRecordsDays: p.keepRecordsDays, keepEventsDays: p.keepEventsDays, enabled: p.enabled });

export function ruleOf(p: PolicyView): PolicyRule {
  return { id: String(p.id), operation: p.operation, keepRecordsDays: p.keepRecordsDays, keepEventsDays: p.keepEventsDays, enabled: p.enabled };
}

/** The default first, then by operation. */
export async function listPolicies(prisma: Pick<PrismaClient, "retentionPolicy">): Promise<PolicyView[]> {
  const rows = await prisma.retentionPolicy.findMany({ orderBy: [{ operation: { sort: "asc", nulls: "first" } }, { id: "asc" }] });
  return rows.map(view);
}

export async function currentRules(prisma: Pick<PrismaClient, "retentionPolicy">): Promise<PolicyRule[]> {
  return (await listPolicies(prisma)).map(ruleOf);
}

const describe = (operation: string | null) => (operation === null ? "the default policy" : `the policy of ${operation}`);

export async function createPolicy(prisma: PrismaClient, actor: Actor, input: CreatePolicyBody, request?: RequestMeta): Promise<PolicyView> {
  const action = "retention.policies.create";
  return auditRefusals(prisma, actor, { action, reason: input.reason, request, detail: { operation: input.operation } }, async () => {
    requirePermission(actor, "retention.manage");
    const who = auditActor(actor);
    return prisma.$transaction(async (tx) => {
      const insertedId = await retentionStore(txExecutor(tx)).insertPolicy({
        operation: input.operation,
        keepRecordsDays: input.keepRecordsDays,
        keepEventsDays: input.keepEventsDays,
        enabled: input.enabled,
        updatedByLabel: who.label ?? who.type,
      });
      if (insertedId === null) {
        const existing = await tx.retentionPolicy.findFirst({ where: { operation: input.operation } });
        throw new StateConflictError(
          `${describe(input.operation)} already exists (id ${existing?.id}); change it instead.`,
          existing ? { id: String(existing.id), ...snapshot(view(existing)) } : undefined,
        );
      }
      const created = view(await tx.retentionPolicy.findUniqueOrThrow({ where: { id: insertedId } }));
      await appendAudit(tx, {
        actor: who,
        action,
        target: { table: POLICIES_TABLE, id: created.id },
        before: null,
        after: snapshot(created),
        reason: input.reason,
        request,
        outcome: "done",
      });
      return created;
    });
  });
}

export async function updatePolicy(prisma: PrismaClient, actor: Actor, id: bigint, input: UpdatePolicyBody, request?: RequestMeta): Promise<PolicyView> {
  const action = "retention.policies.update";
  const target = { table: POLICIES_TABLE, id };
  return auditRefusals(prisma, actor, { action, target, reason: input.reason, request }, async () => {
    requirePermission(actor, "retention.manage");
    const who = auditActor(actor);
    return prisma.$transaction(async (tx) => {
      if (!(await retentionStore(txExecutor(tx)).lockPolicy(id))) throw new NotFoundError(`retention policy ${id} does not exist`);
      const before = view(await tx.retentionPolicy.findUniqueOrThrow({ where: { id } }));
      const after = view(
        await tx.retentionPolicy.update({
          where: { id },
          data: {
            keepRecordsDays: input.keepRecordsDays,
            keepEventsDays: input.keepEventsDays,
            enabled: input.enabled ?? before.enabled,
            updatedByLabel: who.label ?? who.type,
            updatedAt: new Date(),
          },
        }),
      );
      const noop = JSON.stringify(snapshot(before)) === JSON.stringify(snapshot(after));
      await appendAudit(tx, {
        actor: who,
        action,
        target,
        before: snapshot(before),
        after: snapshot(after),
        reason: input.reason,
        request,
        outcome: "done",
        ...(noop ? { detail: { noop: true } } : {}),
      });
      return after;
    });
  });
}

export async function deletePolicy(prisma: PrismaClient, actor: Actor, id: bigint, reason: string, request?: RequestMeta): Promise<PolicyView> {
  const action = "retention.policies.delete";
  const target = { table: POLICIES_TABLE, id };
  return auditRefusals(prisma, actor, { action, target, reason, request }, async () => {
    requirePermission(actor, "retention.manage");
    return prisma.$transaction(async (tx) => {
      if (!(await retentionStore(txExecutor(tx)).lockPolicy(id))) throw new NotFoundError(`retention policy ${id} does not exist`);
      const before = view(await tx.retentionPolicy.delete({ where: { id } }));
      await appendAudit(tx, { actor: auditActor(actor), action, target, before: snapshot(before), after: null, reason, request, outcome: "done" });
      return before;
    });
  });
}

/**
 * The embedded demo's default policy (lib/demo/embedded.ts), when there is no policy
 * at all: completed/failed records a week past their expiry, events after 30 days —
 * short enough that the month of demo traffic has something to purge. Audited as
 * the system. Returns whether it was created.
 */
export const DEMO_DEFAULT_POLICY = { keepRecordsDays: 7, keepEventsDays: 30 } as const;

export async function seedDefaultPolicy(prisma: PrismaClient, label = "embedded demo bootstrap"): Promise<boolean> {
  return prisma.$transaction(async (tx) => {
    if ((await retentionStore(txExecutor(tx)).countPolicies()) > 0n) return false;
    const created = view(await tx.retentionPolicy.create({ data: { operation: null, ...DEMO_DEFAULT_POLICY, enabled: true, updatedByLabel: label } }));
    await appendAudit(tx, {
      actor: { type: "system", label },
      action: "retention.policies.create",
      target: { table: POLICIES_TABLE, id: created.id },
      before: null,
      after: snapshot(created),
      reason: "default retention policy of the embedded demo",
      outcome: "done",
    });
    return true;
  });
}
