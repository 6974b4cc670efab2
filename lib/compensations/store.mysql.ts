import { MYSQL } from "../db/dialect";
import { cursorTimeSql } from "../db/paging";
import { Params } from "../db/params";
import { execute, type SqlExecutor } from "../db/sql";
import type { CompensationRow } from "./model";
import type { CompensatedRecord, CompensationStore } from "./store";
import { OUTCOME_UNKNOWN_PREFIX, type CompensationState } from "./vocabulary";

/**
 * The compensations' statements in MySQL / MariaDB (ADR 0012). No RETURNING: a guarded state
 * change is one conditional UPDATE (affectedRows counts the rows it matched) and the row is read
 * back after it, under the row lock the UPDATE took in the caller's transaction; an insert reads
 * its row by the id it took. Times are UTC_TIMESTAMP(6) (DATETIME holds UTC); the lease is bound
 * in whole microseconds; the computed columns come back as 0/1 and are mapped to booleans.
 */

/** Whether a compensation counts against the record's amount (see CompensationRow.claimsAmount); over `c`. */
const CLAIMS_SQL = (c = "c") =>
  `(${c}.state IN ('requested', 'approved', 'executing', 'executed') OR (${c}.state = 'failed' AND ${c}.last_error LIKE '${OUTCOME_UNKNOWN_PREFIX}%'))`;

/** SELECT list of CompensationRow for `c`; binds the lease twice (placeholders bind in order: it comes first). */
function compensationColumns(p: Params, leaseSeconds: number, c = "c"): string {
  const lease = () => `INTERVAL ${p.add(Math.round(leaseSeconds * 1_000_000))} MICROSECOND`;
  return `${c}.id, ${c}.record_id AS "recordId", ${c}.scope, ${c}.operation, ${c}.idempotency_key AS "idempotencyKey",
    ${c}.related_record_id AS "relatedRecordId", ${c}.kind, ${c}.amount_minor AS "amountMinor", ${c}.currency, ${c}.provider,
    ${c}.provider_reference AS "providerReference", ${c}.provider_idempotency_key AS "providerIdempotencyKey", ${c}.state, ${c}.reason,
    ${c}.requested_by AS "requestedBy", ${c}.requested_by_label AS "requestedByLabel", ${c}.requested_at AS "requestedAt",
    ${c}.decided_by AS "decidedBy", ${c}.decided_by_label AS "decidedByLabel", ${c}.decided_at AS "decidedAt",
    ${c}.decision_reason AS "decisionReason", ${c}.attempts, ${c}.last_attempt_at AS "lastAttemptAt", ${c}.last_error AS "lastError",
    ${c}.provider_compensation_id AS "providerCompensationId", ${c}.executed_at AS "executedAt", ${c}.version,
    ${c}.created_at AS "createdAt", ${c}.updated_at AS "updatedAt", ${CLAIMS_SQL(c)} AS "claimsAmount",
    ((${c}.state = 'executing' AND ${c}.last_attempt_at < UTC_TIMESTAMP(6) - ${lease()})
      OR (${c}.state = 'approved' AND ${c}.decided_at < UTC_TIMESTAMP(6) - ${lease()})) AS "stale"`;
}

type RawRow = Omit<CompensationRow, "claimsAmount" | "stale"> & { claimsAmount: number | boolean; stale: number | boolean };

const optionalId = (v: bigint | number | null) => (v === null ? null : BigInt(v));

function compensationRow<T extends RawRow>(r: T): Omit<T, "claimsAmount" | "stale"> & { claimsAmount: boolean; stale: boolean } {
  return {
    ...r,
    id: BigInt(r.id),
    recordId: optionalId(r.recordId),
    relatedRecordId: optionalId(r.relatedRecordId),
    amountMinor: BigInt(r.amountMinor),
    requestedBy: BigInt(r.requestedBy),
    decidedBy: optionalId(r.decidedBy),
    attempts: Number(r.attempts),
    version: Number(r.version),
    claimsAmount: Boolean(Number(r.claimsAmount)),
    stale: Boolean(Number(r.stale)),
  };
}

const START_SET = `state = 'executing', attempts = c.attempts + 1, last_attempt_at = UTC_TIMESTAMP(6), version = c.version + 1, updated_at = UTC_TIMESTAMP(6)`;

