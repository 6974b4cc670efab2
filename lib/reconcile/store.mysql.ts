import { MYSQL } from "../db/dialect";
import { withTrySessionLock } from "../db/locks";
import { Params } from "../db/params";
import { execute, type SqlExecutor } from "../db/sql";
import { OPEN_RECONCILIATION_STATES, sqlList } from "../kernel/vocabulary";
import type { StuckThresholds } from "../records/config";
import { recordColumns } from "../records/row";
import type { AwaitingFilter, ClaimRow, ItemRow, ReconcileStore, RecordStateRow, SettleRow } from "./store";

/**
 * Reconciliation's statements in MySQL / MariaDB (ADR 0012). No data-modifying CTEs and no
 * RETURNING: a claim, an item's end and the guarded settle are a few statements each, in the
 * caller's transaction (READ COMMITTED), and the rows they return are read back under the row
 * locks the writes took. Times are bound as ISO text (Params.time) and compared as DATETIME(6)
 * holding UTC; the claim token is truncated to the millisecond so that a JS Date carries it
 * exactly. Booleans are 0/1.
 */

/**
 * A DATETIME(6) column expression truncated to the millisecond (CAST … AS DATETIME(3) rounds on
 * MySQL). It names `x` twice: never a placeholder (each binds once).
 */
const toMillis = (x: string) => `(${x} - INTERVAL MICROSECOND(${x}) % 1000 MICROSECOND)`;

/**
 * "This record may be resolved now": pending, or processing past its operation's stuck
 * threshold. The thresholds are written into the statement as a CASE over the operations that
 * have their own (the JSON document of PostgreSQL's spelling, unrolled; each value bound).
 */
function resolvableSql(p: Params, alias: string, now: Date, stuck: StuckThresholds): string {
  const a = alias;
  // Placeholders bind in order: the time stands before the threshold in the text.
  const before = p.time(now);
  const own = Object.entries(stuck.byOperation);
  const threshold = own.length
    ? `CASE ${own.map(([op, s]) => `WHEN ${a}.operation = ${p.add(op)} THEN ${p.add(Math.round(s * 1_000_000))}`).join(" ")} ELSE ${p.add(Math.round(stuck.defaultSeconds * 1_000_000))} END`
    : p.add(Math.round(stuck.defaultSeconds * 1_000_000));
  return `(${a}.status = 'pending' OR (${a}.status = 'processing' AND ${a}.updated_at < ${before} - INTERVAL (${threshold}) MICROSECOND))`;
}

interface Picked {
  id: bigint;
  state: string;
}

/** The claim's SELECT list of an item `c` and its record `r` (ClaimRow without previousState). */
const CLAIM_COLUMNS = `c.id, c.record_id AS "recordId", c.provider, c.provider_request_id AS "providerRequestId", c.attempts,
           c.updated_at AS "claimToken", c.next_check_at AS "leaseUntil",
           r.status AS "recordStatus", r.version AS "recordVersion", r.operation AS "recordOperation", r.updated_at AS "recordUpdatedAt"`;

const claimRow = (r: Omit<ClaimRow, "previousState">, previousState: string): ClaimRow => ({
  ...r,
  id: BigInt(r.id),
  recordId: BigInt(r.recordId),
  attempts: Number(r.attempts),
  recordVersion: Number(r.recordVersion),
  previousState,
});

/** Moves the picked items (locked by this transaction) to checking and returns them with their record's state, by id. */
async function claimPicked(ex: SqlExecutor, picked: Picked[], now: Date, leaseUntil: Date): Promise<ClaimRow[]> {
  if (picked.length === 0) return [];
  const p = new Params(MYSQL);
  const lease = p.time(leaseUntil);
  // Later than the item's last change, to the millisecond (`now` has milliseconds only: a JS Date).
  const token = `GREATEST(${p.time(now)}, ${toMillis("updated_at + INTERVAL 1000 MICROSECOND")})`;
  await execute(
    ex,
    `UPDATE reconciliation_items SET state = 'checking', next_check_at = ${lease}, updated_at = ${token}
      WHERE id IN (${p.list(picked.map((x) => x.id))})`,
    p.values,
  );
  const q = new Params(MYSQL);
  const rows = await ex.query<Omit<ClaimRow, "previousState">>(
    `SELECT ${CLAIM_COLUMNS}
       FROM reconciliation_items c JOIN idempotency_records r ON r.id = c.record_id
      WHERE c.id IN (${q.list(picked.map((x) => x.id))})
      ORDER BY c.id`,
    q.values,
  );
  const before = new Map(picked.map((x) => [BigInt(x.id), x.state]));
  return rows.map((r) => claimRow(r, before.get(BigInt(r.id)) ?? "open"));
}

