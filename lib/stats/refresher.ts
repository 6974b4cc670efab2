import type { Database } from "../db/client";
import { createPeriodicTask, withTryAdvisoryLock, type PeriodicTask } from "../db/periodic";
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

export type RollupRefresher = PeriodicTask<TickOutcome>;

/** ROLLUP_REFRESH_SECONDS: whole seconds ≥ 0 (0 = off); anything else → the default, with a warning. */
export function refreshSecondsFromEnv(env: Record<string, string | undefined> = process.env, log: Pick<Console, "warn"> = console): number {
  const text = env.ROLLUP_REFRESH_SECONDS?.trim();
  if (!text) return DEFAULT_REFRESH_SECONDS;
  if (/^\d{1,6}$/.test(text)) return Number(text);
  log.warn(`rollups: ROLLUP_REFRESH_SECONDS="${text}" is not a whole number of seconds; using ${DEFAULT_REFRESH_SECONDS}`);
  return DEFAULT_REFRESH_SECONDS;
}

export function createRollupRefresher(opts: RefresherOptions): RollupRefresher {
  let firstRun = true;
  const intervalSeconds = opts.intervalSeconds ?? DEFAULT_REFRESH_SECONDS;

  async function work(): Promise<TickOutcome> {
    const database = await opts.database();
    return database.withSession(async (s) => {
      const [{ due }] = await s.query<{ due: boolean }>(
        `SELECT COALESCE((SELECT max(id) FROM idempotency_events), 0) > COALESCE((SELECT watermark FROM rollup_state WHERE name = 'events'), 0)
                OR EXISTS (SELECT 1 FROM rollup_gaps) AS due`,
      );
      if (!due) return { status: "idle" } as const;
      const outcome = await withTryAdvisoryLock(s, REFRESHER_LOCK_ID, async () => {
        const t = performance.now();
        const result = await refreshRollups(s, { batchSize: opts.batchSize });
        return { status: "refreshed", result, ms: Math.round(performance.now() - t) } as const;
      });
      return outcome ?? ({ status: "locked" } as const);
    });
  }

  return createPeriodicTask<TickOutcome>({
    name: "rollups",
    intervalSeconds,
    firstDelayMs: 0,
    work,
    failed: (error) => ({ status: "failed", error }),
    skipped: (status) => ({ status }),
    log: opts.log,
    describe(outcome) {
      const first = firstRun;
      if (outcome.status !== "busy") firstRun = false;
      if (outcome.status !== "refreshed" || !(first || outcome.result.eventsCounted >= 100_000)) return null;
      const r = outcome.result;
      return `${r.eventsCounted} events rolled up in ${outcome.ms} ms (watermark ${r.watermark}, ${r.gapsOpen} gaps open)${intervalSeconds ? `; refreshing every ${intervalSeconds} s` : ""}`;
    },
  });
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
