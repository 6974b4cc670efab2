import { lockNameOf, withTrySessionLock } from "./locks";
import type { SqlExecutor } from "./sql";

/**
 * The one engine behind the server's background loops (rollup refresher,
 * reconciler, purge worker): ticks that never overlap (the next is scheduled when
 * one ends), an unref'd timer cleared on exit, and failures that never take the
 * server down — the first is logged, then at most every 5 minutes while it
 * persists, and the recovery too.
 */

export interface TickResult {
  status: string;
  error?: unknown;
}

export interface PeriodicTask<T extends TickResult> {
  readonly intervalSeconds: number;
  /** One tick now; never throws ("busy" while one runs, "stopped" after stop()). */
  runOnce(): Promise<T>;
  /** Stops the timer and waits for a running tick. */
  stop(): Promise<void>;
}

export interface PeriodicTaskOptions<T extends TickResult> {
  /** Log prefix, e.g. "reconciler". */
  name: string;
  /** Seconds between the end of one tick and the start of the next; 0 = no timer (runOnce only). */
  intervalSeconds: number;
  /** Delay of the first tick (default: one interval). */
  firstDelayMs?: number;
  work: () => Promise<T>;
  /** The result standing for a tick that threw, or that did not run ("busy", "stopped"). */
  failed: (error: unknown) => T;
  skipped: (status: "busy" | "stopped") => T;
  /** What a successful tick reports (null: nothing worth a line). */
  describe?: (result: T) => string | null;
  log?: Pick<Console, "log" | "warn">;
}

const ERROR_LOG_EVERY_MS = 5 * 60_000;
const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

export function createPeriodicTask<T extends TickResult>(opts: PeriodicTaskOptions<T>): PeriodicTask<T> {
  const { name, intervalSeconds } = opts;
  const log = opts.log ?? console;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let running: Promise<T> | null = null;
  let stopped = false;
  let failingSince: number | null = null;
  let failures = 0;
  let lastErrorLog = 0;

  function report(result: T) {
    const now = Date.now();
    if (result.status === "failed") {
      failures++;
      failingSince ??= now;
      if (now - lastErrorLog >= ERROR_LOG_EVERY_MS) {
        lastErrorLog = now;
        log.warn(
          `${name}: tick failed (${failures} time${failures > 1 ? "s" : ""} since ${new Date(failingSince).toISOString()}): ${message(result.error)}; retrying every ${intervalSeconds || "—"} s`,
        );
      }
      return;
    }
    if (failingSince !== null) {
      log.log(`${name}: works again after ${failures} failure${failures > 1 ? "s" : ""}`);
      failingSince = null;
      failures = 0;
      lastErrorLog = 0;
    }
    const line = opts.describe?.(result);
    if (line) log.log(`${name}: ${line}`);
  }

  function runOnce(): Promise<T> {
    if (stopped) return Promise.resolve(opts.skipped("stopped"));
    if (running) return Promise.resolve(opts.skipped("busy"));
    running = opts
      .work()
      .catch((error: unknown) => opts.failed(error))
      .then((result) => {
        try {
          report(result);
        } catch {
          // logging must not break the loop
        }
        return result;
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
    schedule(opts.firstDelayMs ?? intervalSeconds * 1000);
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

/**
 * Runs `fn` only if this session gets the advisory lock `lockId` (one instance at a
 * time across processes; the others skip instead of queueing); null when it did not.
 * (lib/db/locks.ts withTrySessionLock by name; this keeps the callers' LOCKS ids.)
 */
export function withTryAdvisoryLock<T>(session: SqlExecutor, lockId: number, fn: () => Promise<T>): Promise<T | null> {
  return withTrySessionLock(session, lockNameOf(lockId), fn);
}
