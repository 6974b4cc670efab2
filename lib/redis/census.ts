import type { Redis } from "ioredis";
import { createPeriodicTask, type PeriodicTask } from "../db/periodic";
import { redisConfig, type RedisStoreConfig } from "./config";
import { redisFor } from "./client";
import { assess, queueRead, readingOf, type KeyReading } from "./keys";

/**
 * The census of one Redis key store: every key under the store's pattern, read with
 * SCAN (a bounded COUNT per round trip — never KEYS) and one pipeline of GET/HGETALL +
 * PTTL per round, counted by state and stored HTTP status, with the TTL histogram,
 * the keys expiring soonest, the wedged keys (oldest first) and the flags. It runs in
 * the background (REDIS_CENSUS_SECONDS) on its own connection, one round trip at a
 * time, so the service's own commands interleave with it; screens, the API and
 * /api/metrics read the latest census and say when it was taken.
 *
 * SCAN may return a key twice (while Redis resizes its table), so keys are counted
 * once each (a Set of the keys seen). Keys created or deleted while the census runs
 * may or may not be in it — it is a census of the keyspace during the scan, exact for
 * the keys that existed throughout.
 */

export const TTL_BUCKETS = [
  { label: "< 1 min", upToSeconds: 60 },
  { label: "1–10 min", upToSeconds: 600 },
  { label: "10–60 min", upToSeconds: 3600 },
  { label: "1–6 h", upToSeconds: 6 * 3600 },
  { label: "6–24 h", upToSeconds: 86400 },
  { label: "≥ 24 h", upToSeconds: Infinity },
] as const;

export interface WedgedKey {
  key: string;
  stateValue: string;
  /** Seconds since the service set it; null when it never expires. */
  ageSeconds: number | null;
  /** Remaining TTL in seconds; null when it never expires. */
  ttlSeconds: number | null;
  /** How much longer retries of this key are refused; null = until someone deletes it. */
  refusingForSeconds: number | null;
}

export interface ExpiringKey {
  key: string;
  state: "processing" | "completed";
  ttlSeconds: number;
}

export interface RedisCensus {
  store: string;
  startedAt: string;
  /** When the census finished: the time its numbers describe. */
  takenAt: string;
  durationMs: number;
  /** Distinct keys under the pattern. */
  scanned: number;
  keysPerSecond: number;
  records: { processing: number; completed: number };
  /** Keys under the pattern that are not records of the format (ignored). */
  unrecognised: number;
  /** Completed records by stored HTTP status ("none": the format stores none). */
  byStatus: { status: string; count: number }[];
  ttl: {
    histogram: { label: string; count: number }[];
    noExpiry: number;
    expiringWithin1h: number;
    expiringWithin24h: number;
    /** Remaining TTL above the configured one: REDIS_KEY_TTL_SECONDS (or ttl=) is lower than what the service sets. */
    aboveConfiguredTtl: number;
  };
  wedged: { count: number; oldest: WedgedKey[] };
  /** Processing, but the library's in-progress lease ended: it takes the key over on the next request. */
  leaseExpired: number;
  expiringSoon: ExpiringKey[];
  fingerprints: { stored: boolean; withFingerprint: number; withoutFingerprint: number };
  cached5xx: number;
  flags: { kind: "cached_5xx" | "no_fingerprint" | "ttl_mismatch"; count: number; message: string }[];
}

export interface CensusOptions {
  scanCount?: number;
  /**
   * The least pause after every round trip (ms). The census rests after each round as long
   * as the round took, and at least this: it yields Redis and the CPU to the services half
   * the time.
   */
  pauseMs?: number;
  /** Awaited before every round trip (bench/redis.ts alternates census and idle windows with it). */
  beforeRound?: () => Promise<void>;
  /** How many wedged and expiring keys the census keeps (oldest / soonest first). */
  listLimit?: number;
}

/** Keeps the `limit` best items of a stream without holding them all: sorts and cuts when it doubles. */
class TopN<T> {
  private items: T[] = [];
  constructor(
    private readonly limit: number,
    private readonly better: (a: T, b: T) => number,
  ) {}
  push(item: T) {
    this.items.push(item);
    if (this.items.length >= this.limit * 2) this.trim();
  }
  private trim() {
    this.items.sort(this.better);
    this.items.length = Math.min(this.items.length, this.limit);
  }
  result(): T[] {
    this.trim();
    return this.items;
  }
}

