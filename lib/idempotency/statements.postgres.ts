import { paramList } from "../db/params";
import { queryPrepared, type SqlExecutor } from "../db/sql";
import type { IdempotencyRecord } from "../generated/prisma/client";
import { recordColumns } from "./columns";
import type { ProtocolStatements } from "./statements";

const RECORD_COLUMNS = recordColumns(undefined, { response: true });

/**
 * The protocol's PostgreSQL statements: data-modifying CTEs, so a change and its event are one
 * statement, each prepared once per connection (queryPrepared: their texts never vary; parsing
 * and planning them was a quarter of a request's time; bench/fill.ts).
 */
export function postgresProtocolStatements(ex: SqlExecutor): ProtocolStatements {
  return {
    async reserve(r, now) {
      const p = paramList();
      const rows = await queryPrepared<IdempotencyRecord>(
        ex,
        `WITH ins AS (
          INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status,
            resource_type, resource_id, correlation_id, provider, provider_request_id, amount_minor, currency,
            created_at, updated_at, expires_at)
          VALUES (${p.add(r.scope)}, ${p.add(r.operation)}, ${p.add(r.key)}, ${p.add(r.payloadHash)}, 'processing',
            ${p.add(r.resourceType)}, ${p.add(r.resourceId)}, ${p.add(r.correlationId)},
            ${p.add(r.provider)}, ${p.add(r.providerRequestId)}, ${p.add(r.amountMinor)}::bigint, ${p.add(r.currency)},
            ${p.add(now)}::timestamptz, ${p.add(now)}::timestamptz, ${p.add(r.expiresAt)}::timestamptz)
          ON CONFLICT (scope, operation, idempotency_key) DO NOTHING
          RETURNING *
        ), ev AS (
          INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind, payload_hash, occurred_at)
          SELECT id, scope, operation, idempotency_key, 'reserved', payload_hash, ${p.add(now)}::timestamptz FROM ins
        )
        SELECT ${RECORD_COLUMNS} FROM ins`,
        p.values,
      );
      return rows[0] ?? null;
    },

    async answerExisting(k, hash, now) {
      const p = paramList();
      const rows = await queryPrepared<IdempotencyRecord>(
        ex,
        `WITH rec AS (
          SELECT * FROM idempotency_records
          WHERE scope = ${p.add(k.scope)} AND operation = ${p.add(k.operation)} AND idempotency_key = ${p.add(k.key)}
        ), ev AS (
          INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind, payload_hash, response_code, occurred_at, detail)
          SELECT id, scope, operation, idempotency_key,
            CASE WHEN payload_hash <> ${p.add(hash)} THEN 'conflict'
                 WHEN status IN ('completed', 'failed') THEN 'replayed' ELSE 'in_progress' END,
            ${p.add(hash)},
            CASE WHEN payload_hash = ${p.add(hash)} AND status IN ('completed', 'failed') THEN response_code END,
            ${p.add(now)}::timestamptz,
            CASE WHEN payload_hash <> ${p.add(hash)}
                   THEN jsonb_build_object('expectedPayloadHash', payload_hash, 'receivedPayloadHash', ${p.add(hash)}::text)
                 WHEN status NOT IN ('completed', 'failed') THEN jsonb_build_object('status', status) END
          FROM rec
        )
        SELECT ${RECORD_COLUMNS} FROM rec`,
        p.values,
      );
      return rows[0] ?? null;
    },

    async complete(id, c, now) {
      const p = paramList();
      const outbox = JSON.stringify(c.outbox);
      const rows = await queryPrepared<IdempotencyRecord>(
        ex,
        `WITH upd AS (
        UPDATE idempotency_records SET status = 'completed', response_code = ${p.add(c.code)},
          response_headers = ${p.add(JSON.stringify(c.headers))}::jsonb, response_body = ${p.add(c.body)},
          resource_type = COALESCE(${p.add(c.resourceType)}, resource_type),
          resource_id = COALESCE(${p.add(c.resourceId)}, resource_id),
          provider_reference = COALESCE(${p.add(c.providerReference)}, provider_reference),
          last_error = NULL, updated_at = ${p.add(now)}::timestamptz, version = version + 1
        WHERE id = ${p.add(id)} AND status = 'processing'
        RETURNING *
      ), ev AS (
        INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind, payload_hash, response_code, occurred_at)
        SELECT id, scope, operation, idempotency_key, 'completed', payload_hash, response_code, ${p.add(now)}::timestamptz FROM upd
      ), ob AS (
        INSERT INTO outbox_messages (record_id, topic, payload, created_at, next_attempt_at)
        SELECT upd.id, m->>'topic', m->'payload', ${p.add(now)}::timestamptz, ${p.add(now)}::timestamptz
        FROM upd CROSS JOIN jsonb_array_elements(${p.add(outbox)}::jsonb) AS m
      )
      SELECT ${RECORD_COLUMNS} FROM upd`,
        p.values,
      );
      return rows[0] ?? null;
    },

    async fail(id, f, now) {
      const p = paramList();
      const rows = await queryPrepared<IdempotencyRecord>(
        ex,
        `WITH upd AS (
        UPDATE idempotency_records SET status = 'failed', response_code = ${p.add(f.code)},
          response_headers = ${p.add(JSON.stringify(f.headers))}::jsonb, response_body = ${p.add(f.body)},
          last_error = ${p.add(f.error)}, updated_at = ${p.add(now)}::timestamptz, version = version + 1
        WHERE id = ${p.add(id)} AND status = 'processing'
        RETURNING *
      ), ev AS (
        INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind, payload_hash, response_code, occurred_at, detail)
        SELECT id, scope, operation, idempotency_key, 'failed', payload_hash, response_code, ${p.add(now)}::timestamptz,
               jsonb_build_object('error', last_error) FROM upd
      )
      SELECT ${RECORD_COLUMNS} FROM upd`,
        p.values,
      );
      return rows[0] ?? null;
    },

    async markPending(id, t, now) {
      const p = paramList();
      const rows = await queryPrepared<IdempotencyRecord & { reconciliationItemId: bigint | null }>(
        ex,
        `WITH upd AS (
        UPDATE idempotency_records SET status = 'pending', provider = COALESCE(${p.add(t.provider)}, provider),
          provider_request_id = ${p.add(t.providerRequestId)}, last_error = ${p.add(t.error)},
          updated_at = ${p.add(now)}::timestamptz, version = version + 1
        WHERE id = ${p.add(id)} AND status = 'processing' AND COALESCE(${p.add(t.provider)}, provider) IS NOT NULL
        RETURNING *
      ), item AS (
        INSERT INTO reconciliation_items (record_id, provider, provider_request_id, state, next_check_at, last_error, created_at, updated_at)
        SELECT id, provider, provider_request_id, 'open', ${p.add(t.firstCheckAt)}::timestamptz, last_error, ${p.add(now)}::timestamptz, ${p.add(now)}::timestamptz FROM upd
        RETURNING id
      ), ev AS (
        INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind, payload_hash, occurred_at, detail)
        SELECT id, scope, operation, idempotency_key, 'pending', payload_hash, ${p.add(now)}::timestamptz,
               jsonb_build_object('providerRequestId', provider_request_id, 'error', last_error) FROM upd
      )
      SELECT ${RECORD_COLUMNS}, (SELECT id FROM item) AS "reconciliationItemId" FROM upd`,
        p.values,
      );
      return rows[0] ?? null;
    },
  };
}
