import type { Database } from "../db/client";
import { refreshRollups, type RefreshResult } from "./rollups";

/**
 * The background rollup refresher of the server process (started by instrumentation.ts,
 * in both database modes). Every ROLLUP_REFRESH_SECONDS (default 15; 0 turns it off) it
 * rolls up the new events (lib/stats/rollups.ts refreshRollups). Counts are exact whether
 * or not it runs (the raw remainder is counted meanwhile); it keeps that remainder small,
 * which is what keeps the overview and /api/metrics cheap.
 *
 * - Cheap when idle: one autocommit statement (two index probes) decides whether there is
 *   anything new; only then does it open refreshRollups' transactions. (On the embedded
 *   PGlite, one connection shared with every request, that also keeps its multi-statement
 *   transactions out of the way of requests once the demo data is rolled up.)
 * - One refresher at a time across processes: a session-level pg_try_advisory_lock — an
 *   instance that does not get it skips the tick instead of queueing behind the one that
 *   did (refreshRollups' own transaction-level lock still serialises any other caller).
 * - Never takes the server down: every failure (database down, lock timeout, bug) is
 *   caught and logged — the first one, then at most every 5 minutes while it persists,
 *   and the recovery — and the next tick tries again.
 * - Ticks never overlap (the next is scheduled when one ends); the timer is unref'd, and
 *   cleared on process exit. A tick cut off by exit leaves nothing half-done: each batch
 *   of refreshRollups is one transaction, rolled back with the dropped connection.
 */

/** Distinct from refreshRollups' transaction lock (72707371) and the migration lock (72707369). */
export const REFRESHER_LOCK_ID = 72707380;
export const DEFAULT_REFRESH_SECONDS = 15;
const ERROR_LOG_EVERY_MS = 5 * 60_000;

export type TickOutcome =
  | { status: "refreshed"; result: RefreshResult; ms: number }
  | { status: "idle" }
  | { status: "locked" }
  | { status: "busy" }
  | { status: "stopped" }
  | { status: "failed"; error: unknown };

export interface RefresherOptions {
  /** The database (opened lazily: the server may start before it is reachable). */
  database: () => Promise<Database>;
  /** Seconds between the end of one tick and the start of the next; 0 = no timer (runOnce only). */
  intervalSeconds?: number;
  batchSize?: number;
  log?: Pick<Console, "log" | "warn">;
}

export interface RollupRefresher {
  readonly intervalSeconds: number;
  /** One tick now; never throws. */
  runOnce(): Promise<TickOutcome>;
  /** Stops the timer and waits for a running tick. */
  stop(): Promise<void>;
}

/** ROLLUP_REFRESH_SECONDS: whole seconds ≥ 0 (0 = off); anything else → the default, with a warning. */
export function refreshSecondsFromEnv(env: Record<string, string | undefined> = process.env, log: Pick<Console, "warn"> = console): number {
  const text = env.ROLLUP_REFRESH_SECONDS?.trim();
  if (!text) return DEFAULT_REFRESH_SECONDS;
  if (/^\d{1,6}$/.test(text)) return Number(text);
  log.warn(`rollups: ROLLUP_REFRESH_SECONDS="${text}" is not a whole number of seconds; using ${DEFAULT_REFRESH_SECONDS}`);
  return DEFAULT_REFRESH_SECONDS;
}

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

