import { isUniqueViolation, retryDeadlocks } from "../db/errors";
import { MYSQL } from "../db/dialect";
import { paramList } from "../db/params";
import { execute, type SqlExecutor } from "../db/sql";
import type { IdempotencyRecord } from "../generated/prisma/client";
import { recordColumns } from "./columns";
import type { ProtocolKey, ProtocolStatements } from "./statements";

/** Runs `fn` in one transaction of its own (READ COMMITTED, the session's level), on one connection. */
export type InTransaction = <T>(fn: (tx: SqlExecutor) => Promise<T>) => Promise<T>;

const RECORD_COLUMNS = recordColumns(undefined, { response: true });

/** A raw row as an IdempotencyRecord: MySQL answers BOOLEAN (TINYINT(1)) as 0/1. */
function record(row: IdempotencyRecord): IdempotencyRecord {
  return { ...row, legalHold: Boolean(row.legalHold) };
}

async function recordById(tx: SqlExecutor, id: bigint): Promise<IdempotencyRecord | null> {
  const rows = await tx.query<IdempotencyRecord>(`SELECT ${RECORD_COLUMNS} FROM idempotency_records WHERE id = ?`, [id]);
  return rows[0] ? record(rows[0]) : null;
}

async function appendEvent(
  tx: SqlExecutor,
  r: ProtocolKey & { id: bigint; payloadHash: string | null },
  kind: string,
  now: Date,
  extra: { responseCode?: number | null; detail?: unknown } = {},
): Promise<void> {
  const p = paramList(MYSQL);
  // query, not execute: no id needed (execute asks LAST_INSERT_ID() around an INSERT).
  await tx.query(
    `INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind, payload_hash, response_code, occurred_at, detail)
     VALUES (${p.add(r.id)}, ${p.add(r.scope)}, ${p.add(r.operation)}, ${p.add(r.key)}, ${p.add(kind)}, ${p.add(r.payloadHash)},
       ${p.add(extra.responseCode ?? null)}, ${p.time(now)}, ${p.add(extra.detail === undefined ? null : JSON.stringify(extra.detail))})`,
    p.values,
  );
}

const keyOf = (r: IdempotencyRecord) => ({ id: r.id, scope: r.scope, operation: r.operation, key: r.idempotencyKey, payloadHash: r.payloadHash });
const settled = (status: string) => status === "completed" || status === "failed";

/**
 * The protocol on MySQL/MariaDB (ADR 0012): no data-modifying CTEs and no RETURNING, so a change
 * and its event are two statements in one transaction (READ COMMITTED: no gap locks on the
 * services' tables), the event written from the row the transaction changed.
 *
 * The reservation is a plain INSERT that the unique key arbitrates: ER_DUP_ENTRY means the key
 * existed. Not the seed's `INSERT … ON DUPLICATE KEY UPDATE id = LAST_INSERT_ID(id)`, whose answer
 * is its affected-row count (1 = inserted, 0 = the key existed): the console's connections carry
 * CLIENT_FOUND_ROWS (the mariadb driver's `foundRows`, on by default, kept so that an UPDATE counts
 * the rows it matched, as on PostgreSQL), and under that flag the statement reports 1 for an
 * existing key too (verified: test/protocol.test.ts). Both wait for an uncommitted reservation of
 * the same key, as ON CONFLICT does, and both writers can share a table.
 */
