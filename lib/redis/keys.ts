import type { ChainableCommander, Redis } from "ioredis";
import type { RedisStoreConfig } from "./config";
import { decodeValue, type KeyRecord, type RawValue } from "./formats";
import { globToRegExp } from "./glob";

/**
 * Reading keys and judging them — the one definition the census, the key lookup
 * and the release share. A key is read with its format's command (GET, or HGETALL
 * for hashes) and PTTL in one round trip; a key of another type answers WRONGTYPE
 * and is simply not a record.
 *
 * Age = the TTL the service sets (the store's ttlSeconds) − the remaining TTL. A
 * `processing` key is wedged when it is at least wedgedAfter old (or never expires)
 * and still refuses retries: until it expires, or — for libraries that write an
 * in-progress lease (Powertools' in_progress_expiration) — until the lease ends, after
 * which the library takes the key over by itself.
 */

export interface KeyReading {
  key: string;
  raw: RawValue;
  /** Remaining time to live in ms; null when the key never expires. */
  remainingMs: number | null;
  /** When it was read (ms since the epoch). */
  readAt: number;
  /** The value as a record of the store's format; null: not a record (never counted or acted on). */
  record: KeyRecord | null;
}

export interface KeyAssessment {
  /** ms since the service set the key; null when it never expires (age unknown). */
  ageMs: number | null;
  /** How much longer retries are refused (processing only); null = until someone deletes it. */
  refusingMs: number | null;
  /** An in-progress lease that has ended: the library takes the key over on the next request. */
  leaseExpired: boolean;
  wedged: boolean;
}

export function queueRead(pipeline: ChainableCommander, store: RedisStoreConfig, key: string): void {
  if (store.format.encoding === "hash") pipeline.hgetall(key);
  else pipeline.get(key);
  pipeline.pttl(key);
}

type Reply = [Error | null, unknown];

/**
 * The reading of one key from its two pipeline replies; null when the key is gone.
 * A failed PTTL (it never fails on a key that is there) or a failed read other than
 * WRONGTYPE means the connection failed: thrown, never taken for a missing key.
 */
export function readingOf(store: RedisStoreConfig, key: string, value: Reply, ttl: Reply, readAt: number): KeyReading | null {
  if (ttl[0]) throw ttl[0];
  if (value[0] && !/^WRONGTYPE/.test(value[0].message)) throw value[0];
  const pttl = Number(ttl[1]);
  if (pttl === -2) return null;
  let raw: RawValue = null;
  if (!value[0]) {
    const v = value[1];
    if (typeof v === "string") raw = v;
    else if (v && typeof v === "object" && Object.keys(v).length) raw = v as Record<string, string>;
  }
  if (raw === null && value[0] === null) return null; // vanished between the two commands
  return { key, raw, remainingMs: pttl === -1 ? null : pttl, readAt, record: raw === null ? null : decodeValue(store.format, key, raw) };
}

/** Reads one key now; null when it does not exist. */
export async function readKey(redis: Redis, store: RedisStoreConfig, key: string): Promise<KeyReading | null> {
  const p = redis.pipeline();
  queueRead(p, store, key);
  const replies = ((await p.exec()) ?? []) as Reply[];
  return readingOf(store, key, replies[0], replies[1], Date.now());
}

export function assess(store: RedisStoreConfig, r: KeyReading, now = r.readAt): KeyAssessment {
  const ttlMs = store.ttlSeconds * 1000;
  const elapsed = Math.max(0, now - r.readAt);
  const remaining = r.remainingMs === null ? null : Math.max(0, r.remainingMs - elapsed);
  const ageMs = remaining === null ? null : Math.max(0, ttlMs - remaining);
  if (!r.record || r.record.state !== "processing") return { ageMs, refusingMs: null, leaseExpired: false, wedged: false };
  const leaseLeft = r.record.inProgressExpiresAt ? r.record.inProgressExpiresAt.getTime() - now : null;
  if (leaseLeft !== null && leaseLeft <= 0) return { ageMs, refusingMs: 0, leaseExpired: true, wedged: false };
  const refusingMs = remaining === null ? leaseLeft : leaseLeft === null ? remaining : Math.min(remaining, leaseLeft);
  const wedged = ageMs === null || ageMs >= store.wedgedAfterSeconds * 1000;
  return { ageMs, refusingMs, leaseExpired: false, wedged };
}

const patterns = new WeakMap<RedisStoreConfig, RegExp>();

/** Whether the key is under the store's pattern (keys outside it are never read as its records). */
export function inStore(store: RedisStoreConfig, key: string): boolean {
  let re = patterns.get(store);
  if (!re) patterns.set(store, (re = globToRegExp(store.pattern)));
  return re.test(key);
}

/** The largest remaining TTL (ms) a key can have and still be wedgedAfter old (the release's age check). */
export function maxRemainingWhenWedged(store: RedisStoreConfig): number {
  return Math.max(0, (store.ttlSeconds - store.wedgedAfterSeconds) * 1000);
}
