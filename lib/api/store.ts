import { byDialect } from "../db/dialect";
import type { SqlExecutor } from "../db/sql";
import type { HeaderPairs } from "../idempotency/store";
import { mysqlConsoleRequestStore } from "./store.mysql";
import { postgresConsoleRequestStore } from "./store.postgres";

/** Which console request a key names: keys are scoped to the user and the action. */
export interface ConsoleRequestKey {
  userId: bigint;
  action: string;
  key: string;
}

export interface ConsoleRequestRow {
  id: bigint;
  payloadHash: string;
  status: string;
  responseCode: number | null;
  responseHeaders: unknown;
  responseBody: string | null;
  /** This request reserved (or took over) the key. */
  owner: boolean;
}

/** The statements of the console's own request keys, console_requests (ADR 0011). */
export interface ConsoleRequestStore {
  /**
   * Reserves the key for `ttlSeconds` (status processing), or takes it over when it expired or was
   * left processing with the same payload for more than `leaseSeconds`; otherwise the row as it is
   * (`owner` false). Null when a concurrent first request's row is not visible yet.
   */
  reserve(k: ConsoleRequestKey, payloadHash: string, ttlSeconds: number, leaseSeconds: number): Promise<ConsoleRequestRow | null>;
  /** The row under the key (`owner` false), read in a new snapshot; null when there is none. */
  find(k: ConsoleRequestKey): Promise<ConsoleRequestRow | null>;
  /** Stores the answer of the request that owns row `id`. */
  finish(id: bigint, answer: { status: "completed" | "failed"; code: number; headers: HeaderPairs; body: string }): Promise<void>;
}

export function consoleRequestStore(ex: SqlExecutor): ConsoleRequestStore {
  return byDialect(ex, { postgres: postgresConsoleRequestStore, mysql: mysqlConsoleRequestStore })(ex);
}
