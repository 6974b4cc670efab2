import { byDialect } from "../db/dialect";
import type { SqlExecutor } from "../db/sql";
import { mysqlAuthStore } from "./store.mysql";
import { postgresAuthStore } from "./store.postgres";

/** The statements of sign-in and user administration that Prisma's model API does not say on every database (ADR 0011). */
export interface AuthStore {
  /**
   * Times of this account's newest failed sign-ins after `since` and after its last success
   * since then, newest first, at most `limit` (through the (email, attempted_at) index).
   */
  accountFailures(email: string, since: Date, limit: number): Promise<Date[]>;
  /** Times of this IP's newest failed sign-ins after `since`, across accounts, newest first, at most `limit`. */
  ipFailures(ip: string, since: Date, limit: number): Promise<Date[]>;
  /**
   * Waits for the user-administration lock (LOCKS.userAdmin), held until the transaction ends:
   * role and disable changes take it, so the last-admin check cannot race.
   */
  lockUserAdmin(): Promise<void>;
  /**
   * How many users other than `userId` hold the admin role and are not disabled. Roles are a
   * text[] on PostgreSQL and a JSON array on MySQL (ADR 0012), where Prisma's list filter
   * `{ has: … }` does not exist.
   */
  otherActiveAdmins(userId: bigint): Promise<number>;
}

export function authStore(ex: SqlExecutor): AuthStore {
  return byDialect(ex, { postgres: postgresAuthStore, mysql: mysqlAuthStore })(ex);
}