export async function takeCensus(redis: Redis, store: RedisStoreConfig, opts: CensusOptions = {}): Promise<RedisCensus> {
  const count = opts.scanCount ?? redisConfig().scanCount;
  const pauseMs = opts.pauseMs ?? redisConfig().scanPauseMs;
  const limit = opts.listLimit ?? 100;
  const started = Date.now();
  const seen = new Set<string>();
  const records = { processing: 0, completed: 0 };
  let unrecognised = 0;
  const byStatus = new Map<string, number>();
  const histogram = TTL_BUCKETS.map(() => 0);
  let noExpiry = 0;
  let within1h = 0;
  let within24h = 0;
  let aboveTtl = 0;
  let wedgedCount = 0;
  let leaseExpired = 0;
  let withFp = 0;
  let withoutFp = 0;
  let cached5xx = 0;
  const wedged = new TopN<WedgedKey>(limit, (a, b) => (b.ageSeconds ?? Infinity) - (a.ageSeconds ?? Infinity) || (a.key < b.key ? -1 : 1));
  const expiring = new TopN<ExpiringKey>(50, (a, b) => a.ttlSeconds - b.ttlSeconds || (a.key < b.key ? -1 : 1));

  const tally = (r: KeyReading) => {
    const rec = r.record;
    if (!rec) return void unrecognised++;
    records[rec.state]++;
    if (rec.fingerprint) withFp++;
    else withoutFp++;
    if (rec.state === "completed") {
      const status = rec.httpStatus === null ? "none" : String(rec.httpStatus);
      byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
      if (rec.httpStatus !== null && rec.httpStatus >= 500) cached5xx++;
    }
    if (r.remainingMs === null) noExpiry++;
    else {
      const s = r.remainingMs / 1000;
      histogram[TTL_BUCKETS.findIndex((b) => s < b.upToSeconds)]++;
      if (s <= 3600) within1h++;
      if (s <= 86400) within24h++;
      if (r.remainingMs > store.ttlSeconds * 1000 + 1000) aboveTtl++;
      expiring.push({ key: r.key, state: rec.state, ttlSeconds: Math.ceil(s) });
    }
    const a = assess(store, r);
    if (a.leaseExpired) leaseExpired++;
    if (a.wedged) {
      wedgedCount++;
      wedged.push({
        key: r.key,
        stateValue: rec.stateValue,
        ageSeconds: a.ageMs === null ? null : Math.floor(a.ageMs / 1000),
        ttlSeconds: r.remainingMs === null ? null : Math.ceil(r.remainingMs / 1000),
        refusingForSeconds: a.refusingMs === null ? null : Math.ceil(a.refusingMs / 1000),
      });
    }
  };

  let cursor = "0";
  do {
    if (opts.beforeRound) await opts.beforeRound();
    const roundStarted = performance.now();
    const [next, batch] = await redis.scan(cursor, "MATCH", store.pattern, "COUNT", count);
    cursor = next;
    const keys = batch.filter((k) => !seen.has(k));
    for (const k of keys) seen.add(k);
    if (keys.length === 0) continue;
    const p = redis.pipeline();
    for (const k of keys) queueRead(p, store, k);
    const replies = ((await p.exec()) ?? []) as [Error | null, unknown][];
    const readAt = Date.now();
    keys.forEach((k, i) => {
      const r = readingOf(store, k, replies[2 * i], replies[2 * i + 1], readAt);
      if (r) tally(r);
      else seen.delete(k); // gone before it was read: not in the census
    });
    // Work at most half the time: rest as long as the round took (at least pauseMs).
    const rest = Math.max(pauseMs, performance.now() - roundStarted);
    if (rest > 0) await new Promise((resolve) => setTimeout(resolve, rest));
  } while (cursor !== "0");

  const finished = Date.now();
  const total = records.processing + records.completed;
  const fingerprintStored = store.format.fingerprintField !== null && withFp > 0;
  const flags: RedisCensus["flags"] = [];
  if (cached5xx > 0) {
    flags.push({
      kind: "cached_5xx",
      count: cached5xx,
      message: `${cached5xx} stored answer${cached5xx === 1 ? " is" : "s are"} a 5xx: every retry of ${cached5xx === 1 ? "that key" : "those keys"} replays the server error until the key expires. Do not store 5xx answers (delete the key, or store them with a short TTL) so a retry can run again.`,
    });
  }
  if (total > 0 && !fingerprintStored) {
    flags.push({ kind: "no_fingerprint", count: total, message: `No payload fingerprint: conflicts are undetectable. ${store.fingerprintAdvice}` });
  }
  if (aboveTtl > 0) {
    flags.push({
      kind: "ttl_mismatch",
      count: aboveTtl,
      message: `${aboveTtl} key${aboveTtl === 1 ? " has" : "s have"} more time to live than the configured ${store.ttlSeconds} s: set the store's TTL (REDIS_KEY_TTL_SECONDS or ttl=) to what the service sets, or ages are underestimated.`,
    });
  }
  return {
    store: store.name,
    startedAt: new Date(started).toISOString(),
    takenAt: new Date(finished).toISOString(),
    durationMs: finished - started,
    scanned: seen.size,
    keysPerSecond: Math.round(seen.size / Math.max(0.001, (finished - started) / 1000)),
    records,
    unrecognised,
    byStatus: [...byStatus].map(([status, n]) => ({ status, count: n })).sort((a, b) => a.status.localeCompare(b.status)),
    ttl: {
      histogram: TTL_BUCKETS.map((b, i) => ({ label: b.label, count: histogram[i] })),
      noExpiry,
      expiringWithin1h: within1h,
      expiringWithin24h: within24h,
      aboveConfiguredTtl: aboveTtl,
    },
    wedged: { count: wedgedCount, oldest: wedged.result() },
    leaseExpired,
    expiringSoon: expiring.result(),
    fingerprints: { stored: fingerprintStored, withFingerprint: withFp, withoutFingerprint: withoutFp },
    cached5xx,
    flags,
  };
}

