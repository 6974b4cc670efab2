import { isUniqueViolation, retryDeadlocks } from "../db/errors";
import { MYSQL } from "../db/dialect";
import { paramList, plain, type Params, type Statement } from "../db/params";
import type { IdempotencyRecord } from "../generated/prisma/client";
import { recordColumns } from "./columns";
import type { ProtocolStatements } from "./statements";

/**
 * Runs `statements` as one transaction of their own (READ COMMITTED, the session's level) on one
 * connection, answering each statement's rows (a write answers none); rolled back if one fails.
 */
export type RunTransaction = (statements: Statement[]) => Promise<unknown[][]>;

const RECORD_COLUMNS = recordColumns(undefined, { response: true });

/** A raw row as an IdempotencyRecord: MySQL answers BOOLEAN (TINYINT(1)) as 0/1. */
function record(row: IdempotencyRecord): IdempotencyRecord {
  return { ...row, legalHold: Boolean(row.legalHold) };
}

/** One statement, its parameters bound by `build` (MySQL placeholders). */
function statement(build: (p: Params) => string): Statement {
  const p = paramList(MYSQL);
  const text = build(p);
  return { text, values: p.values };
}

const EVENT_COLUMNS = `record_id, scope, operation, idempotency_key, kind, payload_hash, response_code, occurred_at, detail`;

/** The event `kind` of the record `where` names, written from that row: `detail` and `responseCode` are SQL over its columns. */
const eventFromRecord = (kind: string, now: Date, where: (p: Params) => string, extra: { responseCode?: string; detail?: string } = {}) =>
  statement(
    (p) => `INSERT INTO idempotency_events (${EVENT_COLUMNS})
     SELECT id, scope, operation, idempotency_key, ${p.add(kind)}, payload_hash, ${extra.responseCode ?? "NULL"}, ${p.time(now)}, ${extra.detail ?? "NULL"}
       FROM idempotency_records WHERE ${where(p)}`,
  );
/** The record `id` if the transition before matched. */
const changed = (id: bigint) => (p: Params) => `id = ${p.add(id)} AND @ic_changed > 0`;

/** A transition's UPDATE, then whether it matched (ROW_COUNT(); the UPDATE bumps version, so matched = changed). */
const transition = (update: Statement): Statement[] => [update, plain(`SET @ic_changed = ROW_COUNT()`)];
/** The record after a transition, or no row when it did not match. */
const recordIfChanged = (id: bigint, also = "") => statement((p) => `SELECT ${RECORD_COLUMNS}${also} FROM idempotency_records WHERE ${changed(id)(p)}`);
const firstRecord = (rows: unknown[] | undefined) => (rows?.[0] ? record(rows[0] as IdempotencyRecord) : null);

/**
 * The protocol on MySQL/MariaDB (ADR 0012): no data-modifying CTEs and no RETURNING, so a change
 * and its event are two statements in one transaction (READ COMMITTED: no gap locks on the
 * services' tables), the event written from the row the transaction changed. Each step's
 * statements need nothing from the client between them (session variables carry the new id and
 * whether a transition matched), so the handle sends a step as one round trip (statements.ts).
 *
 * The reservation is a plain INSERT that the unique key arbitrates: ER_DUP_ENTRY means the key
 * existed. Not the seed's `INSERT … ON DUPLICATE KEY UPDATE id = LAST_INSERT_ID(id)`, whose answer
 * is its affected-row count (1 = inserted, 0 = the key existed): the console's connections carry
 * CLIENT_FOUND_ROWS (the mariadb driver's `foundRows`, on by default, kept so that an UPDATE counts
 * the rows it matched, as on PostgreSQL), and under that flag the statement reports 1 for an
 * existing key too (verified: test/protocol.test.ts). Both wait for an uncommitted reservation of
 * the same key, as ON CONFLICT does, and both writers can share a table.
 */
