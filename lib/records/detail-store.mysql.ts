import type { SqlExecutor } from "../db/sql";
import type { TimelineEvent } from "./detail";
import type { DetailStore, StoredRecordRow } from "./detail-store";
import { recordColumns } from "./row";
import { jsonOfText, withBooleanHold } from "./rows.mysql";

/**
 * The record page on MySQL/MariaDB (ADR 0012). Every list comes from an index on the record id
 * (events: (record_id, occurred_at); audit_log: (target_table, target_id); compensations:
 * (record_id)), as on PostgreSQL.
 *
 * JSON columns are read as text and parsed here (rows.mysql.ts), so a reader renders what
 * the writer stored whatever the column's type: MySQL's binary JSON, MariaDB's JSON (LONGTEXT
 * with a CHECK), or an adopted table's plain LONGTEXT holding JSON text — or header lines,
 * which stay text and are read as lines. The body is text in every case (a JSON column's body
 * comes back as its JSON text, as `::text` does on PostgreSQL).
 */
export function mysqlDetailStore(ex: SqlExecutor): DetailStore {
  const parse = <T extends Record<string, unknown>>(rows: T[], columns: (keyof T)[]) =>
    rows.map((row) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, columns.includes(k) ? jsonOfText(v) : v])) as T);
  return {
    async record(id) {
      const [row] = await ex.query<StoredRecordRow>(
        `SELECT ${recordColumns("r")}, CAST(r.response_headers AS CHAR) AS "responseHeaders", CAST(r.response_body AS CHAR) AS "responseBody"
           FROM idempotency_records r WHERE r.id = ?`,
        [id],
      );
      return row && withBooleanHold({ ...row, responseHeaders: jsonOfText(row.responseHeaders) });
    },

    async timeline(recordId, limit) {
      const rows = await ex.query<TimelineEvent>(
        `SELECT * FROM (
           SELECT e.id, e.kind, e.occurred_at AS "occurredAt", e.payload_hash AS "payloadHash",
                  e.response_code AS "responseCode", CAST(e.detail AS CHAR) AS detail
             FROM idempotency_events e WHERE e.record_id = ?
            ORDER BY e.occurred_at DESC, e.id DESC LIMIT ?
         ) t ORDER BY "occurredAt", id`,
        [recordId, limit],
      );
      return rows.map((e) => ({ ...e, detail: jsonOfText(e.detail) }));
    },

    async eventCount(recordId) {
      const [row] = await ex.query<{ n: bigint }>(`SELECT count(*) AS n FROM idempotency_events WHERE record_id = ?`, [recordId]);
      return BigInt(row.n);
    },

    async reconciliationItems(recordId) {
      const rows = await ex.query(
        `SELECT id, provider, provider_request_id AS "providerRequestId", state, attempts, last_checked_at AS "lastCheckedAt",
                next_check_at AS "nextCheckAt", last_error AS "lastError", CAST(resolution AS CHAR) AS resolution,
                resolved_by AS "resolvedBy", resolved_at AS "resolvedAt", created_at AS "createdAt", updated_at AS "updatedAt"
           FROM reconciliation_items WHERE record_id = ? ORDER BY created_at, id`,
        [recordId],
      );
      return parse(rows, ["resolution"]);
    },

    async outboxMessages(recordId) {
      const rows = await ex.query(
        `SELECT id, topic, CAST(payload AS CHAR) AS payload, status, attempts, next_attempt_at AS "nextAttemptAt", last_error AS "lastError",
                created_at AS "createdAt", sent_at AS "sentAt"
           FROM outbox_messages WHERE record_id = ? ORDER BY created_at, id`,
        [recordId],
      );
      return parse(rows, ["payload"]);
    },

    async auditTrail(target, limit) {
      const rows = await ex.query(
        `SELECT id, occurred_at AS "occurredAt", actor_type AS "actorType", actor_id AS "actorId", actor_label AS "actorLabel",
                action, outcome, reason, CAST("before" AS CHAR) AS "before", CAST("after" AS CHAR) AS "after",
                CAST(detail AS CHAR) AS detail, request_id AS "requestId"
           FROM audit_log
          WHERE (target_table = ? AND target_id = ?)
             -- A compensation's steps target the compensation; they belong to this record's trail too.
             OR (target_table = 'compensations' AND target_id IN (SELECT CAST(c.id AS CHAR) COLLATE utf8mb4_bin FROM compensations c WHERE c.record_id = ?))
          ORDER BY id DESC LIMIT ?`,
        [target.table, target.id.toString(), target.id, limit],
      );
      return parse(rows, ["before", "after", "detail"]);
    },
  };
}
