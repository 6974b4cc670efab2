import type { Database } from "../db/client";
import { isServerMode } from "../db/config";
import { createPeriodicTask, type PeriodicTask } from "../db/periodic";
import { reconcileConfigFromEnv, type ReconcileConfig } from "./config";
import { claimDueItems, RECONCILER_ACTOR, reconcileClaimedItem, type ClaimedItem, type ReconcileAction, type ReconcileOptions } from "./core";
import { reconcileStore } from "./store";

/**
 * The background reconciler. Every RECONCILER_INTERVAL_SECONDS (default 30; 0
 * turns it off) it works the due items — open with next_check_at reached, or
 * checking with an expired lease — in batches of RECONCILER_BATCH_SIZE, a few
 * lookups at a time, as the system actor "reconciler".
 *
 * - One instance at a time across processes: on a database server a tick first takes the
 *   reconciler's lock (ReconcileStore.withReconcilerLock: a try-lock on a dedicated
 *   session, held while it works; an instance that does not get it skips the tick).
 *   The per-item claim (FOR UPDATE SKIP LOCKED, with a lease) is the second line of
 *   defence: even two instances that both ran would never check the same item at once. Embedded PGlite lives in one
 *   process (its folder cannot be shared), so there the lock is not needed — and a
 *   PGlite session would block every request while the provider is asked.
 * - Never takes the server down: failures are caught and logged (the first one,
 *   then at most every 5 minutes while they persist), and the next tick tries again.
 * - Ticks never overlap; the timer is unref'd. `npm run reconciler` (scripts/reconciler.ts)
 *   runs the same ticks from the command line.
 */

/** Items per tick at most, so one tick never runs for ever while new items keep coming due. */
const MAX_BATCHES_PER_TICK = 20;

export interface TickSummary {
  status: "worked" | "idle" | "locked" | "busy" | "stopped" | "failed";
  items: number;
  actions: Partial<Record<ReconcileAction, number>>;
  errors: number;
  ms: number;
  error?: unknown;
}

export interface ReconcilerRunOptions extends Pick<ReconcileOptions, "clock" | "stuck" | "onLookup"> {
  config?: ReconcileConfig;
  /** Take the cross-process lock (a database server). Default true; tests turn it off to exercise the per-item claim. */
  lock?: boolean;
  log?: Pick<Console, "log" | "warn" | "error">;
}

async function mapLimited<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** Works the due items once (batches until none is due or the per-tick cap is reached). */
export async function runReconcilerOnce(database: Database, opts: ReconcilerRunOptions = {}): Promise<TickSummary> {
  const config = opts.config ?? reconcileConfigFromEnv();
  const log = opts.log ?? console;
  const t0 = performance.now();
  const work = async (): Promise<TickSummary> => {
    const summary: TickSummary = { status: "idle", items: 0, actions: {}, errors: 0, ms: 0 };
    for (let batch = 0; batch < MAX_BATCHES_PER_TICK; batch++) {
      const now = (opts.clock ?? (() => new Date()))();
      const items = await claimDueItems(database, config.batchSize, now, config);
      if (items.length === 0) break;
      summary.status = "worked";
      await mapLimited(items, config.concurrency, async (item: ClaimedItem) => {
        try {
          const outcome = await reconcileClaimedItem(database, item, RECONCILER_ACTOR, { ...opts, config });
          summary.items++;
          summary.actions[outcome.action] = (summary.actions[outcome.action] ?? 0) + 1;
        } catch (err) {
          // The item stays claimed until its lease ends, then is checked again.
          summary.errors++;
          log.error(`reconciler: item ${item.id} (record ${item.recordId}) failed:`, err instanceof Error ? err.message : err);
        }
      });
      if (items.length < config.batchSize) break;
    }
    return summary;
  };

  let result: TickSummary;
  if (isServerMode(database.mode) && opts.lock !== false) {
    result = (await database.withSession((s) => reconcileStore(s).withReconcilerLock(work))) ?? idle("locked");
  } else {
    result = await work();
  }
  result.ms = Math.round(performance.now() - t0);
  return result;
}

export type Reconciler = PeriodicTask<TickSummary>;

const idle = (status: TickSummary["status"], error?: unknown): TickSummary => ({
  status,
  items: 0,
  actions: {},
  errors: status === "failed" ? 1 : 0,
  ms: 0,
  error,
});

export function createReconciler(getDb: () => Promise<Database>, opts: ReconcilerRunOptions & { intervalSeconds?: number } = {}): Reconciler {
  const config = opts.config ?? reconcileConfigFromEnv();
  return createPeriodicTask<TickSummary>({
    name: "reconciler",
    intervalSeconds: opts.intervalSeconds ?? config.intervalSeconds,
    work: async () => runReconcilerOnce(await getDb(), { ...opts, config }),
    failed: (error) => idle("failed", error),
    skipped: (status) => idle(status),
    log: opts.log,
    describe(s) {
      if (s.status !== "worked") return null;
      const parts = Object.entries(s.actions).map(([k, n]) => `${n} ${k}`);
      return `${s.items} item${s.items === 1 ? "" : "s"} checked in ${s.ms} ms (${parts.join(", ") || "none"}${s.errors ? `, ${s.errors} errors` : ""})`;
    },
  });
}

type Holder = { reconciler?: Reconciler };
// One per process, even when Next re-evaluates modules (dev reloads).
const holder: Holder = ((globalThis as { __idempotencyConsoleReconciler?: Holder }).__idempotencyConsoleReconciler ??= {});

/** The server's background reconciler (idempotent); null when RECONCILER_INTERVAL_SECONDS=0. Never throws. */
export function startReconciler(getDb: () => Promise<Database>, opts: ReconcilerRunOptions & { intervalSeconds?: number } = {}): Reconciler | null {
  try {
    if (holder.reconciler) return holder.reconciler;
    const config = opts.config ?? reconcileConfigFromEnv();
    const intervalSeconds = opts.intervalSeconds ?? config.intervalSeconds;
    if (!intervalSeconds) {
      (opts.log ?? console).log("reconciler: background reconciliation off (RECONCILER_INTERVAL_SECONDS=0)");
      return null;
    }
    holder.reconciler = createReconciler(getDb, { ...opts, config, intervalSeconds });
    return holder.reconciler;
  } catch (err) {
    console.error("reconciler: not started:", err instanceof Error ? err.message : err);
    return null;
  }
}

export async function stopReconciler(): Promise<void> {
  const r = holder.reconciler;
  holder.reconciler = undefined;
  await r?.stop();
}
