import { transactionLock } from "../db/locks";
import { paramList } from "../db/params";
import type { SqlExecutor } from "../db/sql";
import type { AuthStore } from "./store";

export function postgresAuthStore(ex: SqlExecutor): AuthStore {
  return {
    async accountFailures(email, since, limit) {
      const p = paramList();
      const rows = await ex.query<{ attempted_at: Date }>(
        `SELECT attempted_at FROM sign_in_attempts
     WHERE email = ${p.add(email)} AND NOT succeeded
       AND attempted_at > GREATEST(${p.add(since)}::timestamptz, COALESCE(
             (SELECT max(attempted_at) FROM sign_in_attempts WHERE email = ${p.add(email)} AND succeeded AND attempted_at > ${p.add(since)}::timestamptz),
             ${p.add(since)}::timestamptz))
     ORDER BY attempted_at DESC
     LIMIT ${p.add(limit)}`,
        p.values,
      );
      return rows.map((r) => new Date(r.attempted_at));
    },

    async ipFailures(ip, since, limit) {
      const p = paramList();
      const rows = await ex.query<{ attempted_at: Date }>(
        `SELECT attempted_at FROM sign_in_attempts
     WHERE ip = ${p.add(ip)} AND NOT succeeded AND attempted_at > ${p.add(since)}::timestamptz
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
      const p = paramList();
      const [{ n }] = await ex.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM console_users WHERE 'admin' = ANY (roles) AND disabled_at IS NULL AND id <> ${p.add(userId)}`,
        p.values,
      );
      return n;
    },
  };
}
