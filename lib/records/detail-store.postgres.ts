import type { SqlExecutor } from "../db/sql";
import type { TimelineEvent } from "./detail";
import type { DetailStore, StoredRecordRow } from "./detail-store";
import { recordColumns } from "./row";

/**
 * The record page on PostgreSQL. Every list comes from an index on the record id (events:
 * (record_id, occurred_at); audit_log: (target_table, target_id); compensations: (record_id)).
 */
export function postgresDetailStore(ex: SqlExecutor): DetailStore {
  return {
    async record(id) {
      const [row] = await ex.query<StoredRecordRow>(
        `SELECT ${recordColumns("r")}, r.response_headers AS "responseHeaders", r.response_body::text AS "responseBody"
       FROM idempotency_records r WHERE r.id = $1`,
        [id],
      );
      return row;
    },

    timeline(recordId, limit) {
      return ex.query<TimelineEvent>(
        `SELECT * FROM (
         SELECT e.id, e.kind, e.occurred_at AS "occurredAt", e.payload_hash AS "payloadHash",
                e.response_code AS "responseCode", e.detail
           FROM idempotency_events e WHERE e.record_id = $1
          ORDER BY e.occurred_at DESC, e.id DESC LIMIT $2
       ) t ORDER BY "occurredAt", id`,
        [recordId, limit],
      );
    },

    async eventCount(recordId) {
      const [row] = await ex.query<{ n: bigint }>(`SELECT count(*)::bigint AS n FROM idempotency_events WHERE record_id = $1`, [recordId]);
      return row.n;
    },

    reconciliationItems(recordId) {
      return ex.query(
        `SELECT id, provider, provider_request_id AS "providerRequestId", state, attempts, last_checked_at AS "lastCheckedAt",
              next_check_at AS "nextCheckAt", last_error AS "lastError", resolution, resolved_by AS "resolvedBy",
              resolved_at AS "resolvedAt", created_at AS "createdAt", updated_at AS "updatedAt"
         FROM reconciliation_items WHERE record_id = $1 ORDER BY created_at, id`,
        [recordId],
      );
    },

    outboxMessages(recordId) {
      return ex.query(
        `SELECT id, topic, payload, status, attempts, next_attempt_at AS "nextAttemptAt", last_error AS "lastError",
              created_at AS "createdAt", sent_at AS "sentAt"
         FROM outbox_messages WHERE record_id = $1 ORDER BY created_at, id`,
        [recordId],
      );
    },

    auditTrail(target, limit) {
      return ex.query(
        `SELECT id, occurred_at AS "occurredAt", actor_type AS "actorType", actor_id AS "actorId", actor_label AS "actorLabel",
              action, outcome, reason, before, after, detail, request_id AS "requestId"
         FROM audit_log
        WHERE (target_table = $1 AND target_id = $2)
           -- A compensation's steps target the compensation; they belong to this record's trail too.
           OR (target_table = 'compensations' AND target_id IN (SELECT id::text FROM compensations WHERE record_id = $4))
        ORDER BY id DESC LIMIT $3`,
        [target.table, target.id.toString(), limit, target.id],
      );
    },
  };
}
