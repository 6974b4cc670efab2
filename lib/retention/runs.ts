import { z } from "zod";
import type { Prisma, PrismaClient, PurgeRun } from "../generated/prisma/client";
import { reasonSchema } from "../kernel/input";
import { appendAudit, type AuditActor, type RequestMeta } from "../audit";
import { auditActor, auditRefusals, isSystemActor, requirePermission, type Actor } from "../auth/users";
import { DEFAULT_BATCH_SIZE, DEFAULT_PAUSE_MS, eventBatchSize, MAX_BATCH_SIZE, MAX_PAUSE_MS } from "./config";
import { txExecutor } from "../db/sql";
import { countEligible } from "./dry-run";
import { retentionStore, type RetentionStore } from "./store";
import { currentRules, type PolicyRule } from "./policies";
import { ProblemError } from "../kernel/problem";
import { InvalidInputError, NotFoundError } from "../kernel/errors";
import { intParam, isoTime, optional } from "../kernel/input";

/**
 * Purge runs: start (one at a time), cancel, list, progress. The work itself is
 * lib/retention/worker.ts; this module owns the rows' lifecycle and its audit:
 * `purges.start` (with the estimates) when a run is created, `purges.cancel` when
 * someone asks to stop it, `purges.finish` when it ends — written in the same
 * transaction as the final state, with the counts read from the row it finalises.
 */

export const RUNS_TABLE = "purge_runs";
export const ACTIVE_STATES = ["queued", "running", "cancelling"] as const;
export type RunState = "queued" | "running" | "cancelling" | "cancelled" | "completed" | "failed";
/** How old a dry run's as_of may be when a run is started with it. */
export const MAX_AS_OF_AGE_MS = 3_600_000;

export class PurgeActiveError extends ProblemError {
  constructor(run: PurgeRunView) {
    super(409, "purge-already-active", "A purge is already in progress", `Purge run ${run.id} is ${run.state}; wait for it to finish or cancel it first.`, {
      current: { id: String(run.id), state: run.state, phase: run.phase },
    });
  }
}

export class ConfirmationMismatchError extends ProblemError {
  constructor(confirm: string, estimate: { records: number; events: number }, asOf: Date) {
    super(
      409,
      "purge-confirmation-mismatch",
      "The confirmation does not match",
      `You confirmed ${JSON.stringify(confirm)}, but a purge as of ${asOf.toISOString()} would delete ${estimate.records} records (and ${estimate.events} events). Run the dry run again, check it, and type ${estimate.records}.`,
      { current: { estimatedRecords: estimate.records, estimatedEvents: estimate.events, asOf: asOf.toISOString() } },
    );
  }
}

export class RunFinishedError extends ProblemError {
  constructor(run: PurgeRunView) {
    super(409, "purge-finished", "The purge has finished", `Purge run ${run.id} is already ${run.state}; there is nothing to cancel.`, {
      current: { id: String(run.id), state: run.state },
    });
  }
}

export const startPurgeBodySchema = z
  .object({
    reason: reasonSchema,
    /** Typed confirmation: the number of records the dry run said the purge deletes. */
    confirm: z
      .union([z.string(), z.number()], { error: "must be the number of records the dry run shows, typed to confirm" })
      .transform((v) => String(v).trim())
      .pipe(z.string().regex(/^\d{1,12}$/, "must be the number of records the dry run shows, typed to confirm")),
    /** The dry run's as_of (so the run judges by the same clock); default now. Within the last hour. */
    asOf: isoTime.optional(),
    batchSize: z.number().int().min(1).max(MAX_BATCH_SIZE).default(DEFAULT_BATCH_SIZE),
    pauseMs: z.number().int().min(0).max(MAX_PAUSE_MS).default(DEFAULT_PAUSE_MS),
  })
  .strict();
export type StartPurgeBody = z.input<typeof startPurgeBodySchema>;
export type StartPurgeInput = z.output<typeof startPurgeBodySchema>;

export const cancelPurgeBodySchema = z.object({ reason: reasonSchema }).strict();

export const listRunsQuerySchema = z
  .object({
    limit: optional(intParam(1, 100)),
    /** Keyset: runs with an id below this one (the previous page's nextBefore). */
    before: optional(
      z
        .string()
        .regex(/^\d{1,19}$/, "must be a run id")
        .transform((v) => BigInt(v)),
    ),
  })
  .strict();

export interface PurgeRunView {
  id: bigint;
  state: RunState;
  phase: "records" | "events" | "done";
  active: boolean;
  policies: PolicyRule[];
  asOf: Date;
  /** Records per batch (as started); an events batch takes eventBatchSize. */
  batchSize: number;
  eventBatchSize: number;
  pauseMs: number;
  recordWatermark: bigint;
  eventWatermark: bigint;
  recordsDeleted: bigint;
  eventsDeleted: bigint;
  batches: number;
  estimatedRecords: bigint | null;
  estimatedEvents: bigint | null;
  /** Deleted / estimated, records and events together, 0–1 (1 once completed). */
  progress: number;
  reason: string;
  startedBy: bigint | null;
  startedByLabel: string;
  cancelRequestedByLabel: string | null;
  worker: string | null;
  leaseUntil: Date | null;
  lastError: string | null;
  createdAt: Date;
  startedAt: Date | null;
  heartbeatAt: Date | null;
  finishedAt: Date | null;
}

