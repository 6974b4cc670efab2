import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { AuditActor } from "../audit";
import type { Database } from "../db/client";
import type { Prisma } from "../generated/prisma/client";
import { txExecutor } from "../db/sql";
import { purgeLeaseSeconds, purgePollSeconds } from "./config";
import type { SqlExecutor } from "../db/sql";
import { asCensusWriter } from "../stats/census";
import { purgeStore, type PurgeStore } from "./purge-store";
import type { PolicyRule } from "./rules";
import { finishRun, runView, type PurgeRunView } from "./runs";
import { retentionStore, type RetentionStore } from "./store";

/**
 * The purge worker: works a purge run in batches of SHORT transactions.
 *
 * Each batch is one transaction that
 *   1. takes the legal-hold lock in shared mode (setting a hold takes it exclusively,
 *      so a hold committed before the batch is seen by it, and one set meanwhile waits
 *      for the batch to commit — see legal-holds.ts);
 *   2. locks the run row and checks it is still this worker's (a worker whose lease ran
 *      out and was taken over stops here) and not being cancelled (→ cancelled, audited);
 *   3. records phase: SELECT … FOR UPDATE the next `batch_size` eligible records with
 *      id in (record_watermark, record_watermark + window], in id order, then — in a
 *      second statement, so with a snapshot taken after the locks — DELETE those of them
 *      still eligible (THE condition of eligibility.ts, re-checked: a compensation, an
 *      outbox message or a reconciliation item committed meanwhile protects the row;
 *      one not yet committed has to wait for our row lock, then finds the row gone);
 *      events phase: the same over idempotency_events (append-only: one statement), in
 *      batches of eventBatchSize (ten times the run's size: config.ts says why).
 *      That is PostgreSQL's spelling; MySQL's takes a few more statements for the same
 *      guarantee (purge-store.mysql.ts). Lock waits are bounded, and every statement walks the batch's id window in id order (withBatchSettings);
 *   4. in the same transaction advances the watermark (to the last candidate when the
 *      batch was full, else to the end of the window), adds the deleted counts, counts
 *      the batch, beats the heart and renews the lease.
 * So a process killed at any point loses at most the batch in flight, which rolls back
 * entirely: whoever resumes starts exactly after the last committed batch — nothing is
 * deleted twice, nothing skipped. When the watermark passes the highest id (of the
 * records phase; of the events phase: also the rollup watermark, see eligibility.ts) the
 * phase ends; after the events phase the run is completed and audited (purges.finish)
 * in the same transaction, with the row's final counts.
 *
 * Between batches that deleted something the worker pauses pause_ms (writers get the
 * table); a window with nothing to delete moves on at once. The lease lasts
 * PURGE_LEASE_SECONDS + pause_ms from every batch: a run whose worker died is taken over
 * by the next poll of any server (PURGE_POLL_SECONDS) or by `npm run purge -- --resume`.
 * A failing batch is retried with back-off (5 times in a row), then the run fails.
 */

/** Ids scanned per batch at most (a window with few eligible rows is still a short transaction). */
export function windowFor(batchSize: number): bigint {
  return BigInt(Math.min(Math.max(batchSize * 10, 50_000), 1_000_000));
}
export const MAX_CONSECUTIVE_FAILURES = 5;
const TX_OPTIONS = { timeout: 120_000, maxWait: 60_000 };

export interface WorkOptions {
  workerId: string;
  leaseSeconds?: number;
  log?: Pick<Console, "log" | "warn">;
  /** Checked between batches: true → leave the run (its lease expires; another process resumes it). */
  shouldStop?: () => boolean;
  /** Interruptible pause (the runner wakes it on cancel/stop). */
  sleep?: (ms: number) => Promise<void>;
  /** Called after every committed batch. */
  onBatch?: (run: PurgeRunView) => void;
}

export type WorkOutcome = { outcome: "finished" | "lost" | "stopped" | "gone"; run: PurgeRunView | null };

const plainSleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err)).slice(0, 2000);
const workerActor = (workerId: string): AuditActor => ({ type: "system", label: `purge worker ${workerId}` });

type Step =
  | { kind: "continue"; deleted: number; run: PurgeRunView }
  | { kind: "finished"; run: PurgeRunView }
  | { kind: "lost"; run: PurgeRunView }
  | { kind: "gone"; run: PurgeRunView | null };

