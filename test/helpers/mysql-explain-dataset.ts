import { MYSQL } from "@/lib/db/dialect";
import { Params } from "@/lib/db/params";
import type { SqlExecutor } from "@/lib/db/sql";

/** 0–9, for numbering rows without generate_series (MySQL 8 caps recursive CTEs at 1000 rows). */
const DIGITS = `(SELECT 0 AS d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4
  UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)`;

/**
 * For EXPLAIN tests on MySQL / MariaDB: 40,000 records over the 60 days before `now` (a tenth
 * of them per status but completed; expiring a day after creation), 3 events each. Plans are
 * asked of a table of this size, after ANALYZE TABLE, because on a few hundred rows — or with
 * statistics InnoDB has not recalculated yet — the optimizer rightly reads whole indexes, and
 * the plan would depend on what other tests happened to write.
 */
export async function fillMysqlExplainDataset(sql: SqlExecutor, now: Date): Promise<void> {
  const p = new Params(MYSQL);
  const at = p.time(now);
  await sql.query(
    `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, created_at, updated_at, expires_at)
     SELECT CONCAT('tenant:t', n % 50), ELT(1 + n % 4, 'create_order', 'capture_payment', 'accept_webhook', 'refund_payment'),
            CONCAT('explain-', n), 'h', ELT(1 + n % 10, 'completed', 'completed', 'completed', 'completed', 'completed', 'completed',
            'completed', 'failed', 'pending', 'processing'),
            t, t, t + INTERVAL 1 DAY
       FROM (SELECT n, ${at} - INTERVAL (n * 129) SECOND AS t
               FROM (SELECT a.d + 10 * b.d + 100 * c.d + 1000 * d.d + 10000 * e.d AS n
                       FROM ${DIGITS} a, ${DIGITS} b, ${DIGITS} c, ${DIGITS} d, ${DIGITS} e) x
              WHERE n < 40000) y
      ORDER BY n`,
    p.values,
  );
  await sql.query(
    `INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind, payload_hash, occurred_at)
     SELECT r.id, r.scope, r.operation, r.idempotency_key, ELT(1 + k.d, 'reserved', 'completed', 'replayed'), r.payload_hash,
            r.created_at + INTERVAL k.d MINUTE
       FROM idempotency_records r CROSS JOIN (SELECT 0 AS d UNION ALL SELECT 1 UNION ALL SELECT 2) k
      ORDER BY r.id, k.d`,
  );
}
