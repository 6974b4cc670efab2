import { MYSQL } from "../db/dialect";
import { transactionLock } from "../db/locks";
import { Params } from "../db/params";
import { execute, type SqlExecutor } from "../db/sql";
import type { ClaimableRun, PolicyRuleRow, RecordHoldState, RetentionStore } from "./store";

/**
 * The retention tables' statements in MySQL / MariaDB (ADR 0012). The partial unique indexes
 * of PostgreSQL are unique indexes on generated columns here (one policy per operation, one
 * active hold per scope, one active run): an INSERT that would be a second one fails with a
 * duplicate key, which answers null as ON CONFLICT DO NOTHING does. Times are UTC_TIMESTAMP(6)
 * (DATETIME holds UTC); leases are added in whole microseconds. Booleans come back as 0/1.
 */

/** A duplicate key (ER_DUP_ENTRY), from the pool's driver or through Prisma's MariaDB adapter. */
function isDuplicateKey(err: unknown): boolean {
  const e = err as { errno?: number; code?: string; meta?: { driverAdapterError?: { cause?: { kind?: string } } } };
  return e?.errno === 1062 || e?.code === "ER_DUP_ENTRY" || e?.code === "P2002" || e?.meta?.driverAdapterError?.cause?.kind === "UniqueConstraintViolation";
}

/** The id an INSERT took; null when it hit the unique index that keeps one of its kind. */
async function insertUnlessExists(ex: SqlExecutor, text: string, values: unknown[]): Promise<bigint | null> {
  try {
    const { insertId } = await execute(ex, text, values);
    if (insertId === null) throw new Error("the INSERT reported no AUTO_INCREMENT id");
    return insertId;
  } catch (err) {
    if (isDuplicateKey(err)) return null;
    throw err;
  }
}

/** Seconds as an INTERVAL in whole microseconds (MySQL's INTERVAL … SECOND would round a fraction). */
const micros = (seconds: number) => Math.round(seconds * 1_000_000);

const holdState = (r: { id: bigint; scope: string; status: string; legalHold: number | boolean; version: number }): RecordHoldState => ({
  id: BigInt(r.id),
  scope: r.scope,
  status: r.status,
  legalHold: Boolean(Number(r.legalHold)),
  version: Number(r.version),
});

