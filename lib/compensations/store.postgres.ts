import { cursorTimeSql } from "../db/paging";
import { paramList } from "../db/params";
import type { SqlExecutor } from "../db/sql";
import type { CompensationRow } from "./model";
import type { CompensatedRecord, CompensationStore } from "./store";
import { OUTCOME_UNKNOWN_PREFIX, type CompensationState } from "./vocabulary";

/**
 * Whether a compensation counts against the record's amount: everything except
 * rejected ones and failed ones the provider definitely refused (or that never
 * reached it). SQL over the table aliased `c`.
 */
const CLAIMS_SQL = (c = "c") =>
  `(${c}.state IN ('requested', 'approved', 'executing', 'executed') OR (${c}.state = 'failed' AND ${c}.last_error LIKE '${OUTCOME_UNKNOWN_PREFIX}%'))`;

/** SELECT list of CompensationRow for the table aliased `c`; `lease` is the placeholder of the lease in seconds. */
function compensationColumns(lease: string, c = "c"): string {
  return `${c}.id, ${c}.record_id AS "recordId", ${c}.scope, ${c}.operation, ${c}.idempotency_key AS "idempotencyKey",
    ${c}.related_record_id AS "relatedRecordId", ${c}.kind, ${c}.amount_minor AS "amountMinor", ${c}.currency, ${c}.provider,
    ${c}.provider_reference AS "providerReference", ${c}.provider_idempotency_key AS "providerIdempotencyKey", ${c}.state, ${c}.reason,
    ${c}.requested_by AS "requestedBy", ${c}.requested_by_label AS "requestedByLabel", ${c}.requested_at AS "requestedAt",
    ${c}.decided_by AS "decidedBy", ${c}.decided_by_label AS "decidedByLabel", ${c}.decided_at AS "decidedAt",
    ${c}.decision_reason AS "decisionReason", ${c}.attempts, ${c}.last_attempt_at AS "lastAttemptAt", ${c}.last_error AS "lastError",
    ${c}.provider_compensation_id AS "providerCompensationId", ${c}.executed_at AS "executedAt", ${c}.version,
    ${c}.created_at AS "createdAt", ${c}.updated_at AS "updatedAt", ${CLAIMS_SQL(c)} AS "claimsAmount",
    ((${c}.state = 'executing' AND ${c}.last_attempt_at < now() - make_interval(secs => ${lease}))
      OR (${c}.state = 'approved' AND ${c}.decided_at < now() - make_interval(secs => ${lease}))) AS "stale"`;
}

const START_SET = `state = 'executing', attempts = c.attempts + 1, last_attempt_at = now(), version = c.version + 1, updated_at = now()`;