async function maxId(db: Database, table: "records" | "events"): Promise<bigint> {
  const store = purgeStore(db.sql);
  const m = table === "records" ? await store.maxRecordId() : await store.maxEventId();
  return m === null ? 0n : BigInt(m);
}

async function recordsBatch(ex: SqlExecutor, store: PurgeStore, run: PurgeRunView, hi: bigint): Promise<{ candidates: bigint[]; deleted: number }> {
  const rules = run.policies as PolicyRule[];
  const ids = await store.lockEligibleRecords(rules, run.asOf, run.recordWatermark, hi, run.batchSize);
  if (ids.length === 0) return { candidates: [], deleted: 0 };
  // The census (lib/stats/census.ts) loses the counted ones in this same transaction, under
  // the refresher's lock, so it never sees half a purge.
  const deleted = await asCensusWriter(ex, () => store.deleteEligibleRecords(rules, run.asOf, ids));
  return { candidates: ids, deleted };
}

/** One batch transaction (see the module comment). `bounds` are the highest ids this loop works up to. */
async function step(
  db: Database,
  runId: bigint,
  opts: Required<Pick<WorkOptions, "workerId" | "leaseSeconds">>,
  bounds: { records?: bigint; events?: bigint },
): Promise<Step> {
  // The bounds are read outside the transaction (cheap, and a later resume only widens them).
  const current = await db.prisma.purgeRun.findUnique({ where: { id: runId }, select: { phase: true } });
  if (current?.phase === "records" && bounds.records === undefined) bounds.records = await maxId(db, "records");
  if (current?.phase === "events" && bounds.events === undefined) bounds.events = await maxId(db, "events");

  return db.prisma.$transaction(async (tx): Promise<Step> => {
    const ex = txExecutor(tx, db.dialect);
    const runs = retentionStore(ex);
    const purge = purgeStore(ex);
    return purge.withBatchSettings(() => batch(tx, ex, runs, purge, runId, opts, bounds));
  }, TX_OPTIONS);
}

/** The batch's statements, in its transaction (see step). */
async function batch(
  tx: Prisma.TransactionClient,
  ex: SqlExecutor,
  runs: RetentionStore,
  purge: PurgeStore,
  runId: bigint,
  opts: Required<Pick<WorkOptions, "workerId" | "leaseSeconds">>,
  bounds: { records?: bigint; events?: bigint },
): Promise<Step> {
  await runs.lockHoldsShared();
  if (!(await runs.lockRun(runId))) return { kind: "gone", run: null };
  const run = runView(await tx.purgeRun.findUniqueOrThrow({ where: { id: runId } }));
  if (!run.active) return { kind: "gone", run };
  if (run.worker !== opts.workerId) return { kind: "lost", run };
  const actor = workerActor(opts.workerId);
  if (run.state === "cancelling") return { kind: "finished", run: await finishRun(tx, runs, runId, "cancelled", { actor }) };

  const lease = opts.leaseSeconds + run.pauseMs / 1000;
  if (run.phase === "records") {
    const bound = bounds.records ?? 0n;
    if (run.recordWatermark >= bound) {
      await runs.enterEventsPhase(runId, lease);
      return { kind: "continue", deleted: 0, run: runView(await tx.purgeRun.findUniqueOrThrow({ where: { id: runId } })) };
    }
    const window = windowFor(run.batchSize);
    const hi = run.recordWatermark + window < bound ? run.recordWatermark + window : bound;
    const b = await recordsBatch(ex, purge, run, hi);
    const watermark = b.candidates.length === run.batchSize ? b.candidates[b.candidates.length - 1] : hi;
    await runs.recordsBatchDone(runId, { watermark, deleted: b.deleted, leaseSeconds: lease });
    return { kind: "continue", deleted: b.deleted, run: runView(await tx.purgeRun.findUniqueOrThrow({ where: { id: runId } })) };
  }
  if (run.phase === "events") {
    const bound = bounds.events ?? 0n;
    if (run.eventWatermark >= bound) return { kind: "finished", run: await finishRun(tx, runs, runId, "completed", { actor }) };
    const window = windowFor(run.eventBatchSize);
    const hi = run.eventWatermark + window < bound ? run.eventWatermark + window : bound;
    const b = await purge.deleteEligibleEvents(run.policies as PolicyRule[], run.asOf, run.eventWatermark, hi, run.eventBatchSize);
    const watermark = b.candidates === run.eventBatchSize && b.last !== null ? b.last : hi;
    await runs.eventsBatchDone(runId, { watermark, deleted: b.deleted, leaseSeconds: lease });
    return { kind: "continue", deleted: b.deleted, run: runView(await tx.purgeRun.findUniqueOrThrow({ where: { id: runId } })) };
  }
  return { kind: "finished", run: await finishRun(tx, runs, runId, "completed", { actor }) };
}

