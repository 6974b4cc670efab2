import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { parseRedisConfig, type RedisStoreConfig } from "@/lib/redis/config";

/**
 * Redis for the tests: REDIS_TEST_URL (default redis://127.0.0.1:6379). Each test file
 * uses its own database number (8–15) and flushes only that one. Without a reachable
 * Redis the Redis tests are skipped (`npm test` needs no running service); in CI
 * (CI set) a missing Redis fails instead — .ci/run starts one.
 */
export const REDIS_TEST_URL = process.env.REDIS_TEST_URL || "redis://127.0.0.1:6379";

export function redisUrl(db: number): string {
  if (db < 8 || db > 15) throw new Error("the tests use Redis databases 8–15 only");
  const u = new URL(REDIS_TEST_URL);
  u.pathname = `/${db}`;
  return u.toString();
}

/** A connected client on database `db`, or null when Redis is not reachable. */
export async function testRedis(db: number): Promise<Redis | null> {
  const client = new Redis(redisUrl(db), { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 1500, retryStrategy: () => null });
  client.on("error", () => {});
  try {
    await client.connect();
    await client.ping();
    return client;
  } catch {
    client.disconnect();
    return null;
  }
}

/** Fails in CI when Redis is missing, so a skip cannot hide the Redis tests there. */
export function requireRedisInCi(available: boolean): void {
  describe.runIf(process.env.CI)("CI prerequisites (Redis)", () => {
    it(`Redis answers at ${REDIS_TEST_URL}, so the Redis tests really run`, () => {
      expect(available, `no Redis at ${REDIS_TEST_URL}`).toBe(true);
    });
  });
}

/** A store on test database `db`, configured the way REDIS_STORES would (query parameters). */
export function testStore(name: string, db: number, params: Record<string, string> = {}, formats?: Record<string, unknown>): RedisStoreConfig {
  const u = new URL(redisUrl(db));
  for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
  const config = parseRedisConfig({ REDIS_STORES: `${name}=${u.toString()}`, ...(formats ? { REDIS_FORMATS: JSON.stringify(formats) } : {}) });
  return config.stores[0];
}
