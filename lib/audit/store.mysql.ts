import { MYSQL } from "../db/dialect";
import { transactionLock } from "../db/locks";
import { paramList } from "../db/params";
import type { SqlExecutor } from "../db/sql";
import type { AuditEntry } from "../generated/prisma/client";
import { AUDIT_ENTRY_COLUMNS, likePrefix } from "./columns";
import type { AuditStore } from "./store";

/**
 * The audit trail's statements on MySQL/MariaDB. No LATERAL (MariaDB): the head is the newest
 * row joined to the count, in one statement (one read view in READ COMMITTED), as on PostgreSQL.
 */
export function mysqlAuditStore(ex: SqlExecutor): AuditStore {
  return {
    async lockChain() {
      await transactionLock(ex, "auditChain");
    },

    async chainHead() {
      const rows = await ex.query<{ id: bigint | null; hash: string | null; occurred_at: Date | null; key_id: string | null; n: bigint | number }>(
        `SELECT a.id, a.hash, a.occurred_at, a.key_id, c.n
           FROM (SELECT COUNT(*) AS n FROM audit_log) c
           LEFT JOIN (SELECT id, hash, occurred_at, key_id FROM audit_log ORDER BY id DESC LIMIT 1) a ON TRUE`,
      );
      const r = rows[0];
      if (!r || r.id === null || r.hash === null || r.occurred_at === null) return null;
      return { id: BigInt(r.id), hash: r.hash, occurredAt: r.occurred_at, keyId: r.key_id, count: BigInt(r.n) };
    },

    async entryUpTo(id) {
      const p = paramList(MYSQL);
      const rows = await ex.query<{ hash: string | null; n: bigint | number }>(
        `SELECT (SELECT hash FROM audit_log WHERE id = ${p.add(id)}) AS hash,
                (SELECT COUNT(*) FROM audit_log WHERE id <= ${p.add(id)}) AS n`,
        p.values,
      );
      return { hash: rows[0]?.hash ?? null, count: BigInt(rows[0]?.n ?? 0) };
    },

    async entries(f, page) {
      const p = paramList(MYSQL);
      const where: string[] = [];
      if (f.actorId !== undefined) where.push(`actor_id = ${p.add(f.actorId)}`);
      // The columns are binary-collated (byte-exact keys): case-insensitive by folding both sides, as ILIKE does.
      if (f.actorLabelPrefix !== undefined) where.push(`LOWER(actor_label) LIKE LOWER(${p.add(likePrefix(f.actorLabelPrefix))})`);
      if (f.action !== undefined) where.push(`action = ${p.add(f.action)}`);
      if (f.actionPrefix !== undefined) where.push(`action LIKE ${p.add(likePrefix(f.actionPrefix))}`);
      if (f.targetTable !== undefined) where.push(`target_table = ${p.add(f.targetTable)}`);
      if (f.targetId !== undefined) where.push(`target_id = ${p.add(f.targetId)}`);
      if (f.outcome !== undefined) where.push(`outcome = ${p.add(f.outcome)}`);
      if (f.from) where.push(`occurred_at >= ${p.time(f.from)}`);
      if (f.to) where.push(`occurred_at < ${p.time(f.to)}`);
      if (f.before !== undefined) where.push(`id < ${p.add(f.before)}`);
      const rows = await ex.query<AuditEntry>(
        `SELECT ${AUDIT_ENTRY_COLUMNS} FROM audit_log ${where.length ? `WHERE ${where.join(" AND ")}` : ""}
          ORDER BY id DESC LIMIT ${p.add(page.take)} OFFSET ${p.add(page.skip ?? 0)}`,
        p.values,
      );
      return rows;
    },
  };
}
