import { parseDuration } from "../kernel/input";

/**
 * Reconciliation settings, from the environment (read at call time, so tests and
 * scripts may set them before calling). A malformed value is reported and the
 * default used: a typo must not take the server or the reconciler down.
 *
 * | variable | meaning | default |
 * | --- | --- | --- |
 * | `RECONCILER_INTERVAL_SECONDS` | seconds between background reconciler ticks; `0` turns it off | `30` |
 * | `RECONCILER_BATCH_SIZE` | due items claimed per batch | `10` |
 * | `RECONCILE_BACKOFF_SECONDS` | first retry delay after an unknown answer or an unreachable provider (doubles each attempt) | `60` |
 * | `RECONCILE_BACKOFF_CAP` | longest retry delay (`s`, `m`, `h`, `d`) | `6h` |
 * | `RECONCILE_MAX_ATTEMPTS` | checks without a final answer before the item goes to `needs_manual` | `8` |
 * | `RECONCILE_LEASE_SECONDS` | how long a claimed (`checking`) item stays claimed; a crashed checker's item is taken over after it | `120` |
 * | `RECONCILE_CONCURRENCY` | provider lookups run at the same time (bulk check and each reconciler batch) | `4` |
 */
export interface ReconcileConfig {
  backoffBaseSeconds: number;
  backoffCapSeconds: number;
  maxAttempts: number;
  leaseSeconds: number;
  intervalSeconds: number;
  batchSize: number;
  concurrency: number;
}

export const DEFAULT_RECONCILE_CONFIG: ReconcileConfig = {
  backoffBaseSeconds: 60,
  backoffCapSeconds: 6 * 3600,
  maxAttempts: 8,
  leaseSeconds: 120,
  intervalSeconds: 30,
  batchSize: 10,
  concurrency: 4,
};

type Env = Record<string, string | undefined>;

function read(env: Env, name: string, fallback: number, min: number, max: number, log: Pick<Console, "warn">, duration = false): number {
  const text = env[name]?.trim();
  if (!text) return fallback;
  const value = duration ? parseDuration(text) : /^\d{1,9}$/.test(text) ? Number(text) : null;
  if (value === null || value < min || value > max) {
    log.warn(`reconcile: ${name}="${text}" is not ${duration ? "a duration" : "a whole number"} from ${min} to ${max}; using ${fallback}`);
    return fallback;
  }
  return value;
}

export function reconcileConfigFromEnv(env: Env = process.env, log: Pick<Console, "warn"> = console): ReconcileConfig {
  const d = DEFAULT_RECONCILE_CONFIG;
  const base = read(env, "RECONCILE_BACKOFF_SECONDS", d.backoffBaseSeconds, 1, 7 * 86400, log, true);
  const cap = read(env, "RECONCILE_BACKOFF_CAP", d.backoffCapSeconds, 1, 30 * 86400, log, true);
  return {
    backoffBaseSeconds: base,
    backoffCapSeconds: Math.max(base, cap),
    maxAttempts: read(env, "RECONCILE_MAX_ATTEMPTS", d.maxAttempts, 1, 1000, log),
    leaseSeconds: read(env, "RECONCILE_LEASE_SECONDS", d.leaseSeconds, 5, 86400, log),
    intervalSeconds: read(env, "RECONCILER_INTERVAL_SECONDS", d.intervalSeconds, 0, 86400, log),
    batchSize: read(env, "RECONCILER_BATCH_SIZE", d.batchSize, 1, 1000, log),
    concurrency: read(env, "RECONCILE_CONCURRENCY", d.concurrency, 1, 64, log),
  };
}

/** Delay before the next check after `attempts` checks without a final answer: base · 2^(attempts−1), capped. */
export function backoffSeconds(attempts: number, config: Pick<ReconcileConfig, "backoffBaseSeconds" | "backoffCapSeconds">): number {
  const n = Math.max(1, attempts);
  return Math.min(config.backoffCapSeconds, config.backoffBaseSeconds * 2 ** Math.min(n - 1, 40));
}
