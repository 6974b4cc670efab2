import { z } from "zod";
import { can, type Principal } from "../auth/permissions";
import { maskResponse, type MaskedField, type HeaderPairs } from "../records/mask";
import type { RedisStoreConfig } from "./config";
import { onStore, redisFor } from "./client";
import { prefixGlob } from "./glob";
import { assess, inStore, queueRead, readingOf, readKey, type KeyReading } from "./keys";
import { NotFoundError } from "../kernel/errors";
import { intParam, optional } from "../kernel/input";

/**
 * Key lookup in one store: an exact key, or every key starting with a prefix (SCAN
 * MATCH with a bounded COUNT, stopping at `limit` keys or after PREFIX_ROUNDS round
 * trips — the answer says whether it saw the whole keyspace). Only keys under the
 * store's pattern that read as records of its format are shown; the stored response
 * is withheld without records.read_body and masked with it (lib/records/mask.ts), as
 * for records.
 */

export const MAX_KEY_LENGTH = 1024;
const PREFIX_ROUNDS = 200;
const PREFIX_COUNT = 1000;

export const redisKeySchema = z
  .string({ error: "must be a key (text)" })
  .min(1, "must not be empty")
  .max(MAX_KEY_LENGTH, `must be at most ${MAX_KEY_LENGTH} characters`);

export const keyLookupQuerySchema = z
  .object({
    key: optional(redisKeySchema),
    prefix: optional(redisKeySchema),
    limit: optional(intParam(1, 200)),
  })
  .strict()
  .superRefine((q, ctx) => {
    if ((q.key === undefined) === (q.prefix === undefined)) ctx.addIssue({ code: "custom", path: ["key"], message: "give either key or prefix (exactly one)" });
  });

export type KeyLookupQuery = z.output<typeof keyLookupQuerySchema>;

export interface KeyView {
  key: string;
  state: "processing" | "completed" | "unrecognised";
  /** The state as stored (the sentinel or the library's value); null when unrecognised. */
  stateValue: string | null;
  httpStatus: number | null;
  ttlSeconds: number | null;
  expiresAt: string | null;
  ageSeconds: number | null;
  wedged: boolean;
  leaseExpired: boolean;
  refusingForSeconds: number | null;
  fingerprint: string | null;
  cached5xx: boolean;
  /** The stored response: none without records.read_body, masked with it; null when there is none. */
  response: { access: "none" | "masked"; code: number | null; headers: HeaderPairs | null; body: string | null; masked: MaskedField[] } | null;
}

export function keyView(store: RedisStoreConfig, r: KeyReading, principal: Principal | null): KeyView {
  const rec = r.record;
  const a = assess(store, r);
  const ttlSeconds = r.remainingMs === null ? null : Math.ceil(r.remainingMs / 1000);
  let response: KeyView["response"] = null;
  if (rec && (rec.body !== null || rec.headers !== null || rec.httpStatus !== null) && rec.state === "completed") {
    response = can(principal, "records.read_body")
      ? { access: "masked", ...maskResponse({ code: rec.httpStatus, headers: rec.headers, body: rec.body }) }
      : { access: "none", code: rec.httpStatus, headers: null, body: null, masked: [] };
  }
  return {
    key: r.key,
    state: rec ? rec.state : "unrecognised",
    stateValue: rec?.stateValue ?? null,
    httpStatus: rec?.httpStatus ?? null,
    ttlSeconds,
    expiresAt: r.remainingMs === null ? null : new Date(r.readAt + r.remainingMs).toISOString(),
    ageSeconds: a.ageMs === null ? null : Math.floor(a.ageMs / 1000),
    wedged: a.wedged,
    leaseExpired: a.leaseExpired,
    refusingForSeconds: a.refusingMs === null ? null : Math.ceil(a.refusingMs / 1000),
    fingerprint: rec?.fingerprint ?? null,
    cached5xx: rec?.state === "completed" && rec.httpStatus !== null && rec.httpStatus >= 500,
    response,
  };
}

export interface KeyLookupResult {
  store: string;
  mode: "exact" | "prefix";
  keys: KeyView[];
  /** Keys the prefix matched under the pattern that are not records of the format (not shown). */
  unrecognised: number;
  /** Prefix mode: false when it stopped before seeing the whole keyspace (limit or round budget). */
  complete: boolean;
}

export async function lookupKeys(store: RedisStoreConfig, q: KeyLookupQuery, principal: Principal | null): Promise<KeyLookupResult> {
  const redis = redisFor(store);
  if (q.key !== undefined) {
    if (!inStore(store, q.key))
      throw new NotFoundError(`"${q.key}" is not under the store's key pattern ${store.pattern}: it is not one of its idempotency keys.`);
    const r = await onStore(store, () => readKey(redis, store, q.key!));
    if (!r) throw new NotFoundError(`The key "${q.key}" does not exist in the store "${store.name}" (it may have expired).`);
    return { store: store.name, mode: "exact", keys: [keyView(store, r, principal)], unrecognised: 0, complete: true };
  }
  const limit = q.limit ?? 50;
  const keys: KeyView[] = [];
  let unrecognised = 0;
  let cursor = "0";
  let rounds = 0;
  await onStore(store, async () => {
    do {
      const [next, batch] = await redis.scan(cursor, "MATCH", prefixGlob(q.prefix!), "COUNT", PREFIX_COUNT);
      cursor = next;
      rounds++;
      const mine = [...new Set(batch)].filter((k) => inStore(store, k) && !keys.some((v) => v.key === k));
      if (mine.length === 0) continue;
      const p = redis.pipeline();
      for (const k of mine) queueRead(p, store, k);
      const replies = ((await p.exec()) ?? []) as [Error | null, unknown][];
      const readAt = Date.now();
      mine.forEach((k, i) => {
        const r = readingOf(store, k, replies[2 * i], replies[2 * i + 1], readAt);
        if (!r) return;
        if (!r.record) unrecognised++;
        else if (keys.length < limit) keys.push(keyView(store, r, principal));
      });
    } while (cursor !== "0" && keys.length < limit && rounds < PREFIX_ROUNDS);
  });
  keys.sort((a, b) => (a.key < b.key ? -1 : 1));
  return { store: store.name, mode: "prefix", keys, unrecognised, complete: cursor === "0" };
}