export function mysqlProtocolStatements(transaction: RunTransaction): ProtocolStatements {
  // A deadlock's victim was rolled back whole: run it again (InnoDB may pick a writer's INSERT
  // of a key that a purge batch is deleting; ADR 0012).
  const run = (statements: Statement[]) => retryDeadlocks(() => transaction(statements));
  return {
    async reserve(r, now) {
      try {
        const results = await run([
          statement(
            (p) => `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status,
               resource_type, resource_id, correlation_id, provider, provider_request_id, amount_minor, currency,
               created_at, updated_at, expires_at)
             VALUES (${p.add(r.scope)}, ${p.add(r.operation)}, ${p.add(r.key)}, ${p.add(r.payloadHash)}, 'processing',
               ${p.add(r.resourceType)}, ${p.add(r.resourceId)}, ${p.add(r.correlationId)}, ${p.add(r.provider)},
               ${p.add(r.providerRequestId)}, ${p.add(r.amountMinor)}, ${p.add(r.currency)},
               ${p.time(now)}, ${p.time(now)}, ${p.time(r.expiresAt)})`,
          ),
          // The event's INSERT takes an id of its own: keep the record's.
          plain(`SET @ic_record = LAST_INSERT_ID()`),
          eventFromRecord("reserved", now, () => `id = @ic_record`),
          plain(`SELECT ${RECORD_COLUMNS} FROM idempotency_records WHERE id = @ic_record`),
        ]);
        const inserted = firstRecord(results.at(-1));
        if (!inserted) throw new Error("the reservation's INSERT left no record");
        return inserted;
      } catch (err) {
        if (isUniqueViolation(err)) return null;
        throw err;
      }
    },

    async answerExisting(k, hash, now) {
      const where = (p: Params) => `scope = ${p.add(k.scope)} AND operation = ${p.add(k.operation)} AND idempotency_key = ${p.add(k.key)}`;
      // The shared lock keeps the row as read until the event is written from it: the event
      // describes the very row version answered.
      const results = await run([
        statement((p) => `SELECT ${RECORD_COLUMNS} FROM idempotency_records WHERE ${where(p)} LOCK IN SHARE MODE`),
        statement((p) => {
          const settled = `status IN ('completed', 'failed')`;
          const h = () => p.add(hash);
          return `INSERT INTO idempotency_events (${EVENT_COLUMNS})
            SELECT id, scope, operation, idempotency_key,
                   CASE WHEN payload_hash <> ${h()} THEN 'conflict' WHEN ${settled} THEN 'replayed' ELSE 'in_progress' END,
                   ${h()},
                   CASE WHEN payload_hash = ${h()} AND ${settled} THEN response_code END,
                   ${p.time(now)},
                   CASE WHEN payload_hash <> ${h()} THEN JSON_OBJECT('expectedPayloadHash', payload_hash, 'receivedPayloadHash', ${h()})
                        WHEN NOT ${settled} THEN JSON_OBJECT('status', status) END
              FROM idempotency_records WHERE ${where(p)}`;
        }),
      ]);
      return firstRecord(results[0]);
    },

    async complete(id, c, now) {
      const results = await run([
        ...transition(
          statement(
            (p) => `UPDATE idempotency_records SET status = 'completed', response_code = ${p.add(c.code)},
             response_headers = ${p.add(JSON.stringify(c.headers))}, response_body = ${p.add(c.body)},
             resource_type = COALESCE(${p.add(c.resourceType)}, resource_type),
             resource_id = COALESCE(${p.add(c.resourceId)}, resource_id),
             provider_reference = COALESCE(${p.add(c.providerReference)}, provider_reference),
             last_error = NULL, updated_at = ${p.time(now)}, version = version + 1
           WHERE id = ${p.add(id)} AND status = 'processing'`,
          ),
        ),
        eventFromRecord("completed", now, changed(id), { responseCode: "response_code" }),
        ...c.outbox.map((m) =>
          statement(
            (p) => `INSERT INTO outbox_messages (record_id, topic, payload, created_at, next_attempt_at)
             SELECT ${p.add(id)}, ${p.add(m.topic)}, ${p.add(JSON.stringify(m.payload ?? null))}, ${p.time(now)}, ${p.time(now)} FROM DUAL WHERE @ic_changed > 0`,
          ),
        ),
        recordIfChanged(id),
      ]);
      return firstRecord(results.at(-1));
    },

    async fail(id, f, now) {
      const results = await run([
        ...transition(
          statement(
            (p) => `UPDATE idempotency_records SET status = 'failed', response_code = ${p.add(f.code)},
             response_headers = ${p.add(JSON.stringify(f.headers))}, response_body = ${p.add(f.body)},
             last_error = ${p.add(f.error)}, updated_at = ${p.time(now)}, version = version + 1
           WHERE id = ${p.add(id)} AND status = 'processing'`,
          ),
        ),
        eventFromRecord("failed", now, changed(id), { responseCode: "response_code", detail: `JSON_OBJECT('error', last_error)` }),
        recordIfChanged(id),
      ]);
      return firstRecord(results.at(-1));
    },

    async markPending(id, t, now) {
      const results = await run([
        ...transition(
          statement(
            (p) => `UPDATE idempotency_records SET status = 'pending', provider = COALESCE(${p.add(t.provider)}, provider),
             provider_request_id = ${p.add(t.providerRequestId)}, last_error = ${p.add(t.error)},
             updated_at = ${p.time(now)}, version = version + 1
           WHERE id = ${p.add(id)} AND status = 'processing' AND COALESCE(${p.add(t.provider)}, provider) IS NOT NULL`,
          ),
        ),
        statement(
          (p) => `INSERT INTO reconciliation_items (record_id, provider, provider_request_id, state, next_check_at, last_error, created_at, updated_at)
           SELECT id, provider, provider_request_id, 'open', ${p.time(t.firstCheckAt)}, last_error, ${p.time(now)}, ${p.time(now)}
             FROM idempotency_records WHERE ${changed(id)(p)}`,
        ),
        plain(`SET @ic_item = IF(@ic_changed > 0, LAST_INSERT_ID(), NULL)`),
        eventFromRecord("pending", now, changed(id), {
          detail: `JSON_OBJECT('providerRequestId', provider_request_id, 'error', last_error)`,
        }),
        recordIfChanged(id, `, @ic_item AS reconciliationItemId`),
      ]);
      const row = results.at(-1)?.[0] as (IdempotencyRecord & { reconciliationItemId: bigint | number | null }) | undefined;
      if (!row) return null;
      return { ...record(row), reconciliationItemId: row.reconciliationItemId === null ? null : BigInt(row.reconciliationItemId) };
    },
  };
}
