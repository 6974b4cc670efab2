import { parseDuration } from "../kernel/input";

/**
 * The insights' thresholds and sample sizes, from the environment (read once per process;
 * tests pass their own). A malformed value fails loudly at first use rather than being
 * ignored.
 *
 * | variable | meaning | default |
 * | --- | --- | --- |
 * | `INSIGHTS_CONFLICT_WINDOW` | the recent window a conflict spike is judged in | `1h` |
 * | `INSIGHTS_CONFLICT_BASELINE` | the baseline before it (the scope × operation's own rate) | `7d` |
 * | `INSIGHTS_CONFLICT_FACTOR` | a spike: the window's rate at least this many times the baseline's | `5` |
 * | `INSIGHTS_CONFLICT_MIN` | … and at least this many conflicts in the window | `10` |
 * | `INSIGHTS_CONFLICT_MIN_RATE` | … and at least this conflict rate (0–1) | `0.05` |
 * | `INSIGHTS_STUCK_GROWTH` | records that turned stuck within `INSIGHTS_STUCK_WINDOW`, per operation | `10` |
 * | `INSIGHTS_STUCK_WINDOW` | | `1h` |
 * | `INSIGHTS_OLDEST_PENDING` | the oldest pending record of an operation older than this | `24h` |
 * | `INSIGHTS_EXPIRED_REPLAYS` | retries after the key expired within `INSIGHTS_EXPIRED_WINDOW`, per operation | `1` |
 * | `INSIGHTS_EXPIRED_WINDOW` | | `7d` |
 * | `INSIGHTS_NEW_FINDING_HOURS` | a key-quality finding is "new" this long after it was first seen | `24` |
 * | `INSIGHTS_RETRY_SAMPLE` | retry events read per operation by the retention advisor: the newest of each of 24 equal slices of the range | `6000` |
 * | `INSIGHTS_KEY_SAMPLE` | records read per scope (newest first) by the key-quality analysis | `1000` |
 * | `INSIGHTS_MAX_SCOPES` | scopes analysed for key quality (the busiest of the period) | `200` |
 * | `INSIGHTS_STORAGE_FACTOR` | "kept far longer than any retry": the configured expiry at least this many times the longest retry window | `100` |
 * | `INSIGHTS_ALERTS_SECONDS` | how often the server evaluates alerts, remembers them and tells the webhook (0 = off) | `60` |
 * | `INSIGHTS_WEBHOOK_URL` | optional Slack-compatible incoming webhook for newly firing alerts | — |
 * | `INSIGHTS_WEBHOOK_ATTEMPTS` | tries per alert and tick (exponential backoff from 500 ms) | `4` |
 */

/** The retry sample is spread over this many equal slices of the range (the newest of each), so a 30-day range is not read as its last minutes. */
export const RETRY_SLICES = 24;

export interface AlertThresholds {
  conflictWindowSeconds: number;
  conflictBaselineSeconds: number;
  conflictFactor: number;
  conflictMinCount: number;
  conflictMinRate: number;
  stuckGrowth: number;
  stuckWindowSeconds: number;
  oldestPendingSeconds: number;
  expiredReplays: number;
  expiredWindowSeconds: number;
  newFindingHours: number;
}

export interface InsightsConfig {
  alerts: AlertThresholds;
  retrySample: number;
  keySample: number;
  maxScopes: number;
  storageFactor: number;
  alertsIntervalSeconds: number;
  webhookUrl: string | null;
  webhookAttempts: number;
}

export const DEFAULT_THRESHOLDS: AlertThresholds = {
  conflictWindowSeconds: 3600,
  conflictBaselineSeconds: 7 * 86400,
  conflictFactor: 5,
  conflictMinCount: 10,
  conflictMinRate: 0.05,
  stuckGrowth: 10,
  stuckWindowSeconds: 3600,
  oldestPendingSeconds: 24 * 3600,
  expiredReplays: 1,
  expiredWindowSeconds: 7 * 86400,
  newFindingHours: 24,
};

