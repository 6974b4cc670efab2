import { withTrySessionLock } from "../db/locks";
import { Params } from "../db/params";
import type { SqlExecutor } from "../db/sql";
import { OPEN_RECONCILIATION_STATES, sqlList } from "../kernel/vocabulary";
import type { StuckThresholds } from "../records/config";
import { recordColumns } from "../records/row";
import type { AwaitingFilter, ClaimRow, ItemRow, ReconcileStore, RecordStateRow, SettleRow } from "./store";

/** The SQL condition "this record may be resolved now": pending, or processing past its operation's stuck threshold. */
function resolvableSql(p: Params, alias: string, now: Date, stuck: StuckThresholds): string {
  const a = alias;
  return `(${a}.status = 'pending' OR (${a}.status = 'processing' AND ${a}.updated_at < ${p.add(now)}::timestamptz - make_interval(secs =>
    COALESCE((${p.add(JSON.stringify(stuck.byOperation))}::jsonb ->> ${a}.operation)::float8, ${p.add(stuck.defaultSeconds)}::float8))))`;
}

/** Moves the picked rows (`pick`: id and state, locked with SKIP LOCKED) to checking and returns them with their record's state. */
async function claimWhere(ex: SqlExecutor, p: Params, pick: string, now: Date, leaseUntil: Date): Promise<ClaimRow[]> {
  return ex.query<ClaimRow>(
    `
    WITH pick AS (${pick}),
    claimed AS (
      UPDATE reconciliation_items i SET state = 'checking', next_check_at = ${p.add(leaseUntil)}::timestamptz,
        updated_at = date_trunc('milliseconds', GREATEST(${p.add(now)}::timestamptz, i.updated_at + interval '1 millisecond'))
      FROM pick WHERE i.id = pick.id
      RETURNING i.id, i.record_id, i.provider, i.provider_request_id, i.attempts, i.updated_at, i.next_check_at, pick.state AS previous_state
    )
    SELECT c.id, c.record_id AS "recordId", c.provider, c.provider_request_id AS "providerRequestId", c.attempts,
           c.updated_at AS "claimToken", c.next_check_at AS "leaseUntil", c.previous_state AS "previousState",
           r.status AS "recordStatus", r.version AS "recordVersion", r.operation AS "recordOperation", r.updated_at AS "recordUpdatedAt"
      FROM claimed c JOIN idempotency_records r ON r.id = c.record_id
     ORDER BY c.id`,
    p.values,
  );
}

/** Pending records and records with an open item matching the filter (two index ranges, united). */
function awaitingSql(p: Params, filter: AwaitingFilter): string {
  const conds: string[] = [];
  if (filter.operation) conds.push(`r.operation = ${p.add(filter.operation)}`);
  if (filter.scope) conds.push(`r.scope = ${p.add(filter.scope)}`);
  if (filter.provider) conds.push(`r.provider = ${p.add(filter.provider)}`);
  const extra = conds.length ? ` AND ${conds.join(" AND ")}` : "";
  return `SELECT r.id, r.updated_at FROM idempotency_records r WHERE r.status = 'pending'${extra}
    UNION
    SELECT r.id, r.updated_at FROM reconciliation_items i JOIN idempotency_records r ON r.id = i.record_id
     WHERE i.state IN ${sqlList(OPEN_RECONCILIATION_STATES)}${extra}`;
}