export function runView(r: PurgeRun): PurgeRunView {
  const state = r.state as RunState;
  const estimated = Number(r.estimatedRecords ?? 0n) + Number(r.estimatedEvents ?? 0n);
  const deleted = Number(r.recordsDeleted) + Number(r.eventsDeleted);
  const progress = state === "completed" ? 1 : estimated > 0 ? Math.min(1, deleted / estimated) : 0;
  return {
    id: r.id,
    state,
    phase: r.phase as PurgeRunView["phase"],
    active: (ACTIVE_STATES as readonly string[]).includes(state),
    policies: r.policies as unknown as PolicyRule[],
    asOf: r.asOf,
    batchSize: r.batchSize,
    eventBatchSize: eventBatchSize(r.batchSize),
    pauseMs: r.pauseMs,
    recordWatermark: r.recordWatermark,
    eventWatermark: r.eventWatermark,
    recordsDeleted: r.recordsDeleted,
    eventsDeleted: r.eventsDeleted,
    batches: r.batches,
    estimatedRecords: r.estimatedRecords,
    estimatedEvents: r.estimatedEvents,
    progress,
    reason: r.reason,
    startedBy: r.startedBy,
    startedByLabel: r.startedByLabel,
    cancelRequestedByLabel: r.cancelRequestedByLabel,
    worker: r.worker,
    leaseUntil: r.leaseUntil,
    lastError: r.lastError,
    createdAt: r.createdAt,
    startedAt: r.startedAt,
    heartbeatAt: r.heartbeatAt,
    finishedAt: r.finishedAt,
  };
}

/** The counts the audit entries carry (the same as the row's). */
export function runCounts(r: PurgeRunView) {
  return {
    state: r.state,
    phase: r.phase,
    recordsDeleted: r.recordsDeleted,
    eventsDeleted: r.eventsDeleted,
    batches: r.batches,
    estimatedRecords: r.estimatedRecords,
    estimatedEvents: r.estimatedEvents,
  };
}

type Tx = Prisma.TransactionClient;

export async function getRun(prisma: Pick<PrismaClient, "purgeRun">, id: bigint): Promise<PurgeRunView> {
  const row = await prisma.purgeRun.findUnique({ where: { id } });
  if (!row) throw new NotFoundError(`purge run ${id} does not exist`);
  return runView(row);
}

export async function activeRun(prisma: Pick<PrismaClient, "purgeRun">): Promise<PurgeRunView | null> {
  const row = await prisma.purgeRun.findFirst({ where: { state: { in: [...ACTIVE_STATES] } }, orderBy: { id: "desc" } });
  return row ? runView(row) : null;
}

export async function listRuns(
  prisma: Pick<PrismaClient, "purgeRun">,
  q: z.output<typeof listRunsQuerySchema>,
): Promise<{ items: PurgeRunView[]; nextBefore: bigint | null; active: PurgeRunView | null }> {
  const limit = q.limit ?? 20;
  const rows = await prisma.purgeRun.findMany({ where: q.before ? { id: { lt: q.before } } : {}, orderBy: { id: "desc" }, take: limit + 1 });
  const items = rows.slice(0, limit).map(runView);
  return { items, nextBefore: rows.length > limit ? items[items.length - 1].id : null, active: await activeRun(prisma) };
}

async function lockRun(tx: Tx, store: RetentionStore, id: bigint): Promise<PurgeRunView | null> {
  if (!(await store.lockRun(id))) return null;
  return runView(await tx.purgeRun.findUniqueOrThrow({ where: { id } }));
}

export interface StartOptions {
  /** The process that will work the run (it holds the lease from the start). */
  workerId: string;
  leaseSeconds: number;
  /** Checked against the confirmation unless false (the CLI may start without one). */
  requireConfirmation?: boolean;
  now?: Date;
}

/**
 * Creates the run: policies snapshot, as_of, estimates (the eligible counts as of
 * as_of — the dry run's totals), state running, leased to `workerId`. 409 when a
 * run is in progress (also enforced by the unique partial index) or when the
 * typed confirmation is not the estimated record count. Audited (purges.start).
 */