export function mysqlRetentionStore(ex: SqlExecutor): RetentionStore {
  const exists = async (text: string, values: unknown[]) => (await ex.query<{ id: bigint }>(text, values)).length > 0;
  const recordHold = async (recordId: bigint, lock: boolean) => {
    const rows = await ex.query<RecordHoldState>(
      `SELECT id, scope, status, legal_hold AS "legalHold", version FROM idempotency_records WHERE id = ?${lock ? " FOR UPDATE" : ""}`,
      [recordId],
    );
    return rows[0] ? holdState(rows[0]) : null;
  };
  return {
    async policyRules() {
      const rows = await ex.query<PolicyRuleRow>(
        `SELECT id, operation, keep_records_days AS rec, keep_events_days AS ev, enabled FROM retention_policies ORDER BY operation IS NOT NULL, operation, id`,
      );
      return rows.map((r) => ({ ...r, id: BigInt(r.id), rec: Number(r.rec), ev: Number(r.ev), enabled: Boolean(Number(r.enabled)) }));
    },
    insertPolicy(p) {
      // The unique index is on operation_key = COALESCE(operation, ''): one default, one per operation.
      return insertUnlessExists(
        ex,
        `INSERT INTO retention_policies (operation, keep_records_days, keep_events_days, enabled, updated_by_label) VALUES (?, ?, ?, ?, ?)`,
        [p.operation, p.keepRecordsDays, p.keepEventsDays, p.enabled, p.updatedByLabel],
      );
    },
    lockPolicy(id) {
      return exists(`SELECT id FROM retention_policies WHERE id = ? FOR UPDATE`, [id]);
    },
    async countPolicies() {
      const [{ n }] = await ex.query<{ n: bigint }>(`SELECT count(*) AS n FROM retention_policies`);
      return BigInt(n);
    },

    lockHoldsExclusive() {
      return transactionLock(ex, "legalHolds", "exclusive");
    },
    lockHoldsShared() {
      return transactionLock(ex, "legalHolds", "shared");
    },
    lockRecordHold(recordId) {
      return recordHold(recordId, true);
    },
    async setRecordHold(recordId, hold) {
      await execute(ex, `UPDATE idempotency_records SET legal_hold = ?, version = version + 1 WHERE id = ?`, [hold, recordId]);
      // The row is locked by this transaction (lockRecordHold): what it reads is what it wrote.
      const after = await recordHold(recordId, false);
      if (!after) throw new Error(`idempotency record ${recordId} vanished under its row lock`);
      return after;
    },
    insertScopeHold(scope, reason, setByLabel) {
      // The unique index is on active_scope = IF(lifted_at IS NULL, scope, NULL).
      return insertUnlessExists(ex, `INSERT INTO legal_holds (scope, reason, set_by_label) VALUES (?, ?, ?)`, [scope, reason, setByLabel]);
    },
    lockScopeHold(id) {
      return exists(`SELECT id FROM legal_holds WHERE id = ? FOR UPDATE`, [id]);
    },

    insertRun(run) {
      // The unique index is on active_slot = 1 while a run is queued, running or cancelling.
      const p = new Params(MYSQL);
      return insertUnlessExists(
        ex,
        `
          INSERT INTO purge_runs (state, policies, as_of, batch_size, pause_ms, estimated_records, estimated_events, reason,
                                  started_by, started_by_label, worker, lease_until, started_at, heartbeat_at)
          VALUES ('running', ${p.add(JSON.stringify(run.policies))}, ${p.time(run.asOf)}, ${p.add(run.batchSize)}, ${p.add(run.pauseMs)},
                  ${p.add(run.estimatedRecords)}, ${p.add(run.estimatedEvents)}, ${p.add(run.reason)},
                  ${p.add(run.startedBy)}, ${p.add(run.startedByLabel)}, ${p.add(run.worker)},
                  UTC_TIMESTAMP(6) + INTERVAL ${p.add(micros(run.leaseSeconds))} MICROSECOND, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))`,
        p.values,
      );
    },
    lockRun(id) {
      return exists(`SELECT id FROM purge_runs WHERE id = ? FOR UPDATE`, [id]);
    },
    lockRunOfWorker(id, worker) {
      return exists(`SELECT id FROM purge_runs WHERE id = ? AND worker = ? AND state IN ('running', 'cancelling') FOR UPDATE`, [id, worker]);
    },
    async finishRun(id, state, lastError) {
      await execute(
        ex,
        `
    UPDATE purge_runs SET state = ?, phase = CASE WHEN ? = 'completed' THEN 'done' ELSE phase END,
           finished_at = UTC_TIMESTAMP(6), heartbeat_at = UTC_TIMESTAMP(6), lease_until = NULL,
           last_error = COALESCE(?, last_error)
     WHERE id = ?`,
        [state, state, lastError, id],
      );
    },
    async requestCancel(id, byLabel) {
      await execute(ex, `UPDATE purge_runs SET state = 'cancelling', cancel_requested_by_label = ? WHERE id = ?`, [byLabel, id]);
    },
    async runIsIdle(id) {
      const [{ idle }] = await ex.query<{ idle: number }>(
        `SELECT (worker IS NULL OR lease_until IS NULL OR lease_until < UTC_TIMESTAMP(6)) AS idle FROM purge_runs WHERE id = ?`,
        [id],
      );
      return Boolean(Number(idle));
    },
    async lockClaimableRun(worker, runId) {
      const p = new Params(MYSQL);
      const rows = await ex.query<ClaimableRun>(
        `
      SELECT id, worker, lease_until AS "leaseUntil" FROM purge_runs
       WHERE state IN ('queued', 'running', 'cancelling')
         AND (worker IS NULL OR lease_until IS NULL OR lease_until < UTC_TIMESTAMP(6) OR worker = ${p.add(worker)})
         ${runId === null ? "" : `AND id = ${p.add(runId)}`}
       ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED`,
        p.values,
      );
      return rows[0] ? { ...rows[0], id: BigInt(rows[0].id) } : null;
    },
    async claimRun(id, worker, leaseSeconds) {
      // MySQL assigns left to right: pause_ms and started_at are read before anything changes them.
      await execute(
        ex,
        `
      UPDATE purge_runs SET worker = ?, lease_until = UTC_TIMESTAMP(6) + INTERVAL (? + pause_ms * 1000) MICROSECOND,
             heartbeat_at = UTC_TIMESTAMP(6), state = CASE WHEN state = 'queued' THEN 'running' ELSE state END,
             started_at = COALESCE(started_at, UTC_TIMESTAMP(6))
       WHERE id = ?`,
        [worker, micros(leaseSeconds), id],
      );
    },
    async enterEventsPhase(id, leaseSeconds) {
      await execute(
        ex,
        `UPDATE purge_runs SET phase = 'events', heartbeat_at = UTC_TIMESTAMP(6), lease_until = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND WHERE id = ?`,
        [micros(leaseSeconds), id],
      );
    },
    async recordsBatchDone(id, b) {
      await execute(
        ex,
        `
        UPDATE purge_runs SET record_watermark = ?, records_deleted = records_deleted + ?, batches = batches + 1,
               heartbeat_at = UTC_TIMESTAMP(6), lease_until = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, last_error = NULL
         WHERE id = ?`,
        [b.watermark, b.deleted, micros(b.leaseSeconds), id],
      );
    },
    async eventsBatchDone(id, b) {
      await execute(
        ex,
        `
        UPDATE purge_runs SET event_watermark = ?, events_deleted = events_deleted + ?, batches = batches + 1,
               heartbeat_at = UTC_TIMESTAMP(6), lease_until = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, last_error = NULL
         WHERE id = ?`,
        [b.watermark, b.deleted, micros(b.leaseSeconds), id],
      );
    },
    async noteBatchError(id, worker, error) {
      await execute(ex, `UPDATE purge_runs SET last_error = ? WHERE id = ? AND worker = ?`, [error, id, worker]);
    },
  };
}