/** Pending records and records with an open item matching the filter (two index ranges, united). */
function awaitingSql(p: Params, filter: AwaitingFilter): string {
  // Placeholders bind in order: each half adds its own copy of the filter's values.
  const extra = () => {
    const conds: string[] = [];
    if (filter.operation) conds.push(`r.operation = ${p.add(filter.operation)}`);
    if (filter.scope) conds.push(`r.scope = ${p.add(filter.scope)}`);
    if (filter.provider) conds.push(`r.provider = ${p.add(filter.provider)}`);
    return conds.length ? ` AND ${conds.join(" AND ")}` : "";
  };
  const pending = `SELECT r.id, r.updated_at FROM idempotency_records r WHERE r.status = 'pending'${extra()}`;
  const open = `SELECT r.id, r.updated_at FROM reconciliation_items i JOIN idempotency_records r ON r.id = i.record_id
     WHERE i.state IN ${sqlList(OPEN_RECONCILIATION_STATES)}${extra()}`;
  return `${pending}
    UNION
    ${open}`;
}

/** Reconciliation's statements in MySQL / MariaDB (FOR UPDATE SKIP LOCKED, GET_LOCK for the reconciler). */
export function mysqlReconcileStore(ex: SqlExecutor): ReconcileStore {
  return {
    async claimDueItems(limit, now, leaseUntil) {
      // InnoDB keeps the lock of every row a locking read matched, returned or not: a read that
      // sorts (the OR of two states does) would lock every due item and hand out `limit`, and
      // concurrent claimers would skip them all. So each state is its own range of
      // (state, next_check_at), read in index order — it stops after `limit` rows it could lock
      // (SKIP LOCKED passes over other claimers' rows to the next ones) — and the oldest `limit`
      // of both are claimed. The few others it locked are free again when the claim commits.
      const size = Math.max(1, Math.floor(limit));
      const pick = async (state: "open" | "checking") => {
        const p = new Params(MYSQL);
        const due = state === "open" ? `(next_check_at IS NULL OR next_check_at <= ${p.time(now)})` : `next_check_at <= ${p.time(now)}`;
        return ex.query<Picked & { nextCheckAt: Date | null }>(
          `SELECT id, state, next_check_at AS "nextCheckAt" FROM reconciliation_items FORCE INDEX (reconciliation_items_state_next_check_at_idx)
            WHERE state = '${state}' AND ${due}
            ORDER BY next_check_at, id LIMIT ${size} FOR UPDATE SKIP LOCKED`,
          p.values,
        );
      };
      const dueAt = (x: { nextCheckAt: Date | null }) => (x.nextCheckAt === null ? -Infinity : x.nextCheckAt.getTime());
      const both = [...(await pick("open")), ...(await pick("checking"))];
      const oldest = both.sort((a, b) => dueAt(a) - dueAt(b) || (BigInt(a.id) < BigInt(b.id) ? -1 : 1)).slice(0, size);
      return claimPicked(ex, oldest, now, leaseUntil);
    },
    async claimItemOfRecord(recordId, now, leaseUntil) {
      const p = new Params(MYSQL);
      const picked = await ex.query<Picked>(
        `SELECT id, state FROM reconciliation_items
      WHERE record_id = ${p.add(recordId)} AND (state IN ('open', 'needs_manual') OR (state = 'checking' AND next_check_at <= ${p.time(now)}))
      ORDER BY created_at DESC, id DESC LIMIT 1 FOR UPDATE SKIP LOCKED`,
        p.values,
      );
      const [item] = await claimPicked(ex, picked, now, leaseUntil);
      return item ?? null;
    },
    async openClaimedItem(recordId, now, leaseUntil) {
      // The record is read in READ COMMITTED (INSERT … SELECT takes no lock on it then).
      const p = new Params(MYSQL);
      const { insertId } = await execute(
        ex,
        `
      INSERT INTO reconciliation_items (record_id, provider, provider_request_id, state, next_check_at, created_at, updated_at)
      SELECT id, provider, provider_request_id, 'checking', ${p.time(leaseUntil)}, ${p.time(now)}, ${p.time(now)}
        FROM idempotency_records r
       WHERE r.id = ${p.add(recordId)} AND r.provider IS NOT NULL AND r.provider_request_id IS NOT NULL
         AND NOT EXISTS (SELECT 1 FROM reconciliation_items x WHERE x.record_id = r.id AND x.state IN ${sqlList(OPEN_RECONCILIATION_STATES)})`,
        p.values,
      );
      if (insertId === null) return null;
      const rows = await ex.query<Omit<ClaimRow, "previousState">>(
        `SELECT ${CLAIM_COLUMNS} FROM reconciliation_items c JOIN idempotency_records r ON r.id = c.record_id WHERE c.id = ?`,
        [insertId],
      );
      return rows[0] ? claimRow(rows[0], "open") : null;
    },
    async updateClaimedItem(item, change, now) {
      const p = new Params(MYSQL);
      const at = () => p.time(now);
      const { affectedRows } = await execute(
        ex,
        `
    UPDATE reconciliation_items SET state = ${p.add(change.state)}, attempts = attempts + 1, last_checked_at = ${at()},
      next_check_at = ${change.nextCheckAt ? p.time(change.nextCheckAt) : "NULL"}, last_error = ${p.add(change.lastError)},
      resolution = ${p.add(change.resolution === null ? null : JSON.stringify(change.resolution))},
      resolved_by = ${p.add(change.resolvedBy)}, resolved_at = ${change.resolvedAt ? p.time(change.resolvedAt) : "NULL"}, updated_at = ${at()}
    WHERE id = ${p.add(item.id)} AND state = 'checking' AND updated_at = ${p.time(item.claimToken)}`,
        p.values,
      );
      if (affectedRows === 0) return null;
      const [row] = await ex.query<ItemRow>(
        `SELECT state, attempts, next_check_at AS "nextCheckAt", last_error AS "lastError" FROM reconciliation_items WHERE id = ?`,
        [item.id],
      );
      return row ? { ...row, attempts: Number(row.attempts) } : null;
    },
    async settleRecord(input) {
      const { now } = input;
      // The row as it is (no lock), as PostgreSQL's `old`: the UPDATE below changes it only at the
      // same version, so "before" is the row it changed (every change bumps the version).
      const [old] = await ex.query<{ status: string; version: number; providerReference: string | null }>(
        `SELECT status, version, provider_reference AS "providerReference" FROM idempotency_records WHERE id = ?`,
        [input.recordId],
      );
      if (!old || Number(old.version) !== input.expectedVersion) return null;
      // One conditional UPDATE: id, status (pending, or processing past its stuck threshold), the
      // version seen. affectedRows counts matched rows (foundRows), as PostgreSQL's row count; one
      // racing it waits for its row lock and then matches nothing.
      const p = new Params(MYSQL);
      const { affectedRows } = await execute(
        ex,
        `
      UPDATE idempotency_records r SET status = ${p.add(input.status)}, response_code = ${p.add(input.response.code)},
        response_headers = ${p.add(JSON.stringify(input.response.headers))}, response_body = ${p.add(input.response.body)},
        provider_reference = COALESCE(${p.add(input.providerReference)}, r.provider_reference),
        resource_type = COALESCE(${p.add(input.resource?.type ?? null)}, r.resource_type),
        resource_id = COALESCE(${p.add(input.resource?.id ?? null)}, r.resource_id),
        last_error = ${p.add(input.lastError)}, updated_at = ${p.time(now)}, version = r.version + 1
      WHERE r.id = ${p.add(input.recordId)} AND r.version = ${p.add(input.expectedVersion)}
        AND ${resolvableSql(p, "r", now, input.stuck)}`,
        p.values,
      );
      if (affectedRows === 0) return null;
      const e = new Params(MYSQL);
      await execute(
        ex,
        `
      INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind, payload_hash, response_code, occurred_at, detail)
      SELECT id, scope, operation, idempotency_key, 'reconciled', payload_hash, response_code, ${e.time(now)}, ${e.add(JSON.stringify(input.eventDetail))}
        FROM idempotency_records WHERE id = ${e.add(input.recordId)}`,
        e.values,
      );
      const [after] = await ex.query<SettleRow>(`SELECT ${recordColumns("r")} FROM idempotency_records r WHERE r.id = ?`, [input.recordId]);
      return {
        ...after,
        id: BigInt(after.id),
        version: Number(after.version),
        legalHold: Boolean(Number(after.legalHold)),
        beforeStatus: old.status,
        beforeReference: old.providerReference,
      };
    },
    async recordState(recordId) {
      const rows = await ex.query<RecordStateRow>(`SELECT id, status, version, updated_at AS "updatedAt" FROM idempotency_records WHERE id = ?`, [recordId]);
      return rows[0] ? { ...rows[0], id: BigInt(rows[0].id), version: Number(rows[0].version) } : null;
    },
    async resolveOpenItems(recordId, state, resolution, resolvedBy, now) {
      // The open items, locked; then closed (by id: exactly the ones read).
      const open = await ex.query<{ id: bigint }>(
        `SELECT id FROM reconciliation_items WHERE record_id = ? AND state IN ${sqlList(OPEN_RECONCILIATION_STATES)} ORDER BY id FOR UPDATE`,
        [recordId],
      );
      if (open.length === 0) return [];
      const p = new Params(MYSQL);
      await execute(
        ex,
        `
          UPDATE reconciliation_items SET state = ${p.add(state)},
            resolution = ${p.add(JSON.stringify(resolution))}, resolved_by = ${p.add(resolvedBy)}, resolved_at = ${p.time(now)},
            next_check_at = NULL, updated_at = ${p.time(now)}
          WHERE id IN (${p.list(open.map((i) => i.id))})`,
        p.values,
      );
      return open.map((i) => BigInt(i.id));
    },
    async awaitingIds(filter, limit) {
      const p = new Params(MYSQL);
      const matching = awaitingSql(p, filter);
      const rows = await ex.query<{ id: bigint }>(`SELECT id FROM (${matching}) m ORDER BY updated_at, id LIMIT ${Math.max(0, Math.floor(limit))}`, p.values);
      return rows.map((r) => BigInt(r.id));
    },
    async countAwaiting(filter) {
      const p = new Params(MYSQL);
      const [count] = await ex.query<{ n: bigint }>(`SELECT count(*) AS n FROM (${awaitingSql(p, filter)}) m`, p.values);
      return BigInt(count.n);
    },
    withReconcilerLock(fn) {
      return withTrySessionLock(ex, "reconciler", fn);
    },
  };
}