/**
 * Works run `runId` (already claimed by `opts.workerId`) until it finishes, is lost
 * to another worker, disappears, or `shouldStop` says so.
 */
export async function workRun(db: Database, runId: bigint, opts: WorkOptions): Promise<WorkOutcome> {
  const log = opts.log ?? console;
  const leaseSeconds = opts.leaseSeconds ?? purgeLeaseSeconds();
  const sleep = opts.sleep ?? plainSleep;
  const bounds: { records?: bigint; events?: bigint } = {};
  let failures = 0;
  for (;;) {
    if (opts.shouldStop?.()) return { outcome: "stopped", run: null };
    let s: Step;
    try {
      s = await step(db, runId, { workerId: opts.workerId, leaseSeconds }, bounds);
      failures = 0;
    } catch (err) {
      failures++;
      log.warn(`purge: run ${runId}: batch failed (${failures}/${MAX_CONSECUTIVE_FAILURES}): ${errorText(err)}`);
      await retentionStore(db.sql)
        .noteBatchError(runId, opts.workerId, errorText(err))
        .catch(() => {});
      if (failures >= MAX_CONSECUTIVE_FAILURES) {
        try {
          const run = await db.prisma.$transaction(async (tx) => {
            const runs = retentionStore(txExecutor(tx, db.dialect));
            return (await runs.lockRunOfWorker(runId, opts.workerId))
              ? finishRun(tx, runs, runId, "failed", { actor: workerActor(opts.workerId), lastError: errorText(err) })
              : null;
          });
          log.warn(`purge: run ${runId} failed after ${failures} failed batches in a row`);
          return { outcome: "finished", run };
        } catch (finalErr) {
          log.warn(`purge: run ${runId}: could not mark it failed (${errorText(finalErr)}); its lease will expire and another worker resumes it`);
          return { outcome: "stopped", run: null };
        }
      }
      await sleep(Math.min(1000 * 2 ** (failures - 1), 15_000));
      continue;
    }
    if (s.kind === "lost") {
      log.warn(`purge: run ${runId} is now worked by ${s.run?.worker ?? "another worker"}; ${opts.workerId} stops`);
      return { outcome: "lost", run: s.run };
    }
    if (s.kind === "gone") return { outcome: "gone", run: s.run };
    if (s.kind === "finished") {
      const r = s.run;
      log.log(`purge: run ${runId} ${r.state}: ${r.recordsDeleted} records and ${r.eventsDeleted} events deleted in ${r.batches} batches`);
      return { outcome: "finished", run: r };
    }
    opts.onBatch?.(s.run);
    // Writers get the table between batches that deleted something; empty windows move on.
    await (s.deleted > 0 && s.run.pauseMs > 0 ? sleep(s.run.pauseMs) : plainSleep(0));
  }
}

/**
 * Takes over the oldest active run nobody works any more (no worker, or its lease
 * has passed) — or `runId` when given — for `workerId`. Returns its id, or null.
 */
export async function claimRun(
  db: Database,
  workerId: string,
  opts: { leaseSeconds?: number; runId?: bigint; log?: Pick<Console, "log"> } = {},
): Promise<bigint | null> {
  const leaseSeconds = opts.leaseSeconds ?? purgeLeaseSeconds();
  return db.prisma.$transaction(async (tx) => {
    const runs = retentionStore(txExecutor(tx, db.dialect));
    const r = await runs.lockClaimableRun(workerId, opts.runId ?? null);
    if (!r) return null;
    await runs.claimRun(r.id, workerId, leaseSeconds);
    if (r.worker && r.worker !== workerId) {
      (opts.log ?? console).log(`purge: ${workerId} takes over run ${r.id} from ${r.worker} (lease expired ${r.leaseUntil?.toISOString() ?? "—"})`);
    }
    return BigInt(r.id);
  });
}

// ---------------------------------------------------------------------------
// The process's runner: background work for runs started here, and the poller.

interface Runner {
  workerId: string;
  active: Map<string, Promise<WorkOutcome>>;
  wakers: Map<string, () => void>;
  stopping: boolean;
  timer: ReturnType<typeof setTimeout> | null;
  polling: boolean;
}