type Env = Record<string, string | undefined>;

function duration(env: Env, name: string, fallback: number): number {
  const raw = env[name]?.trim();
  if (!raw) return fallback;
  const s = parseDuration(raw);
  if (s === null || s < 1) throw new Error(`${name}: "${raw}" is not a duration (e.g. 90s, 15m, 1h, 7d)`);
  return s;
}

function number(env: Env, name: string, fallback: number, min: number, max: number, integer = false): number {
  const raw = env[name]?.trim();
  if (!raw) return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min || n > max || (integer && !Number.isInteger(n))) {
    throw new Error(`${name}: "${raw}" is not ${integer ? "a whole number" : "a number"} in [${min}, ${max}]`);
  }
  return n;
}

export function parseInsightsConfig(env: Env = process.env): InsightsConfig {
  const url = env.INSIGHTS_WEBHOOK_URL?.trim() || null;
  if (url && !/^https?:\/\//i.test(url)) throw new Error(`INSIGHTS_WEBHOOK_URL: "${url}" is not an http(s) URL`);
  return {
    alerts: {
      conflictWindowSeconds: duration(env, "INSIGHTS_CONFLICT_WINDOW", DEFAULT_THRESHOLDS.conflictWindowSeconds),
      conflictBaselineSeconds: duration(env, "INSIGHTS_CONFLICT_BASELINE", DEFAULT_THRESHOLDS.conflictBaselineSeconds),
      conflictFactor: number(env, "INSIGHTS_CONFLICT_FACTOR", DEFAULT_THRESHOLDS.conflictFactor, 1, 1e6),
      conflictMinCount: number(env, "INSIGHTS_CONFLICT_MIN", DEFAULT_THRESHOLDS.conflictMinCount, 1, 1e9, true),
      conflictMinRate: number(env, "INSIGHTS_CONFLICT_MIN_RATE", DEFAULT_THRESHOLDS.conflictMinRate, 0, 1),
      stuckGrowth: number(env, "INSIGHTS_STUCK_GROWTH", DEFAULT_THRESHOLDS.stuckGrowth, 1, 1e9, true),
      stuckWindowSeconds: duration(env, "INSIGHTS_STUCK_WINDOW", DEFAULT_THRESHOLDS.stuckWindowSeconds),
      oldestPendingSeconds: duration(env, "INSIGHTS_OLDEST_PENDING", DEFAULT_THRESHOLDS.oldestPendingSeconds),
      expiredReplays: number(env, "INSIGHTS_EXPIRED_REPLAYS", DEFAULT_THRESHOLDS.expiredReplays, 1, 1e9, true),
      expiredWindowSeconds: duration(env, "INSIGHTS_EXPIRED_WINDOW", DEFAULT_THRESHOLDS.expiredWindowSeconds),
      newFindingHours: number(env, "INSIGHTS_NEW_FINDING_HOURS", DEFAULT_THRESHOLDS.newFindingHours, 1, 24 * 365, true),
    },
    retrySample: number(env, "INSIGHTS_RETRY_SAMPLE", 6000, 100, 1_000_000, true),
    keySample: number(env, "INSIGHTS_KEY_SAMPLE", 1000, 50, 100_000, true),
    maxScopes: number(env, "INSIGHTS_MAX_SCOPES", 200, 1, 10_000, true),
    storageFactor: number(env, "INSIGHTS_STORAGE_FACTOR", 100, 2, 1e9),
    alertsIntervalSeconds: number(env, "INSIGHTS_ALERTS_SECONDS", 60, 0, 86400, true),
    webhookUrl: url,
    webhookAttempts: number(env, "INSIGHTS_WEBHOOK_ATTEMPTS", 4, 1, 20, true),
  };
}

let cached: InsightsConfig | null = null;
/** The process's configuration (parsed once). */
export function insightsConfig(): InsightsConfig {
  cached ??= parseInsightsConfig();
  return cached;
}