/** The compensations' statements in PostgreSQL. */
export function postgresCompensationStore(ex: SqlExecutor): CompensationStore {
  const one = async (text: string, values: unknown[]) => (await ex.query<CompensationRow>(text, values))[0] ?? null;
  return {
    page(query, leaseSeconds) {
      const p = paramList();
      const lease = p.add(leaseSeconds);
      const where: string[] = [];
      if (query.state) where.push(`c.state = ${p.add(query.state)}`);
      if (query.recordId !== undefined) where.push(`c.record_id = ${p.add(query.recordId)}::bigint`);
      if (query.cursor) where.push(`(c.requested_at, c.id) < (${p.add(query.cursor.t)}::timestamptz, ${p.add(query.cursor.id)}::bigint)`);
      const take = p.add(query.limit + 1);
      // (state, requested_at) serves the state filter in page order; record_id the record's few.
      return ex.query<CompensationRow & { cursorTime: string }>(
        `SELECT ${compensationColumns(lease)}, ${cursorTimeSql("c.requested_at")} AS "cursorTime"
       FROM compensations c ${where.length ? `WHERE ${where.join(" AND ")}` : ""}
      ORDER BY c.requested_at DESC, c.id DESC LIMIT ${take}`,
        p.values,
      );
    },
    get(id, leaseSeconds) {
      return one(`SELECT ${compensationColumns("$2")} FROM compensations c WHERE c.id = $1`, [id, leaseSeconds]);
    },
    ofRecord(recordId, leaseSeconds) {
      return ex.query<CompensationRow>(`SELECT ${compensationColumns("$2")} FROM compensations c WHERE c.record_id = $1 ORDER BY c.requested_at, c.id`, [
        recordId,
        leaseSeconds,
      ]);
    },
    countByState() {
      return ex.query<{ state: CompensationState; n: bigint }>(`SELECT state, count(*) AS n FROM compensations GROUP BY state`);
    },

    async lockRecord(recordId) {
      const [row] = await ex.query<CompensatedRecord>(
        `SELECT id, scope, operation, idempotency_key AS "idempotencyKey", status, resource_type AS "resourceType", provider, provider_reference AS "providerReference",
            amount_minor AS "amountMinor", currency
       FROM idempotency_records WHERE id = $1::bigint FOR UPDATE`,
        [recordId],
      );
      return row ?? null;
    },
    async recordScope(recordId) {
      const [row] = await ex.query<{ scope: string }>(`SELECT scope FROM idempotency_records WHERE id = $1::bigint`, [recordId]);
      return row ? row.scope : null;
    },
    async claimedAmount(recordId, except) {
      const [row] = await ex.query<{ claimed: bigint }>(
        `SELECT coalesce(sum(c.amount_minor), 0)::bigint AS claimed FROM compensations c
      WHERE c.record_id = $1::bigint AND ${CLAIMS_SQL("c")} AND ($2::bigint IS NULL OR c.id <> $2::bigint)`,
        [recordId, except],
      );
      return row.claimed;
    },
    async insert(c, leaseSeconds) {
      const [created] = await ex.query<CompensationRow>(
        `INSERT INTO compensations AS c (record_id, scope, operation, idempotency_key, related_record_id, kind, amount_minor, currency,
                                           provider, provider_reference, provider_idempotency_key, reason, requested_by, requested_by_label)
           VALUES ($2::bigint, $3, $4, $5, $6::bigint, $7, $8::bigint, $9, $10, $11, $12, $13, $14::bigint, $15)
           RETURNING ${compensationColumns("$1")}`,
        [
          leaseSeconds,
          c.record.id,
          c.record.scope,
          c.record.operation,
          c.record.idempotencyKey,
          c.relatedRecordId,
          c.kind,
          c.amountMinor,
          c.record.currency,
          c.record.provider,
          c.record.providerReference,
          c.providerIdempotencyKey,
          c.reason,
          c.requestedBy,
          c.requestedByLabel,
        ],
      );
      return created;
    },
    lock(id, leaseSeconds) {
      return one(`SELECT ${compensationColumns("$2")} FROM compensations c WHERE c.id = $1::bigint FOR UPDATE`, [id, leaseSeconds]);
    },
    decide(id, leaseSeconds, d) {
      return one(
        `UPDATE compensations AS c
            SET state = $3, decided_by = $4::bigint, decided_by_label = $5, decided_at = now(), decision_reason = $6,
                version = c.version + 1, updated_at = now()
          WHERE c.id = $1::bigint AND c.state = 'requested' AND c.version = $7
          RETURNING ${compensationColumns("$2")}`,
        [id, leaseSeconds, d.state, d.by, d.byLabel, d.reason, d.version],
      );
    },
    startAttempt(id, leaseSeconds, version) {
      return one(
        `UPDATE compensations AS c SET ${START_SET}
        WHERE c.id = $1::bigint AND c.state = 'approved' AND c.version = $3
        RETURNING ${compensationColumns("$2")}`,
        [id, leaseSeconds, version],
      );
    },
    restartAttempt(id, leaseSeconds, version) {
      return one(
        `UPDATE compensations AS c SET ${START_SET}
          WHERE c.id = $1::bigint AND c.version = $3
          RETURNING ${compensationColumns("$2")}`,
        [id, leaseSeconds, version],
      );
    },
    markExecuted(id, leaseSeconds, attempt, providerCompensationId) {
      return one(
        `UPDATE compensations AS c
                SET state = 'executed', provider_compensation_id = $4, executed_at = now(), last_error = NULL,
                    version = c.version + 1, updated_at = now()
              WHERE c.id = $1::bigint AND c.state = 'executing' AND c.attempts = $3
              RETURNING ${compensationColumns("$2")}`,
        [id, leaseSeconds, attempt, providerCompensationId],
      );
    },
    markFailed(id, leaseSeconds, attempt, error) {
      return one(
        `UPDATE compensations AS c
                SET state = 'failed', last_error = $4, version = c.version + 1, updated_at = now()
              WHERE c.id = $1::bigint AND c.state = 'executing' AND c.attempts = $3
              RETURNING ${compensationColumns("$2")}`,
        [id, leaseSeconds, attempt, error],
      );
    },
  };
}