// --- The latest census per store (this process) --------------------------------------------

interface StoreState {
  latest?: RedisCensus;
  running?: Promise<RedisCensus>;
  error?: { message: string; since: string; at: string };
}

const states = new Map<string, StoreState>();
const stateOf = (store: RedisStoreConfig) => {
  const id = `${store.name}\u0000${store.url}\u0000${store.pattern}`;
  let s = states.get(id);
  if (!s) states.set(id, (s = {}));
  return s;
};

/** The latest census of the store, taking one first when there is none (or `fresh`); one at a time per store. */
export function censusOf(store: RedisStoreConfig, opts: { fresh?: boolean } & CensusOptions = {}): Promise<RedisCensus> {
  const s = stateOf(store);
  if (s.latest && !opts.fresh) return Promise.resolve(s.latest);
  if (s.running) return s.running;
  s.running = takeCensus(redisFor(store, "census"), store, opts)
    .then((c) => {
      s.latest = c;
      s.error = undefined;
      return c;
    })
    .catch((err: unknown) => {
      const now = new Date().toISOString();
      s.error = { message: err instanceof Error ? err.message : String(err), since: s.error?.since ?? now, at: now };
      throw err;
    })
    .finally(() => {
      s.running = undefined;
    });
  return s.running;
}

/** What this process knows of the store without scanning: the latest census and the last failure. */
export function censusState(store: RedisStoreConfig): { latest: RedisCensus | null; running: boolean; error: StoreState["error"] | null } {
  const s = stateOf(store);
  return { latest: s.latest ?? null, running: Boolean(s.running), error: s.error ?? null };
}

/**
 * The server's background census (instrumentation.ts): every REDIS_CENSUS_SECONDS, each
 * store in turn. Each console instance keeps its own (the console never writes to the
 * services' Redis, not even a lock). Null when no store is configured or the interval is 0.
 */
export interface CensusTick {
  status: string;
  error?: unknown;
}

export function startRedisCensus(): PeriodicTask<CensusTick> | null {
  const config = redisConfig();
  if (config.stores.length === 0 || config.censusIntervalSeconds === 0) return null;
  return createPeriodicTask<CensusTick>({
    name: "redis census",
    intervalSeconds: config.censusIntervalSeconds,
    firstDelayMs: 2000,
    work: async () => {
      const failed: string[] = [];
      for (const store of config.stores) {
        await censusOf(store, { fresh: true }).catch((err: unknown) => failed.push(`${store.name}: ${err instanceof Error ? err.message : String(err)}`));
      }
      const tick: CensusTick = failed.length ? { status: "failed", error: new Error(failed.join("; ")) } : { status: "done" };
      return tick;
    },
    failed: (error) => ({ status: "failed", error }),
    skipped: (status) => ({ status }),
  });
}

/** The latest census, or the first one if it arrives within `waitMs` (null meanwhile; it keeps running). */
export async function censusSoon(store: RedisStoreConfig, waitMs: number): Promise<RedisCensus | null> {
  const first = censusOf(store).catch(() => null);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), waitMs)));
  try {
    return await Promise.race([first, late]);
  } finally {
    clearTimeout(timer);
  }
}
