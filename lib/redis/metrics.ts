import { Gauge, type Registry } from "prom-client";
import { censusOf, censusState, type RedisCensus } from "./census";
import { redisConfig } from "./config";

/**
 * The Redis key stores' series in GET /api/metrics (the one registry of
 * lib/stats/metrics.ts), from each store's latest census — a scrape never scans:
 *
 * - idempotency_redis_keys{store,state}            processing / completed records
 * - idempotency_redis_wedged_keys{store}           processing longer than wedgedAfter
 * - idempotency_redis_keys_by_status{store,status} completed records by stored HTTP status
 * - idempotency_redis_scan_seconds{store}          how long the census took
 * - idempotency_redis_census_timestamp_seconds{store} when it was taken (alert on staleness)
 *
 * A store without a census yet gets none of its series (and one is started).
 */
export interface RedisCensusEntry {
  store: string;
  census: RedisCensus | null;
}

let configErrorLogged = false;

/** The latest census of every configured store (starts a first census where there is none). */
export function latestRedisCensuses(): RedisCensusEntry[] {
  let stores;
  try {
    stores = redisConfig().stores;
  } catch (err) {
    // A malformed REDIS_* setting must not take the other metrics down; the Redis screens say why.
    if (!configErrorLogged) console.error("redis: no metrics:", err instanceof Error ? err.message : err);
    configErrorLogged = true;
    return [];
  }
  return stores.map((store) => {
    const { latest, running } = censusState(store);
    if (!latest && !running) censusOf(store).catch(() => {});
    return { store: store.name, census: latest };
  });
}

export function addRedisMetrics(registry: Registry, entries: RedisCensusEntry[]): void {
  if (entries.length === 0) return;
  const registers = [registry];
  const gauge = (name: string, help: string, labelNames: string[]) => new Gauge({ name, help, labelNames, registers });
  const keys = gauge("idempotency_redis_keys", "Idempotency keys in a Redis store by state (latest census).", ["store", "state"]);
  const wedged = gauge("idempotency_redis_wedged_keys", "Keys processing for longer than the store's wedged threshold (latest census).", ["store"]);
  const byStatus = gauge("idempotency_redis_keys_by_status", 'Completed keys by stored HTTP status (latest census; "none" when the format stores none).', [
    "store",
    "status",
  ]);
  const scan = gauge("idempotency_redis_scan_seconds", "How long the latest census of the store took (SCAN + pipelined reads).", ["store"]);
  const taken = gauge("idempotency_redis_census_timestamp_seconds", "When the latest census of the store finished (Unix time).", ["store"]);
  for (const { store, census } of entries) {
    if (!census) continue;
    keys.set({ store, state: "processing" }, census.records.processing);
    keys.set({ store, state: "completed" }, census.records.completed);
    wedged.set({ store }, census.wedged.count);
    for (const s of census.byStatus) byStatus.set({ store, status: s.status }, s.count);
    scan.set({ store }, census.durationMs / 1000);
    taken.set({ store }, Date.parse(census.takenAt) / 1000);
  }
}