const holder = ((globalThis as { __idempotencyConsolePurge?: { runner?: Runner } }).__idempotencyConsolePurge ??= {});

function runner(): Runner {
  holder.runner ??= {
    workerId: `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`,
    active: new Map(),
    wakers: new Map(),
    stopping: false,
    timer: null,
    polling: false,
  };
  return holder.runner;
}

/** This process's worker id (the `worker` column of the runs it works). */
export function processWorkerId(): string {
  return runner().workerId;
}

function interruptibleSleep(key: string): (ms: number) => Promise<void> {
  const r = runner();
  return (ms) =>
    new Promise<void>((resolve) => {
      const t = setTimeout(done, ms);
      function done() {
        clearTimeout(t);
        r.wakers.delete(key);
        resolve();
      }
      r.wakers.set(key, done);
    });
}

/**
 * Works a run claimed by this process in the background (the API's start, the
 * poller's takeover). Never throws; errors are logged.
 */
export function workInBackground(db: Database, runId: bigint, opts: Pick<WorkOptions, "log" | "leaseSeconds"> = {}): Promise<WorkOutcome> {
  const r = runner();
  const key = String(runId);
  const existing = r.active.get(key);
  if (existing) return existing;
  const log = opts.log ?? console;
  const work = workRun(db, runId, {
    workerId: r.workerId,
    leaseSeconds: opts.leaseSeconds,
    log,
    shouldStop: () => r.stopping,
    sleep: interruptibleSleep(key),
  })
    .catch((err): WorkOutcome => {
      log.warn(`purge: run ${runId}: worker stopped on an error: ${errorText(err)}`);
      return { outcome: "stopped", run: null };
    })
    .finally(() => r.active.delete(key));
  r.active.set(key, work);
  return work;
}

/** Ends the pause of a run worked here (a cancel was requested), so it reacts at once. */
export function wakePurge(runId: bigint): void {
  runner().wakers.get(String(runId))?.();
}

/** Waits for every run worked in this process to stop (tests). */
export async function waitForPurgeWork(): Promise<void> {
  while (runner().active.size) await Promise.all([...runner().active.values()]);
}

/** Stops the poller and the runs worked here after their batch in flight (their leases then expire). */
export async function stopPurgeWork(): Promise<void> {
  const r = runner();
  r.stopping = true;
  if (r.timer) clearTimeout(r.timer);
  r.timer = null;
  for (const wake of [...r.wakers.values()]) wake();
  await Promise.all([...r.active.values()]);
  r.stopping = false;
}

/** One poll: takes over a run whose worker's lease expired and works it in the background. */
export async function pollOnce(db: Database, opts: Pick<WorkOptions, "log" | "leaseSeconds"> = {}): Promise<bigint | null> {
  const r = runner();
  if (r.active.size || r.stopping) return null;
  const id = await claimRun(db, r.workerId, { leaseSeconds: opts.leaseSeconds, log: opts.log });
  if (id !== null) void workInBackground(db, id, opts);
  return id;
}

/**
 * The server's purge worker (instrumentation.ts): every PURGE_POLL_SECONDS (default
 * 5; 0 = off) it resumes a run whose worker's lease expired. Runs started through this
 * server's API are worked at once without waiting for a poll. Never throws.
 */
export function startPurgeWorker(
  getDb: () => Promise<Database>,
  opts: { log?: Pick<Console, "log" | "warn">; pollSeconds?: number } = {},
): { stop(): Promise<void> } | null {
  const r = runner();
  const pollSeconds = opts.pollSeconds ?? purgePollSeconds();
  const log = opts.log ?? console;
  if (!pollSeconds) {
    log.log("purge: no polling for abandoned runs (PURGE_POLL_SECONDS=0)");
    return null;
  }
  if (r.polling) return { stop: stopPurgeWork };
  r.polling = true;
  let lastError = 0;
  const tick = async () => {
    try {
      await pollOnce(await getDb(), { log });
    } catch (err) {
      if (Date.now() - lastError > 300_000) log.warn(`purge: poll failed: ${errorText(err)}`);
      lastError = Date.now();
    }
    if (r.stopping || !r.polling) return;
    r.timer = setTimeout(() => void tick(), pollSeconds * 1000);
    r.timer.unref?.();
  };
  r.timer = setTimeout(() => void tick(), pollSeconds * 1000);
  r.timer.unref?.();
  return {
    async stop() {
      r.polling = false;
      await stopPurgeWork();
    },
  };
}