export function createRollupRefresher(opts: RefresherOptions): RollupRefresher {
  const intervalSeconds = opts.intervalSeconds ?? DEFAULT_REFRESH_SECONDS;
  const log = opts.log ?? console;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let running: Promise<TickOutcome> | null = null;
  let stopped = false;
  let failingSince: number | null = null;
  let lastErrorLog = 0;
  let failures = 0;
  let firstRun = true;

  async function work(): Promise<TickOutcome> {
    const database = await opts.database();
    return database.withSession(async (s) => {
      const [{ due }] = await s.query<{ due: boolean }>(
        `SELECT COALESCE((SELECT max(id) FROM idempotency_events), 0) > COALESCE((SELECT watermark FROM rollup_state WHERE name = 'events'), 0)
                OR EXISTS (SELECT 1 FROM rollup_gaps) AS due`,
      );
      if (!due) return { status: "idle" } as const;
      const [{ ok }] = await s.query<{ ok: boolean }>(`SELECT pg_try_advisory_lock($1) AS ok`, [REFRESHER_LOCK_ID]);
      if (!ok) return { status: "locked" } as const;
      try {
        const t = performance.now();
        const result = await refreshRollups(s, { batchSize: opts.batchSize });
        return { status: "refreshed", result, ms: Math.round(performance.now() - t) } as const;
      } finally {
        await s.query(`SELECT pg_advisory_unlock($1)`, [REFRESHER_LOCK_ID]).catch(() => {});
      }
    });
  }

  function report(outcome: TickOutcome) {
    const now = Date.now();
    if (outcome.status === "failed") {
      failures++;
      failingSince ??= now;
      if (now - lastErrorLog >= ERROR_LOG_EVERY_MS) {
        lastErrorLog = now;
        log.warn(`rollups: refresh failed (${failures} time${failures > 1 ? "s" : ""} since ${new Date(failingSince).toISOString()}): ${message(outcome.error)}; retrying every ${intervalSeconds || "—"} s`);
      }
      return;
    }
    if (failingSince !== null) {
      log.log(`rollups: refresh works again after ${failures} failure${failures > 1 ? "s" : ""}`);
      failingSince = null;
      failures = 0;
      lastErrorLog = 0;
    }
    if (outcome.status === "refreshed" && (firstRun || outcome.result.eventsCounted >= 100_000)) {
      const r = outcome.result;
      log.log(`rollups: ${r.eventsCounted} events rolled up in ${outcome.ms} ms (watermark ${r.watermark}, ${r.gapsOpen} gaps open)${intervalSeconds ? `; refreshing every ${intervalSeconds} s` : ""}`);
    }
    if (outcome.status !== "busy") firstRun = false;
  }

  function runOnce(): Promise<TickOutcome> {
    if (stopped) return Promise.resolve({ status: "stopped" });
    if (running) return Promise.resolve({ status: "busy" });
    running = work()
      .catch((error: unknown): TickOutcome => ({ status: "failed", error }))
      .then((outcome) => {
        try {
          report(outcome);
        } catch {
          // logging must not break the loop
        }
        return outcome;
      })
      .finally(() => {
        running = null;
      });
    return running;
  }

  function schedule(delayMs: number) {
    if (stopped || !intervalSeconds) return;
    timer = setTimeout(() => {
      timer = null;
      void runOnce().then(() => schedule(intervalSeconds * 1000));
    }, delayMs);
    timer.unref?.();
  }

  const onExit = () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
  if (intervalSeconds) {
    process.once("exit", onExit);
    schedule(0);
  }

  return {
    intervalSeconds,
    runOnce,
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = null;
      process.removeListener("exit", onExit);
      await running;
    },
  };
}

type Holder = { refresher?: RollupRefresher };
// One per process, even when Next re-evaluates modules (dev reloads).
const holder: Holder = ((globalThis as { __idempotencyConsoleRefresher?: Holder }).__idempotencyConsoleRefresher ??= {});

/**
 * The server's refresher (idempotent). ROLLUP_REFRESH_SECONDS=0 → none; the overview
 * and metrics stay exact, just costlier as unrolled events accumulate.
 */
export function startRollupRefresher(database: () => Promise<Database>, opts: Omit<RefresherOptions, "database"> = {}): RollupRefresher | null {
  if (holder.refresher) return holder.refresher;
  const intervalSeconds = opts.intervalSeconds ?? refreshSecondsFromEnv();
  if (!intervalSeconds) {
    (opts.log ?? console).log("rollups: background refresh off (ROLLUP_REFRESH_SECONDS=0)");
    return null;
  }
  holder.refresher = createRollupRefresher({ ...opts, database, intervalSeconds });
  return holder.refresher;
}

export async function stopRollupRefresher(): Promise<void> {
  const r = holder.refresher;
  holder.refresher = undefined;
  await r?.stop();
}
