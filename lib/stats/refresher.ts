import { LOCKS } from "../db/locks";
import type { Database } from "../db/client";
import { createPeriodicTask, withTryAdvisoryLock, type PeriodicTask } from "../db/periodic";
import { driftRecords } from "./census";
import { rollupStore } from "./rollup-store";
import { refreshRollups, sweepCensus, sweepRecordsFromEnv, verifyRecordCensus, type RefreshResult } from "./rollups";

/**
 * The background rollup refresher of the server process (started by instrumentation.ts,
 * in every database mode). Every ROLLUP_REFRESH_SECONDS (default 15; 0 turns it off) it
 * rolls up the new events (lib/stats/rollups.ts refreshRollups). Counts are exact whether
 * or not it runs (the raw remainder is counted meanwhile); it keeps that remainder small,
 * which is what keeps the overview and /api/metrics cheap.
 *
 * - Cheap when idle: one autocommit statement (three index probes) decides whether there is
 *   anything new (events, gaps, records); only then does it open refreshRollups'
 *   transactions. Otherwise it only sweeps the next CENSUS_SWEEP_RECORDS records (default
 *   5,000; 0 = off) for what writers changed without an event (lib/stats/census.ts).
 * - One refresher at a time across processes: a session-level try-lock (lib/db/locks:
 *   pg_try_advisory_lock, GET_LOCK on MySQL) — an instance that does not get it skips the
 *   tick instead of queueing behind the one that did (refreshRollups' own writers' lock still
 *   serialises any other caller).
 * - Never takes the server down: every failure (database down, lock timeout, bug) is
 *   caught and logged — the first one, then at most every 5 minutes while it persists,
 *   and the recovery — and the next tick tries again.
 * - Every CENSUS_VERIFY_HOURS (default 24; 0 = off) it also checks the record census
 *   against the records (verifyRecordCensus: O(records), read in a snapshot without the
 *   refresher's lock), repairs any drift and warns about it. The clock starts at the first
 *   tick on a database (no check at boot).
 * - Ticks never overlap (the next is scheduled when one ends); the timer is unref'd, and
 *   cleared on process exit. A tick cut off by exit leaves nothing half-done: each batch
 *   of refreshRollups is one transaction, rolled back with the dropped connection.
 */

export const DEFAULT_REFRESH_SECONDS = 15;
export const DEFAULT_CENSUS_VERIFY_HOURS = 24;

/** What a census check found (records = the sum of the absolute differences). */
export interface CensusCheck {
  driftHours: number;
  driftRecords: number;
  ms: number;
}

export type TickOutcome =
  | { status: "refreshed"; result: RefreshResult; ms: number; census?: CensusCheck }
  | { status: "verified"; census: CensusCheck }
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
  /** Seconds between census checks; 0 = none (default: CENSUS_VERIFY_HOURS). */
  censusVerifySeconds?: number;
  /** Records the census sweep re-checks per tick; 0 = none (default: CENSUS_SWEEP_RECORDS). */
  sweepRecords?: number;
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

/** CENSUS_VERIFY_HOURS: whole hours ≥ 0 (0 = off); anything else → the default, with a warning. Returns seconds. */
export function censusVerifySecondsFromEnv(env: Record<string, string | undefined> = process.env, log: Pick<Console, "warn"> = console): number {
  const text = env.CENSUS_VERIFY_HOURS?.trim();
  if (!text) return DEFAULT_CENSUS_VERIFY_HOURS * 3600;
  if (/^\d{1,5}$/.test(text)) return Number(text) * 3600;
  log.warn(`rollups: CENSUS_VERIFY_HOURS="${text}" is not a whole number of hours; using ${DEFAULT_CENSUS_VERIFY_HOURS}`);
  return DEFAULT_CENSUS_VERIFY_HOURS * 3600;
}

export function createRollupRefresher(opts: RefresherOptions): RollupRefresher {
  let firstRun = true;
  const intervalSeconds = opts.intervalSeconds ?? DEFAULT_REFRESH_SECONDS;
  const verifySeconds = opts.censusVerifySeconds ?? censusVerifySecondsFromEnv(process.env, opts.log ?? console);
  const log = opts.log ?? console;

  async function work(): Promise<TickOutcome> {
    const database = await opts.database();
    return database.withSession(async (s) => {
      const rollups = rollupStore(s);
      const { due, verifyDue, verifyUnset } = await rollups.refreshDue(verifySeconds);
      if (verifySeconds > 0 && verifyUnset) {
        // The clock starts at the first tick on this database: no O(records) check at boot.
        await rollups.startVerifyClock();
      }
      const sweep = opts.sweepRecords ?? sweepRecordsFromEnv();
      if (!due && !verifyDue && !sweep) return { status: "idle" } as const;
      const outcome = await withTryAdvisoryLock(s, LOCKS.refresher, async (): Promise<TickOutcome> => {
        let refreshed: { result: RefreshResult; ms: number } | null = null;
        if (due) {
          const t = performance.now();
          const result = await refreshRollups(s, { batchSize: opts.batchSize, sweepRecords: sweep });
          refreshed = { result, ms: Math.round(performance.now() - t) };
        } else if (sweep) {
          await sweepCensus(s, sweep);
        }
        let census: CensusCheck | undefined;
        if (verifyDue) {
          const t = performance.now();
          const drift = await verifyRecordCensus(s);
          census = { driftHours: drift.length, driftRecords: driftRecords(drift), ms: Math.round(performance.now() - t) };
          if (drift.length) {
            log.warn(
              `rollups: the record census was off by ${census.driftRecords} record(s) in ${drift.length} operation-hour(s) and is repaired — a writer deleted records or changed their expires_at without any event the refresh could see, and the sweep had not reached them yet (lib/stats/census.ts)`,
            );
          }
        }
        if (refreshed) return { status: "refreshed", ...refreshed, ...(census ? { census } : {}) };
        if (census) return { status: "verified", census };
        return { status: "idle" };
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
