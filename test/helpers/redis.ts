import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { parseRedisConfig, type RedisStoreConfig } from "@/lib/redis/config";

/**
 * Redis for the tests: REDIS_TEST_URL (default redis://127.0.0.1:6379). Each test file
 * uses its own database number (8–15) and flushes only that one; a test process holds it while
 * the file runs (`testRedis`), since .ci/run runs database modes side by side, each with the same
 * files. Without a reachable Redis the Redis tests are skipped (`npm test` needs no running
 * service); in CI (CI set) a missing Redis fails instead — .ci/run starts one.
 */
export const REDIS_TEST_URL = process.env.REDIS_TEST_URL || "redis://127.0.0.1:6379";

export function redisUrl(db: number): string {
  if (db < 8 || db > 15) throw new Error("the tests use Redis databases 8–15 only");
  const u = new URL(REDIS_TEST_URL);
  u.pathname = `/${db}`;
  return u.toString();
}

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
};

/**
 * Waits until no other test process on this machine holds Redis database `db`, then holds it until
 * this file's tests end (or this process does). The hold is a directory made atomically with this
 * process's id in it; one whose process is gone (killed) is taken over.
 */
async function holdRedisDatabase(db: number): Promise<void> {
  const u = new URL(REDIS_TEST_URL);
  const dir = path.join(os.tmpdir(), `ic-test-redis-${u.hostname}-${u.port || 6379}-${db}.hold`);
  const pidFile = path.join(dir, "pid");
  for (;;) {
    try {
      mkdirSync(dir);
      writeFileSync(pidFile, String(process.pid));
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
      let holder = NaN;
      try {
        holder = Number(readFileSync(pidFile, "utf8"));
      } catch {
        // No id file yet.
      }
      if (!(holder > 0)) {
        // Made but its id not written yet (wait), or left so by a process killed in between (take over).
        const made = statSync(dir, { throwIfNoEntry: false });
        holder = made && Date.now() - made.mtimeMs < 10_000 ? -1 : 0;
      }
      if (holder === -1 || (holder > 0 && isAlive(holder))) await sleep(250);
      else rmSync(dir, { recursive: true, force: true });
    }
  }
  const release = () => {
    try {
      if (readFileSync(pidFile, "utf8") === String(process.pid)) rmSync(dir, { recursive: true, force: true });
    } catch {
      // Already gone.
    }
  };
  process.once("exit", release);
  afterAll(release);
}

/** A connected client on database `db` (held by this process, see above), or null when Redis is not reachable. */
export async function testRedis(db: number): Promise<Redis | null> {
  const url = redisUrl(db);
  await holdRedisDatabase(db);
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 1500, retryStrategy: () => null });
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
