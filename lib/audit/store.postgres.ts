import { transactionLock } from "../db/locks";
import { paramList } from "../db/params";
import type { SqlExecutor } from "../db/sql";
import type { AuditEntry } from "../generated/prisma/client";
import { AUDIT_ENTRY_COLUMNS, likePrefix } from "./columns";
import type { AuditStore } from "./store";

export function postgresAuditStore(ex: SqlExecutor): AuditStore {
  return {
    async lockChain() {
      await transactionLock(ex, "auditChain");
    },

    async chainHead() {
      const rows = await ex.query<{ id: bigint | null; hash: string | null; occurred_at: Date | null; key_id: string | null; n: bigint }>(
        `SELECT a.id, a.hash, a.occurred_at, a.key_id, c.n
      FROM (SELECT count(*)::bigint AS n FROM audit_log) c
      LEFT JOIN LATERAL (SELECT id, hash, occurred_at, key_id FROM audit_log ORDER BY id DESC LIMIT 1) a ON true`,
      );
      const r = rows[0];
      if (!r || r.id === null || r.hash === null || r.occurred_at === null) return null;
      return { id: r.id, hash: r.hash, occurredAt: r.occurred_at, keyId: r.key_id, count: r.n };
    },

    async entryUpTo(id) {
      const p = paramList();
      const rows = await ex.query<{ hash: string | null; n: bigint }>(
        `SELECT (SELECT hash FROM audit_log WHERE id = ${p.add(id)}::bigint) AS hash,
           (SELECT count(*)::bigint FROM audit_log WHERE id <= ${p.add(id)}::bigint) AS n`,
        p.values,
      );
      return { hash: rows[0]?.hash ?? null, count: rows[0]?.n ?? 0n };
    },

    async entries(f, page) {
      const p = paramList();
      const where: string[] = [];
      if (f.actorId !== undefined) where.push(`actor_id = ${p.add(f.actorId)}`);
      if (f.actorLabelPrefix !== undefined) where.push(`actor_label ILIKE ${p.add(likePrefix(f.actorLabelPrefix))}`);
      if (f.action !== undefined) where.push(`action = ${p.add(f.action)}`);
      if (f.actionPrefix !== undefined) where.push(`action LIKE ${p.add(likePrefix(f.actionPrefix))}`);
      if (f.targetTable !== undefined) where.push(`target_table = ${p.add(f.targetTable)}`);
      if (f.targetId !== undefined) where.push(`target_id = ${p.add(f.targetId)}`);
      if (f.outcome !== undefined) where.push(`outcome = ${p.add(f.outcome)}`);
      if (f.from) where.push(`occurred_at >= ${p.time(f.from)}`);
      if (f.to) where.push(`occurred_at < ${p.time(f.to)}`);
      if (f.before !== undefined) where.push(`id < ${p.bigint(f.before)}`);
      return ex.query<AuditEntry>(
        `SELECT ${AUDIT_ENTRY_COLUMNS} FROM audit_log ${where.length ? `WHERE ${where.join(" AND ")}` : ""}
          ORDER BY id DESC LIMIT ${p.add(page.take)} OFFSET ${p.add(page.skip ?? 0)}`,
        p.values,
      );
    },
  };
}
