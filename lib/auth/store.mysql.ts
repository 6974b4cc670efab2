import { MYSQL } from "../db/dialect";
import { transactionLock } from "../db/locks";
import { paramList } from "../db/params";
import type { SqlExecutor } from "../db/sql";
import type { AuthStore } from "./store";

/** Sign-in throttling and user administration on MySQL/MariaDB: the same reads through the same indexes; roles are a JSON array. */
export function mysqlAuthStore(ex: SqlExecutor): AuthStore {
  return {
    async accountFailures(email, since, limit) {
      const p = paramList(MYSQL);
      const rows = await ex.query<{ attempted_at: Date }>(
        `SELECT attempted_at FROM sign_in_attempts
          WHERE email = ${p.add(email)} AND NOT succeeded
            AND attempted_at > GREATEST(${p.time(since)}, COALESCE(
                  (SELECT MAX(attempted_at) FROM sign_in_attempts WHERE email = ${p.add(email)} AND succeeded AND attempted_at > ${p.time(since)}),
                  ${p.time(since)}))
          ORDER BY attempted_at DESC
          LIMIT ${p.add(limit)}`,
        p.values,
      );
      return rows.map((r) => new Date(r.attempted_at));
    },

    async ipFailures(ip, since, limit) {
      const p = paramList(MYSQL);
      const rows = await ex.query<{ attempted_at: Date }>(
        `SELECT attempted_at FROM sign_in_attempts
          WHERE ip = ${p.add(ip)} AND NOT succeeded AND attempted_at > ${p.time(since)}
          ORDER BY attempted_at DESC
          LIMIT ${p.add(limit)}`,
        p.values,
      );
      return rows.map((r) => new Date(r.attempted_at));
    },

    async lockUserAdmin() {
      await transactionLock(ex, "userAdmin");
    },

    async otherActiveAdmins(userId) {
      const p = paramList(MYSQL);
      const [{ n }] = await ex.query<{ n: bigint | number }>(
        `SELECT COUNT(*) AS n FROM console_users WHERE JSON_CONTAINS(roles, '"admin"') AND disabled_at IS NULL AND id <> ${p.add(userId)}`,
        p.values,
      );
      return Number(n);
    },
  };
}
