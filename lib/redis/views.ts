import { z } from "zod";
import { onStore } from "./client";
import { censusOf, censusSoon, censusState, type RedisCensus } from "./census";
import { describeStore, redisConfig, type RedisStoreConfig } from "./config";
import { optional } from "../kernel/input";

/**
 * What the Redis screens and API read: the stores with their latest census (counts
 * only: stats.read), and the wedged and expiring keys of one store (key names:
 * records.read). A census is taken when there is none yet, or with refresh=true.
 */

export const censusQuerySchema = z
  .object({
    refresh: optional(z.enum(["true", "false"], { error: 'must be "true" or "false"' }).transform((v) => v === "true")),
  })
  .strict();

/** The census without key names (for stats.read). */
function counts(c: RedisCensus) {
  const { wedged, expiringSoon: _keys, ...rest } = c;
  return { ...rest, wedged: { count: wedged.count } };
}

export interface StoreSummary {
  store: ReturnType<typeof describeStore>;
  census: ReturnType<typeof counts> | null;
  /** A census is running now (the first one, or a refresh). */
  running: boolean;
  /** The last census failed (Redis unreachable …), since when. */
  error: { message: string; since: string; at: string } | null;
}

/** Every store with its latest census; waits up to `waitMs` for a first census. */
export async function storesSummary(waitMs = 3000): Promise<{ stores: StoreSummary[] }> {
  const stores = redisConfig().stores;
  await Promise.all(stores.map((s) => censusSoon(s, waitMs)));
  return {
    stores: stores.map((s) => {
      const st = censusState(s);
      return { store: describeStore(s), census: st.latest ? counts(st.latest) : null, running: st.running, error: st.error ?? null };
    }),
  };
}

export async function storeCensus(store: RedisStoreConfig, refresh = false) {
  const census = await onStore(store, () => censusOf(store, { fresh: refresh }));
  return { store: describeStore(store), census: counts(census) };
}

export async function storeWedged(store: RedisStoreConfig, refresh = false) {
  const c = await onStore(store, () => censusOf(store, { fresh: refresh }));
  return {
    store: describeStore(store),
    takenAt: c.takenAt,
    wedged: c.wedged,
    leaseExpired: c.leaseExpired,
    expiringSoon: c.expiringSoon,
  };
}
