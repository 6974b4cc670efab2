import { Redis } from "ioredis";
import type { RedisStoreConfig } from "./config";
import { ProblemError } from "../kernel/problem";

/**
 * Connections to the services' Redis servers, one per store and purpose, kept for the
 * process: "census" carries the background census's SCAN rounds and pipelines, so a
 * key lookup or a release on "commands" never queues behind them. A command fails
 * fast while the server is unreachable (no endless offline queue); the connection
 * keeps reconnecting in the background.
 */
export type RedisPurpose = "commands" | "census";

const clients = new Map<string, Redis>();

export function redisFor(store: RedisStoreConfig, purpose: RedisPurpose = "commands"): Redis {
  const id = `${store.name}\u0000${store.url}\u0000${purpose}`;
  let client = clients.get(id);
  if (!client) {
    client = new Redis(store.url, {
      connectionName: `idempotency-console:${purpose}`,
      maxRetriesPerRequest: 1,
      connectTimeout: 3000,
      retryStrategy: (attempt) => Math.min(attempt * 250, 5000),
    });
    // Errors surface on the commands that fail; the event itself would crash the process.
    client.on("error", () => {});
    clients.set(id, client);
  }
  return client;
}

/** Closes every connection (tests, scripts). */
export async function closeRedisClients(): Promise<void> {
  const all = [...clients.values()];
  clients.clear();
  await Promise.all(all.map((c) => c.quit().catch(() => c.disconnect())));
}

export class RedisUnavailableError extends ProblemError {
  constructor(store: string, cause: unknown) {
    super(
      503,
      "redis-unavailable",
      "Redis store unreachable",
      `The Redis store "${store}" did not answer (${cause instanceof Error ? cause.message : String(cause)}). Nothing was changed; try again when it is reachable.`,
    );
  }
}

/** ioredis's ways of saying the server is not there (as opposed to a command's own error). */
export function isConnectionError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  return (
    err.name === "MaxRetriesPerRequestError" ||
    /ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENOTFOUND|EHOSTUNREACH|Connection is closed|Stream isn't writeable/i.test(err.message)
  );
}

/** Runs Redis work; a connection failure becomes a 503 problem naming the store. */
export async function onStore<T>(store: RedisStoreConfig, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (isConnectionError(err)) throw new RedisUnavailableError(store.name, err);
    throw err;
  }
}