export async function startPurge(
  prisma: PrismaClient,
  actor: Actor,
  input: Omit<StartPurgeInput, "confirm"> & { confirm?: string },
  opts: StartOptions,
  request?: RequestMeta,
): Promise<PurgeRunView> {
  const action = "purges.start";
  const detail = { batchSize: input.batchSize, pauseMs: input.pauseMs, confirm: input.confirm ?? null, asOf: input.asOf?.toISOString() ?? null };
  return auditRefusals(prisma, actor, { action, reason: input.reason, request, detail }, async () => {
    requirePermission(actor, "purges.run");
    const now = opts.now ?? new Date();
    const asOf = input.asOf ?? now;
    if (asOf.getTime() > now.getTime() + 5_000) throw new InvalidInputError("asOf must not be in the future (use the dry run's asOf).");
    if (asOf.getTime() < now.getTime() - MAX_AS_OF_AGE_MS) throw new InvalidInputError("asOf is more than an hour old: run the dry run again.");
    const who = auditActor(actor);
    return prisma.$transaction(
      async (tx) => {
        const active = await activeRun(tx);
        if (active) throw new PurgeActiveError(active);
        const rules = await currentRules(tx);
        const ex = txExecutor(tx);
        const estimate = await countEligible(ex, rules, asOf);
        if (opts.requireConfirmation !== false && input.confirm !== String(estimate.records)) {
          throw new ConfirmationMismatchError(input.confirm ?? "", estimate, asOf);
        }
        const insertedId = await retentionStore(ex).insertRun({
          policies: rules,
          asOf,
          batchSize: input.batchSize,
          pauseMs: input.pauseMs,
          estimatedRecords: BigInt(estimate.records),
          estimatedEvents: BigInt(estimate.events),
          reason: input.reason,
          startedBy: isSystemActor(actor) ? null : actor.userId,
          startedByLabel: who.label ?? who.type,
          worker: opts.workerId,
          leaseSeconds: opts.leaseSeconds + input.pauseMs / 1000,
        });
        if (insertedId === null) {
          const other = await activeRun(tx);
          if (other) throw new PurgeActiveError(other);
          throw new Error("purge run not created");
        }
        const run = runView(await tx.purgeRun.findUniqueOrThrow({ where: { id: insertedId } }));
        await appendAudit(tx, {
          actor: who,
          action,
          target: { table: RUNS_TABLE, id: run.id },
          before: null,
          after: { ...runCounts(run), asOf: run.asOf, batchSize: run.batchSize, pauseMs: run.pauseMs, policies: rules },
          reason: input.reason,
          request,
          outcome: "done",
          detail: { confirm: input.confirm ?? null },
        });
        return run;
      },
      { timeout: 300_000, maxWait: 30_000 },
    );
  });
}

/**
 * Ends a run inside the caller's transaction (the row must be locked by it; `store` runs
 * on the same transaction): final state, finished_at, lease released, and the
 * purges.finish audit entry with the counts of the row as it now is.
 */
export async function finishRun(
  tx: Tx,
  store: RetentionStore,
  id: bigint,
  state: "completed" | "cancelled" | "failed",
  opts: { actor: AuditActor; lastError?: string | null },
): Promise<PurgeRunView> {
  await store.finishRun(id, state, opts.lastError ?? null);
  const run = runView(await tx.purgeRun.findUniqueOrThrow({ where: { id } }));
  await appendAudit(tx, {
    actor: opts.actor,
    action: "purges.finish",
    target: { table: RUNS_TABLE, id },
    before: null,
    after: runCounts(run),
    reason: run.reason,
    outcome: state === "failed" ? "failed" : "done",
    detail: { worker: run.worker, startedByLabel: run.startedByLabel, lastError: run.lastError, cancelRequestedByLabel: run.cancelRequestedByLabel },
  });
  return run;
}

/**
 * Asks a run to stop: running → cancelling (its worker stops after the batch in
 * flight and marks it cancelled). A run nobody works (no worker, or the lease has
 * passed) is cancelled at once. Cancelling twice is a no-op success; a finished
 * run is a 409. Audited (purges.cancel).
 */
export async function cancelPurge(
  prisma: PrismaClient,
  actor: Actor,
  id: bigint,
  reason: string,
  request?: RequestMeta,
): Promise<{ run: PurgeRunView; noop: boolean }> {
  const action = "purges.cancel";
  const target = { table: RUNS_TABLE, id };
  return auditRefusals(prisma, actor, { action, target, reason, request }, async () => {
    requirePermission(actor, "purges.run");
    const who = auditActor(actor);
    return prisma.$transaction(async (tx) => {
      const store = retentionStore(txExecutor(tx));
      const before = await lockRun(tx, store, id);
      if (!before) throw new NotFoundError(`purge run ${id} does not exist`);
      if (!before.active) throw new RunFinishedError(before);
      if (before.state === "cancelling") {
        await appendAudit(tx, {
          actor: who,
          action,
          target,
          before: runCounts(before),
          after: runCounts(before),
          reason,
          request,
          outcome: "done",
          detail: { noop: true },
        });
        return { run: before, noop: true };
      }
      await store.requestCancel(id, who.label ?? who.type);
      const idle = await store.runIsIdle(id);
      const requested = runView(await tx.purgeRun.findUniqueOrThrow({ where: { id } }));
      await appendAudit(tx, {
        actor: who,
        action,
        target,
        before: runCounts(before),
        after: runCounts(requested),
        reason,
        request,
        outcome: "done",
        detail: { workerIdle: idle },
      });
      // Nobody is working it: it stops now (else its worker stops after the batch in flight).
      const run = idle ? await finishRun(tx, store, id, "cancelled", { actor: who }) : requested;
      return { run, noop: false };
    });
  });
}