export function mysqlCompensationStore(ex: SqlExecutor): CompensationStore {
  /** The row `id` (with its computed columns), optionally locked. */
  const row = async (id: bigint, leaseSeconds: number, lock = false): Promise<CompensationRow | null> => {
    const p = new Params(MYSQL);
    const cols = compensationColumns(p, leaseSeconds);
    const [r] = await ex.query<RawRow>(`SELECT ${cols} FROM compensations c WHERE c.id = ${p.add(id)}${lock ? " FOR UPDATE" : ""}`, p.values);
    return r ? compensationRow(r) : null;
  };
  /** A guarded change: the row as it now is when the UPDATE matched it, else null. */
  const change = async (id: bigint, leaseSeconds: number, text: string, values: unknown[]): Promise<CompensationRow | null> => {
    const { affectedRows } = await execute(ex, text, values);
    return affectedRows === 0 ? null : row(id, leaseSeconds);
  };
  return {
    async page(query, leaseSeconds) {
      const p = new Params(MYSQL);
      const cols = compensationColumns(p, leaseSeconds);
      const where: string[] = [];
      if (query.state) where.push(`c.state = ${p.add(query.state)}`);
      if (query.recordId !== undefined) where.push(`c.record_id = ${p.add(query.recordId)}`);
      if (query.cursor) {
        // (requested_at, id) < (t, id), spelled out: t binds twice. The cursor's text keeps microseconds.
        const t1 = MYSQL.time(p.add(query.cursor.t));
        const t2 = MYSQL.time(p.add(query.cursor.t));
        where.push(`(c.requested_at < ${t1} OR (c.requested_at = ${t2} AND c.id < ${p.add(query.cursor.id)}))`);
      }
      // (state, requested_at) serves the state filter in page order; record_id the record's few.
      const rows = await ex.query<RawRow & { cursorTime: string }>(
        `SELECT ${cols}, ${cursorTimeSql("c.requested_at", MYSQL)} AS "cursorTime"
       FROM compensations c ${where.length ? `WHERE ${where.join(" AND ")}` : ""}
      ORDER BY c.requested_at DESC, c.id DESC LIMIT ${Math.floor(query.limit) + 1}`,
        p.values,
      );
      return rows.map(compensationRow);
    },
    get(id, leaseSeconds) {
      return row(id, leaseSeconds);
    },
    async ofRecord(recordId, leaseSeconds) {
      const p = new Params(MYSQL);
      const cols = compensationColumns(p, leaseSeconds);
      const rows = await ex.query<RawRow>(`SELECT ${cols} FROM compensations c WHERE c.record_id = ${p.add(recordId)} ORDER BY c.requested_at, c.id`, p.values);
      return rows.map(compensationRow);
    },
    async countByState() {
      const rows = await ex.query<{ state: CompensationState; n: bigint }>(`SELECT state, count(*) AS n FROM compensations GROUP BY state`);
      return rows.map((r) => ({ state: r.state, n: BigInt(r.n) }));
    },

    async lockRecord(recordId) {
      const [r] = await ex.query<CompensatedRecord>(
        `SELECT id, scope, operation, idempotency_key AS "idempotencyKey", status, resource_type AS "resourceType", provider, provider_reference AS "providerReference",
            amount_minor AS "amountMinor", currency
       FROM idempotency_records WHERE id = ? FOR UPDATE`,
        [recordId],
      );
      return r ? { ...r, id: BigInt(r.id), amountMinor: r.amountMinor === null ? null : BigInt(r.amountMinor) } : null;
    },
    async recordScope(recordId) {
      const [r] = await ex.query<{ scope: string }>(`SELECT scope FROM idempotency_records WHERE id = ?`, [recordId]);
      return r ? r.scope : null;
    },
    async claimedAmount(recordId, except) {
      const p = new Params(MYSQL);
      const [r] = await ex.query<{ claimed: bigint | number | string }>(
        `SELECT CAST(COALESCE(SUM(c.amount_minor), 0) AS SIGNED) AS claimed FROM compensations c
      WHERE c.record_id = ${p.add(recordId)} AND ${CLAIMS_SQL("c")}${except === null ? "" : ` AND c.id <> ${p.add(except)}`}`,
        p.values,
      );
      return BigInt(r.claimed);
    },
    async insert(c, leaseSeconds) {
      const { insertId } = await execute(
        ex,
        `INSERT INTO compensations (record_id, scope, operation, idempotency_key, related_record_id, kind, amount_minor, currency,
                                    provider, provider_reference, provider_idempotency_key, reason, requested_by, requested_by_label)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        [
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
      const created = insertId === null ? null : await row(insertId, leaseSeconds);
      if (!created) throw new Error("the compensation's INSERT reported no id");
      return created;
    },
    lock(id, leaseSeconds) {
      return row(id, leaseSeconds, true);
    },
    decide(id, leaseSeconds, d) {
      return change(
        id,
        leaseSeconds,
        `UPDATE compensations c
            SET state = ?, decided_by = ?, decided_by_label = ?, decided_at = UTC_TIMESTAMP(6), decision_reason = ?,
                version = c.version + 1, updated_at = UTC_TIMESTAMP(6)
          WHERE c.id = ? AND c.state = 'requested' AND c.version = ?`,
        [d.state, d.by, d.byLabel, d.reason, id, d.version],
      );
    },
    startAttempt(id, leaseSeconds, version) {
      return change(id, leaseSeconds, `UPDATE compensations c SET ${START_SET} WHERE c.id = ? AND c.state = 'approved' AND c.version = ?`, [id, version]);
    },
    restartAttempt(id, leaseSeconds, version) {
      return change(id, leaseSeconds, `UPDATE compensations c SET ${START_SET} WHERE c.id = ? AND c.version = ?`, [id, version]);
    },
    markExecuted(id, leaseSeconds, attempt, providerCompensationId) {
      return change(
        id,
        leaseSeconds,
        `UPDATE compensations c
                SET state = 'executed', provider_compensation_id = ?, executed_at = UTC_TIMESTAMP(6), last_error = NULL,
                    version = c.version + 1, updated_at = UTC_TIMESTAMP(6)
              WHERE c.id = ? AND c.state = 'executing' AND c.attempts = ?`,
        [providerCompensationId, id, attempt],
      );
    },
    markFailed(id, leaseSeconds, attempt, error) {
      return change(
        id,
        leaseSeconds,
        `UPDATE compensations c
                SET state = 'failed', last_error = ?, version = c.version + 1, updated_at = UTC_TIMESTAMP(6)
              WHERE c.id = ? AND c.state = 'executing' AND c.attempts = ?`,
        [error, id, attempt],
      );
    },
  };
}