export function mysqlProtocolStatements(transaction: InTransaction): ProtocolStatements {
  // A deadlock's victim was rolled back whole: run it again (InnoDB may pick a writer's INSERT
  // of a key that a purge batch is deleting; ADR 0012).
  const inTransaction: InTransaction = (fn) => retryDeadlocks(() => transaction(fn));
  return {
    async reserve(r, now) {
      try {
        return await inTransaction(async (tx) => {
          const p = paramList(MYSQL);
          const { insertId } = await execute(
            tx,
            `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status,
               resource_type, resource_id, correlation_id, provider, provider_request_id, amount_minor, currency,
               created_at, updated_at, expires_at)
             VALUES (${p.add(r.scope)}, ${p.add(r.operation)}, ${p.add(r.key)}, ${p.add(r.payloadHash)}, 'processing',
               ${p.add(r.resourceType)}, ${p.add(r.resourceId)}, ${p.add(r.correlationId)}, ${p.add(r.provider)},
               ${p.add(r.providerRequestId)}, ${p.add(r.amountMinor)}, ${p.add(r.currency)},
               ${p.time(now)}, ${p.time(now)}, ${p.time(r.expiresAt)})`,
            p.values,
          );
          if (insertId === null) throw new Error("the reservation's INSERT reported no id");
          await appendEvent(tx, { id: insertId, scope: r.scope, operation: r.operation, key: r.key, payloadHash: r.payloadHash }, "reserved", now);
          return recordById(tx, insertId);
        });
      } catch (err) {
        if (isUniqueViolation(err)) return null;
        throw err;
      }
    },

    async answerExisting(k, hash, now) {
      return inTransaction(async (tx) => {
        const p = paramList(MYSQL);
        const rows = await tx.query<IdempotencyRecord>(
          `SELECT ${RECORD_COLUMNS} FROM idempotency_records
           WHERE scope = ${p.add(k.scope)} AND operation = ${p.add(k.operation)} AND idempotency_key = ${p.add(k.key)}`,
          p.values,
        );
        if (!rows[0]) return null;
        // The event describes the very row version read (one read; the answer is the same row).
        const rec = record(rows[0]);
        const conflict = rec.payloadHash !== hash;
        const kind = conflict ? "conflict" : settled(rec.status) ? "replayed" : "in_progress";
        await appendEvent(tx, { ...keyOf(rec), payloadHash: hash }, kind, now, {
          responseCode: kind === "replayed" ? rec.responseCode : null,
          detail: conflict ? { expectedPayloadHash: rec.payloadHash, receivedPayloadHash: hash } : settled(rec.status) ? undefined : { status: rec.status },
        });
        return rec;
      });
    },

    async complete(id, c, now) {
      return inTransaction(async (tx) => {
        const p = paramList(MYSQL);
        const { affectedRows } = await execute(
          tx,
          `UPDATE idempotency_records SET status = 'completed', response_code = ${p.add(c.code)},
             response_headers = ${p.add(JSON.stringify(c.headers))}, response_body = ${p.add(c.body)},
             resource_type = COALESCE(${p.add(c.resourceType)}, resource_type),
             resource_id = COALESCE(${p.add(c.resourceId)}, resource_id),
             provider_reference = COALESCE(${p.add(c.providerReference)}, provider_reference),
             last_error = NULL, updated_at = ${p.time(now)}, version = version + 1
           WHERE id = ${p.add(id)} AND status = 'processing'`,
          p.values,
        );
        if (affectedRows === 0) return null;
        const rec = (await recordById(tx, id))!;
        await appendEvent(tx, keyOf(rec), "completed", now, { responseCode: rec.responseCode });
        if (c.outbox.length) {
          const o = paramList(MYSQL);
          const rowsSql = c.outbox.map((m) => `(${o.add(id)}, ${o.add(m.topic)}, ${o.add(JSON.stringify(m.payload ?? null))}, ${o.time(now)}, ${o.time(now)})`);
          await tx.query(`INSERT INTO outbox_messages (record_id, topic, payload, created_at, next_attempt_at) VALUES ${rowsSql.join(", ")}`, o.values);
        }
        return rec;
      });
    },

    async fail(id, f, now) {
      return inTransaction(async (tx) => {
        const p = paramList(MYSQL);
        const { affectedRows } = await execute(
          tx,
          `UPDATE idempotency_records SET status = 'failed', response_code = ${p.add(f.code)},
             response_headers = ${p.add(JSON.stringify(f.headers))}, response_body = ${p.add(f.body)},
             last_error = ${p.add(f.error)}, updated_at = ${p.time(now)}, version = version + 1
           WHERE id = ${p.add(id)} AND status = 'processing'`,
          p.values,
        );
        if (affectedRows === 0) return null;
        const rec = (await recordById(tx, id))!;
        await appendEvent(tx, keyOf(rec), "failed", now, { responseCode: rec.responseCode, detail: { error: rec.lastError } });
        return rec;
      });
    },

    async markPending(id, t, now) {
      return inTransaction(async (tx) => {
        const p = paramList(MYSQL);
        const { affectedRows } = await execute(
          tx,
          `UPDATE idempotency_records SET status = 'pending', provider = COALESCE(${p.add(t.provider)}, provider),
             provider_request_id = ${p.add(t.providerRequestId)}, last_error = ${p.add(t.error)},
             updated_at = ${p.time(now)}, version = version + 1
           WHERE id = ${p.add(id)} AND status = 'processing' AND COALESCE(${p.add(t.provider)}, provider) IS NOT NULL`,
          p.values,
        );
        if (affectedRows === 0) return null;
        const rec = (await recordById(tx, id))!;
        const i = paramList(MYSQL);
        const { insertId } = await execute(
          tx,
          `INSERT INTO reconciliation_items (record_id, provider, provider_request_id, state, next_check_at, last_error, created_at, updated_at)
           VALUES (${i.add(id)}, ${i.add(rec.provider)}, ${i.add(rec.providerRequestId)}, 'open', ${i.time(t.firstCheckAt)}, ${i.add(rec.lastError)},
             ${i.time(now)}, ${i.time(now)})`,
          i.values,
        );
        await appendEvent(tx, keyOf(rec), "pending", now, { detail: { providerRequestId: rec.providerRequestId, error: rec.lastError } });
        return { ...rec, reconciliationItemId: insertId };
      });
    },
  };
}