/** Reconciliation's statements in PostgreSQL (data-modifying CTEs, FOR UPDATE SKIP LOCKED, an advisory try-lock). */
export function postgresReconcileStore(ex: SqlExecutor): ReconcileStore {
  return {
    claimDueItems(limit, now, leaseUntil) {
      const p = new Params();
      const pick = `SELECT id, state FROM reconciliation_items
      WHERE (state = 'open' AND (next_check_at IS NULL OR next_check_at <= ${p.add(now)}::timestamptz))
         OR (state = 'checking' AND next_check_at <= ${p.add(now)}::timestamptz)
      ORDER BY next_check_at NULLS FIRST, id LIMIT ${p.add(limit)}::int FOR UPDATE SKIP LOCKED`;
      return claimWhere(ex, p, pick, now, leaseUntil);
    },
    async claimItemOfRecord(recordId, now, leaseUntil) {
      const p = new Params();
      const pick = `SELECT id, state FROM reconciliation_items
      WHERE record_id = ${p.add(recordId)} AND (state IN ('open', 'needs_manual') OR (state = 'checking' AND next_check_at <= ${p.add(now)}::timestamptz))
      ORDER BY created_at DESC, id DESC LIMIT 1 FOR UPDATE SKIP LOCKED`;
      const [item] = await claimWhere(ex, p, pick, now, leaseUntil);
      return item ?? null;
    },
    async openClaimedItem(recordId, now, leaseUntil) {
      const rows = await ex.query<ClaimRow>(
        `
    WITH ins AS (
      INSERT INTO reconciliation_items (record_id, provider, provider_request_id, state, next_check_at, created_at, updated_at)
      SELECT id, provider, provider_request_id, 'checking', $1::timestamptz, $2::timestamptz, date_trunc('milliseconds', $3::timestamptz)
        FROM idempotency_records r
       WHERE r.id = $4 AND r.provider IS NOT NULL AND r.provider_request_id IS NOT NULL
         AND NOT EXISTS (SELECT 1 FROM reconciliation_items x WHERE x.record_id = r.id AND x.state IN ${sqlList(OPEN_RECONCILIATION_STATES)})
      RETURNING *
    )
    SELECT c.id, c.record_id AS "recordId", c.provider, c.provider_request_id AS "providerRequestId", c.attempts,
           c.updated_at AS "claimToken", c.next_check_at AS "leaseUntil", 'open' AS "previousState",
           r.status AS "recordStatus", r.version AS "recordVersion", r.operation AS "recordOperation", r.updated_at AS "recordUpdatedAt"
      FROM ins c JOIN idempotency_records r ON r.id = c.record_id`,
        [leaseUntil, now, now, recordId],
      );
      return rows[0] ?? null;
    },
    async updateClaimedItem(item, change, now) {
      const rows = await ex.query<ItemRow>(
        `
    UPDATE reconciliation_items SET state = $1, attempts = attempts + 1, last_checked_at = $2::timestamptz,
      next_check_at = $3::timestamptz, last_error = $4,
      resolution = $5::jsonb,
      resolved_by = $6, resolved_at = $7::timestamptz, updated_at = $8::timestamptz
    WHERE id = $9 AND state = 'checking' AND updated_at = $10::timestamptz
    RETURNING state, attempts, next_check_at AS "nextCheckAt", last_error AS "lastError"`,
        [
          change.state,
          now,
          change.nextCheckAt,
          change.lastError,
          change.resolution === null ? null : JSON.stringify(change.resolution),
          change.resolvedBy,
          change.resolvedAt,
          now,
          item.id,
          item.claimToken,
        ],
      );
      return rows[0] ?? null;
    },
    async settleRecord(input) {
      const { now } = input;
      const p = new Params();
      const rows = await ex.query<SettleRow>(
        `
    WITH old AS (
      SELECT id, status, version, provider_reference FROM idempotency_records WHERE id = ${p.add(input.recordId)}
    ), upd AS (
      UPDATE idempotency_records r SET status = ${p.add(input.status)}, response_code = ${p.add(input.response.code)},
        response_headers = ${p.add(JSON.stringify(input.response.headers))}::jsonb, response_body = ${p.add(input.response.body)},
        provider_reference = COALESCE(${p.add(input.providerReference)}, r.provider_reference),
        resource_type = COALESCE(${p.add(input.resource?.type ?? null)}, r.resource_type),
        resource_id = COALESCE(${p.add(input.resource?.id ?? null)}, r.resource_id),
        last_error = ${p.add(input.lastError)}, updated_at = ${p.add(now)}::timestamptz, version = r.version + 1
      FROM old
      WHERE r.id = old.id AND r.version = ${p.add(input.expectedVersion)}::int AND old.version = r.version
        AND ${resolvableSql(p, "r", now, input.stuck)}
      RETURNING r.*
    ), ev AS (
      INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind, payload_hash, response_code, occurred_at, detail)
      SELECT id, scope, operation, idempotency_key, 'reconciled', payload_hash, response_code, ${p.add(now)}::timestamptz,
             ${p.add(JSON.stringify(input.eventDetail))}::jsonb FROM upd
    )
    SELECT ${recordColumns("upd")}, old.status AS "beforeStatus", old.provider_reference AS "beforeReference"
      FROM upd JOIN old ON old.id = upd.id`,
        p.values,
      );
      return rows[0] ?? null;
    },
    async recordState(recordId) {
      const rows = await ex.query<RecordStateRow>(
        `
    SELECT id, status, version, updated_at AS "updatedAt" FROM idempotency_records WHERE id = $1`,
        [recordId],
      );
      return rows[0] ?? null;
    },
    async resolveOpenItems(recordId, state, resolution, resolvedBy, now) {
      const items = await ex.query<{ id: bigint }>(
        `
          UPDATE reconciliation_items SET state = $1,
            resolution = $2::jsonb, resolved_by = $3, resolved_at = $4::timestamptz,
            next_check_at = NULL, updated_at = $5::timestamptz
          WHERE record_id = $6 AND state IN ${sqlList(OPEN_RECONCILIATION_STATES)}
          RETURNING id`,
        [state, JSON.stringify(resolution), resolvedBy, now, now, recordId],
      );
      return items.map((i) => i.id);
    },
    async awaitingIds(filter, limit) {
      const p = new Params();
      const matching = awaitingSql(p, filter);
      const rows = await ex.query<{ id: bigint }>(`SELECT id FROM (${matching}) m ORDER BY updated_at, id LIMIT ${p.add(limit)}`, p.values);
      return rows.map((r) => r.id);
    },
    async countAwaiting(filter) {
      const p = new Params();
      const [count] = await ex.query<{ n: bigint }>(`SELECT count(*)::bigint AS n FROM (${awaitingSql(p, filter)}) m`, p.values);
      return count.n;
    },
    withReconcilerLock(fn) {
      return withTrySessionLock(ex, "reconciler", fn);
    },
  };
}
