import { transactionLock } from "../db/locks";
import type { SqlExecutor } from "../db/sql";
import type { ClaimableRun, PolicyRuleRow, RecordHoldState, RetentionStore } from "./store";

/** The retention tables' statements in PostgreSQL (ON CONFLICT on the partial unique indexes). */
export function postgresRetentionStore(ex: SqlExecutor): RetentionStore {
  const exists = async (text: string, values: unknown[]) => (await ex.query<{ id: bigint }>(text, values)).length > 0;
  return {
    policyRules() {
      return ex.query<PolicyRuleRow>(
        `SELECT id, operation, keep_records_days AS rec, keep_events_days AS ev, enabled FROM retention_policies ORDER BY operation NULLS FIRST, id`,
      );
    },
    async insertPolicy(p) {
      // The unique index is on COALESCE(operation, ''): one default, one per operation.
      const inserted = await ex.query<{ id: bigint }>(
        `
        INSERT INTO retention_policies (operation, keep_records_days, keep_events_days, enabled, updated_by_label)
        VALUES ($1, $2, $3, $4, $5)
        ON CONFLICT ((COALESCE(operation, ''))) DO NOTHING
        RETURNING id`,
        [p.operation, p.keepRecordsDays, p.keepEventsDays, p.enabled, p.updatedByLabel],
      );
      return inserted[0]?.id ?? null;
    },
    lockPolicy(id) {
      return exists(`SELECT id FROM retention_policies WHERE id = $1 FOR UPDATE`, [id]);
    },
    async countPolicies() {
      const [{ n }] = await ex.query<{ n: bigint }>(`SELECT count(*)::bigint AS n FROM retention_policies`);
      return n;
    },

    lockHoldsExclusive() {
      return transactionLock(ex, "legalHolds", "exclusive");
    },
    lockHoldsShared() {
      return transactionLock(ex, "legalHolds", "shared");
    },
    async lockRecordHold(recordId) {
      const rows = await ex.query<RecordHoldState>(
        `
    SELECT id, scope, status, legal_hold AS "legalHold", version FROM idempotency_records WHERE id = $1 FOR UPDATE`,
        [recordId],
      );
      return rows[0] ?? null;
    },
    async setRecordHold(recordId, hold) {
      const [after] = await ex.query<RecordHoldState>(
        `
          UPDATE idempotency_records SET legal_hold = $1, version = version + 1 WHERE id = $2
          RETURNING id, scope, status, legal_hold AS "legalHold", version`,
        [hold, recordId],
      );
      return after;
    },
    async insertScopeHold(scope, reason, setByLabel) {
      const inserted = await ex.query<{ id: bigint }>(
        `
        INSERT INTO legal_holds (scope, reason, set_by_label) VALUES ($1, $2, $3)
        ON CONFLICT (scope) WHERE lifted_at IS NULL DO NOTHING RETURNING id`,
        [scope, reason, setByLabel],
      );
      return inserted[0]?.id ?? null;
    },
    lockScopeHold(id) {
      return exists(`SELECT id FROM legal_holds WHERE id = $1 FOR UPDATE`, [id]);
    },

    async insertRun(run) {
      const inserted = await ex.query<{ id: bigint }>(
        `
          INSERT INTO purge_runs (state, policies, as_of, batch_size, pause_ms, estimated_records, estimated_events, reason,
                                  started_by, started_by_label, worker, lease_until, started_at, heartbeat_at)
          VALUES ('running', $1::jsonb, $2::timestamptz, $3, $4,
                  $5, $6, $7,
                  $8, $9, $10,
                  now() + make_interval(secs => $11), now(), now())
          ON CONFLICT ((true)) WHERE state IN ('queued', 'running', 'cancelling') DO NOTHING
          RETURNING id`,
        [
          JSON.stringify(run.policies),
          run.asOf,
          run.batchSize,
          run.pauseMs,
          run.estimatedRecords,
          run.estimatedEvents,
          run.reason,
          run.startedBy,
          run.startedByLabel,
          run.worker,
          run.leaseSeconds,
        ],
      );
      return inserted[0]?.id ?? null;
    },
    lockRun(id) {
      return exists(`SELECT id FROM purge_runs WHERE id = $1 FOR UPDATE`, [id]);
    },
    lockRunOfWorker(id, worker) {
      return exists(`SELECT id FROM purge_runs WHERE id = $1 AND worker = $2 AND state IN ('running', 'cancelling') FOR UPDATE`, [id, worker]);
    },
    async finishRun(id, state, lastError) {
      await ex.query(
        `
    UPDATE purge_runs SET state = $1, phase = CASE WHEN $2::text = 'completed' THEN 'done' ELSE phase END,
           finished_at = now(), heartbeat_at = now(), lease_until = NULL,
           last_error = COALESCE($3::text, last_error)
     WHERE id = $4`,
        [state, state, lastError, id],
      );
    },
    async requestCancel(id, byLabel) {
      await ex.query(`UPDATE purge_runs SET state = 'cancelling', cancel_requested_by_label = $1 WHERE id = $2`, [byLabel, id]);
    },
    async runIsIdle(id) {
      const [{ idle }] = await ex.query<{ idle: boolean }>(
        `
        SELECT (worker IS NULL OR lease_until IS NULL OR lease_until < now()) AS idle FROM purge_runs WHERE id = $1`,
        [id],
      );
      return idle;
    },
    async lockClaimableRun(worker, runId) {
      const rows = await ex.query<ClaimableRun>(
        `
      SELECT id, worker, lease_until AS "leaseUntil" FROM purge_runs
       WHERE state IN ('queued', 'running', 'cancelling')
         AND (worker IS NULL OR lease_until IS NULL OR lease_until < now() OR worker = $1)
         AND ($2::bigint IS NULL OR id = $3::bigint)
       ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED`,
        [worker, runId, runId],
      );
      return rows[0] ?? null;
    },
    async claimRun(id, worker, leaseSeconds) {
      await ex.query(
        `
      UPDATE purge_runs SET worker = $1, lease_until = now() + make_interval(secs => $2 + pause_ms / 1000.0),
             heartbeat_at = now(), state = CASE WHEN state = 'queued' THEN 'running' ELSE state END,
             started_at = COALESCE(started_at, now())
       WHERE id = $3`,
        [worker, leaseSeconds, id],
      );
    },
    async enterEventsPhase(id, leaseSeconds) {
      await ex.query(`UPDATE purge_runs SET phase = 'events', heartbeat_at = now(), lease_until = now() + make_interval(secs => $1) WHERE id = $2`, [
        leaseSeconds,
        id,
      ]);
    },
    async recordsBatchDone(id, b) {
      await ex.query(
        `
        UPDATE purge_runs SET record_watermark = $1, records_deleted = records_deleted + $2, batches = batches + 1,
               heartbeat_at = now(), lease_until = now() + make_interval(secs => $3), last_error = NULL
         WHERE id = $4`,
        [b.watermark, b.deleted, b.leaseSeconds, id],
      );
    },
    async eventsBatchDone(id, b) {
      await ex.query(
        `
        UPDATE purge_runs SET event_watermark = $1, events_deleted = events_deleted + $2, batches = batches + 1,
               heartbeat_at = now(), lease_until = now() + make_interval(secs => $3), last_error = NULL
         WHERE id = $4`,
        [b.watermark, b.deleted, b.leaseSeconds, id],
      );
    },
    async noteBatchError(id, worker, error) {
      await ex.query(`UPDATE purge_runs SET last_error = $1 WHERE id = $2 AND worker = $3`, [error, id, worker]);
    },
  };
}
