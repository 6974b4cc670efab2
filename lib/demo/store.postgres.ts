import type { SqlExecutor } from "../db/sql";
import type { BulkBatchCounts, DemoStore, InFlightRow } from "./store";

/**
 * The demo's statements on PostgreSQL. The bulk batch is set-based (INSERT … SELECT FROM
 * generate_series) and derives every value by hashing (seed, series index) with md5/sha256,
 * never random(): the same row on PostgreSQL and on PGlite alike.
 */
export function postgresDemoStore(ex: SqlExecutor): DemoStore {
  return {
    async insertBulkBatch(b) {
      const [row] = await ex.query<BulkBatchCounts>(batchSql(b.ttlSeconds), [
        b.seed,
        b.from,
        b.to,
        b.now.toISOString(),
        b.days,
        b.eventsPerRecord,
        b.hourTable,
        b.load.first,
        b.load.records,
      ]);
      return row;
    },
    processingSince(since) {
      return ex.query<InFlightRow>(`SELECT id, operation, amount_minor, currency FROM idempotency_records WHERE status = 'processing' AND created_at >= $1`, [
        since,
      ]);
    },
    async dispatchOutbox(rows) {
      const iso = (d: Date | null) => (d === null ? null : d.toISOString());
      await ex.query(
        `UPDATE outbox_messages o
            SET status = f.status, attempts = f.attempts, sent_at = f.sent_at,
                next_attempt_at = COALESCE(f.next_attempt_at, o.next_attempt_at), last_error = f.last_error
           FROM unnest($1::bigint[], $2::text[], $3::text[], $4::int[], $5::timestamptz[], $6::timestamptz[], $7::text[])
                AS f(record_id, topic, status, attempts, sent_at, next_attempt_at, last_error)
          WHERE o.record_id = f.record_id AND o.topic = f.topic AND o.status = 'pending' AND o.attempts = 0`,
        [
          rows.map((r) => r.recordId.toString()),
          rows.map((r) => r.topic),
          rows.map((r) => r.status),
          rows.map((r) => r.attempts),
          rows.map((r) => iso(r.sentAt)),
          rows.map((r) => iso(r.nextAttemptAt)),
          rows.map((r) => r.lastError),
        ],
      );
    },
  };
}

// u(hex, pos): a uniform number in [0,1) from 6 hex digits (24 bits) of a hash.
const u = (h: string, pos: number) => `(('x' || substr(${h}, ${pos}, 6))::bit(24)::int / 16777216.0)`;

/**
 * One batch, in ONE statement (records, their events and the reconciliation items of pending
 * records, via data-modifying CTEs), counting what it wrote. The operations' TTLs are
 * literals in the text; everything else is bound.
 * Parameters: $1 seed, $2 first index, $3 end index (exclusive), $4 now, $5 days,
 * $6 events per record, $7 hour lookup table, $8 the load's first index, $9 its records.
 * h1 hashes the intent (for a double submission: the previous index), h2 the row itself.
 */
const batchSql = (ttlSeconds: Record<string, number>) => `
WITH g AS MATERIALIZED (
  SELECT i, h2,
         -- Odd indexes only, so the first submission (i - 1) is never itself a second one.
         CASE WHEN i % 2 = 1 AND ${u("h2", 13)} < 0.001 THEN i - 1 ELSE i END AS j
    FROM (SELECT i, md5($1::text || ':' || i::text || ':row') AS h2
            FROM generate_series($2::bigint, $3::bigint - 1) AS i) s
), a AS MATERIALIZED (
  SELECT g.*, (j <> i) AS dup, md5($1::text || ':' || j::text) AS h1,
         encode(sha256(convert_to('bulk:' || $1::text || ':' || j::text, 'UTF8')), 'hex') AS ph
    FROM g
), b AS MATERIALIZED (
  SELECT a.*,
    CASE WHEN ${u("h1", 1)} < 0.35 THEN 'tenant:acme'
         WHEN ${u("h1", 1)} < 0.60 THEN 'tenant:globex'
         WHEN ${u("h1", 1)} < 0.78 THEN 'tenant:initech'
         WHEN ${u("h1", 1)} < 0.90 THEN 'tenant:umbrella'
         ELSE 'tenant:hooli' END AS scope,
    CASE WHEN ${u("h1", 7)} < 0.30 THEN 'create_order'
         WHEN ${u("h1", 7)} < 0.60 THEN 'capture_payment'
         WHEN ${u("h1", 7)} < 0.82 THEN 'accept_webhook'
         WHEN ${u("h1", 7)} < 0.94 THEN 'issue_invoice'
         ELSE 'refund_payment' END AS operation,
    -- created_at: a day (skewed towards now: growth), an hour from the daily rhythm, a second.
    -- The day follows the intent's place in the load, oldest first, so ids ascend with time as
    -- writers leave them (a shuffled heap costs index-only scans a visibility-map page per entry).
    (date_trunc('day', $4::timestamptz AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')
      - make_interval(days => floor(power(1 - (greatest(j - $8::bigint, 0) + 0.5) / $9::numeric, 1.15) * $5::int)::int)
      + make_interval(hours => ($7::int[])[1 + floor(${u("h1", 19)} * 1000)::int])
      + make_interval(secs => floor(${u("h1", 25)} * 3600000) / 1000.0) AS t_raw,
    greatest(199, round(exp(6.4 + ${u("ph", 1)} * 3.9) / 100) * 100 - 1)::bigint AS amount,
    ${u("ph", 7)} AS u_alt,
    ${u("h2", 1)} AS u_status,
    ${u("h2", 7)} AS u_lat,
    ${u("h2", 19)} AS u_sec2,
    ${u("h2", 25)} AS u_misc
  FROM a
), c AS MATERIALIZED (
  SELECT b.*,
    CASE WHEN t_raw > $4::timestamptz THEN t_raw - make_interval(days => $5::int) ELSE t_raw END AS t0,
    operation IN ('capture_payment', 'refund_payment', 'accept_webhook') AS uses_provider,
    CASE WHEN dup THEN 'completed'
         WHEN u_status < 0.002 THEN 'processing'
         WHEN u_status < 0.016 AND operation IN ('capture_payment', 'refund_payment') THEN 'pending'
         WHEN u_status < 0.076 THEN 'failed'
         ELSE 'completed' END AS status
  FROM b
), d AS MATERIALIZED (
  SELECT c.*,
    CASE WHEN scope IN ('tenant:acme', 'tenant:initech') OR (scope = 'tenant:hooli' AND u_alt < 0.5) THEN 'mockpay' ELSE 'acmepay' END AS pname,
    CASE scope WHEN 'tenant:acme' THEN 'EUR' WHEN 'tenant:globex' THEN 'USD'
               WHEN 'tenant:initech' THEN CASE WHEN u_alt < 0.15 THEN 'EUR' ELSE 'GBP' END
               WHEN 'tenant:umbrella' THEN CASE WHEN u_alt < 0.30 THEN 'CHF' ELSE 'EUR' END
               ELSE CASE WHEN u_alt < 0.20 THEN 'CAD' ELSE 'USD' END END AS cur,
    CASE operation WHEN 'create_order' THEN 'order' WHEN 'capture_payment' THEN 'payment'
                   WHEN 'accept_webhook' THEN 'provider_event' WHEN 'issue_invoice' THEN 'invoice'
                   ELSE 'refund' END AS rtype,
    CASE operation WHEN 'create_order' THEN 'ord_' WHEN 'capture_payment' THEN 'pay_'
                   WHEN 'accept_webhook' THEN 'evt_' WHEN 'issue_invoice' THEN 'inv_' ELSE 're_' END
      || substr(h2, 3, 16) AS rid,
    -- Stuck rows are at least 2 h old; a double submission comes 20–240 s after the first.
    least($4::timestamptz, CASE
      WHEN dup THEN t0 + make_interval(secs => 20 + floor(u_sec2 * 220))
      WHEN status = 'processing' THEN least(t0, $4::timestamptz - interval '2 hours')
      ELSE t0 END) AS created
  FROM c
), rows AS MATERIALIZED (
  SELECT d.*,
    least($4::timestamptz, CASE status
      WHEN 'processing' THEN created
      WHEN 'pending' THEN created + make_interval(secs => 10 + floor(u_lat * 900) / 1000.0)
      ELSE created + make_interval(secs => (50 + floor(u_lat * 3000)) / 1000.0) END) AS updated,
    CASE WHEN status = 'failed' THEN CASE operation
      WHEN 'capture_payment' THEN 402 WHEN 'accept_webhook' THEN 400 ELSE 422 END
      WHEN status = 'completed' THEN CASE operation WHEN 'accept_webhook' THEN 200 ELSE 201 END END AS code,
    CASE status
      WHEN 'failed' THEN CASE operation
        WHEN 'capture_payment' THEN 'provider ' || pname || ' declined: card_declined'
        WHEN 'refund_payment' THEN 'provider ' || pname || ' refused: charge_already_refunded'
        WHEN 'accept_webhook' THEN 'invalid signature'
        WHEN 'issue_invoice' THEN 'validation failed: missing_tax_id'
        ELSE 'validation failed: out_of_stock' END
      WHEN 'pending' THEN 'timeout after 10000 ms waiting for ' || pname END AS err
  FROM d
), ins AS (
  INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, response_code,
      response_headers, response_body, resource_type, resource_id, correlation_id, provider, provider_request_id,
      provider_reference, amount_minor, currency, last_error, created_at, updated_at, expires_at, version, legal_hold)
  SELECT scope, operation, 'bulk-' || $1::text || '-' || i::text, ph, status, code,
    CASE WHEN code IS NOT NULL THEN '[["Content-Type","application/json"]]'::jsonb END,
    CASE status
      WHEN 'completed' THEN CASE WHEN operation = 'accept_webhook' THEN '{"received":true}'
        ELSE format('{"id":"%s","status":"%s","amount_minor":%s,"currency":"%s"}', rid,
                    CASE operation WHEN 'capture_payment' THEN 'captured' WHEN 'refund_payment' THEN 'succeeded' ELSE 'created' END,
                    amount, cur) END
      WHEN 'failed' THEN format('{"error":"%s"}', err) END,
    rtype,
    CASE WHEN status = 'completed' OR operation = 'accept_webhook' THEN rid END,
    'cor_' || substr(h1, 1, 24),
    CASE WHEN uses_provider THEN pname END,
    CASE WHEN uses_provider AND status <> 'processing'
         THEN CASE pname WHEN 'mockpay' THEN 'mp_req_' ELSE 'acp_rq_' END || substr(h2, 5, 20) END,
    CASE WHEN uses_provider AND status = 'completed'
         THEN CASE pname WHEN 'mockpay' THEN 'mp_ch_' ELSE 'acp_chg_' END || substr(h2, 9, 18) END,
    amount, cur, err, created, updated,
    created + make_interval(secs => CASE operation
      WHEN 'create_order' THEN ${ttlSeconds.create_order} WHEN 'capture_payment' THEN ${ttlSeconds.capture_payment}
      WHEN 'refund_payment' THEN ${ttlSeconds.refund_payment} WHEN 'issue_invoice' THEN ${ttlSeconds.issue_invoice}
      ELSE ${ttlSeconds.accept_webhook} END),
    CASE WHEN status = 'processing' THEN 0 ELSE 1 END,
    u_misc > 0.9998
  FROM rows
  ON CONFLICT (scope, operation, idempotency_key) DO NOTHING
  RETURNING id, scope, operation, idempotency_key, payload_hash, status, response_code, provider,
            provider_request_id, last_error, created_at, updated_at
), x AS (
  -- A per-record 32-bit number that drives its extra events.
  SELECT ins.*, ('x' || substr(md5(idempotency_key), 1, 8))::bit(32)::bigint AS hb FROM ins
), evsrc AS (
  SELECT x.*, n, ((((hb + n * 40503) % 4294967296) * 1103515245) % 4294967296) >> 8 AS r
    FROM x CROSS JOIN generate_series(1, $6::int) AS n
), ev AS (
  INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind, payload_hash, response_code, occurred_at, detail)
  SELECT id, scope, operation, idempotency_key, kind,
         CASE WHEN kind = 'conflict' THEN received ELSE payload_hash END,
         CASE WHEN kind IN ('completed', 'failed', 'replayed') THEN response_code END,
         least($4::timestamptz, CASE
           WHEN n = 1 THEN created_at
           WHEN status = 'processing' THEN created_at + make_interval(secs => (n - 1) * (20 + r % 600))
           WHEN n = 2 THEN updated_at
           ELSE updated_at + make_interval(secs => (n - 2) * (1 + r % 7200)) END),
         CASE kind
           WHEN 'conflict' THEN jsonb_build_object('expectedPayloadHash', payload_hash, 'receivedPayloadHash', received)
           WHEN 'failed' THEN jsonb_build_object('error', last_error)
           WHEN 'pending' THEN jsonb_build_object('providerRequestId', provider_request_id, 'error', last_error)
           WHEN 'in_progress' THEN jsonb_build_object('status', status) END
    FROM (
      SELECT e.*, CASE WHEN kind = 'conflict' THEN md5(payload_hash || ':' || n::text) || md5(n::text || ':' || payload_hash) END AS received
        FROM (SELECT evsrc.*,
                CASE WHEN n = 1 THEN 'reserved'
                     WHEN status = 'processing' THEN 'in_progress'
                     WHEN n = 2 THEN status
                     WHEN status = 'pending' THEN 'in_progress'
                     WHEN r % 100 < 4 THEN 'conflict'
                     ELSE 'replayed' END AS kind
                FROM evsrc) e
    ) k
  RETURNING kind
), rec AS (
  INSERT INTO reconciliation_items (record_id, provider, provider_request_id, state, attempts, last_checked_at,
      next_check_at, last_error, created_at, updated_at)
  SELECT id, provider, provider_request_id, 'open', att,
         CASE WHEN att > 0 THEN last_checked END,
         CASE WHEN att > 0 THEN last_checked + make_interval(mins => (2 ^ att)::int) ELSE updated_at + interval '1 minute' END,
         CASE WHEN att > 0 THEN 'provider status unknown (HTTP 504 from status endpoint)' ELSE last_error END,
         updated_at, coalesce(CASE WHEN att > 0 THEN last_checked END, updated_at)
    FROM (SELECT x.*, (hb % 5)::int AS att,
                 least($4::timestamptz, updated_at + make_interval(mins => 1 + (hb % 5)::int * 7)) AS last_checked
            FROM x WHERE status = 'pending') p
  RETURNING 1
)
SELECT
  (SELECT count(*) FROM ins)::bigint AS records,
  (SELECT count(*) FROM ins WHERE status = 'completed')::bigint AS completed,
  (SELECT count(*) FROM ins WHERE status = 'failed')::bigint AS failed,
  (SELECT count(*) FROM ins WHERE status = 'pending')::bigint AS pending,
  (SELECT count(*) FROM ins WHERE status = 'processing')::bigint AS processing,
  (SELECT count(*) FROM rows WHERE dup)::bigint AS dups,
  (SELECT count(*) FROM ev)::bigint AS events,
  (SELECT count(*) FILTER (WHERE kind = 'reserved') FROM ev)::bigint AS ev_reserved,
  (SELECT count(*) FILTER (WHERE kind = 'completed') FROM ev)::bigint AS ev_completed,
  (SELECT count(*) FILTER (WHERE kind = 'failed') FROM ev)::bigint AS ev_failed,
  (SELECT count(*) FILTER (WHERE kind = 'pending') FROM ev)::bigint AS ev_pending,
  (SELECT count(*) FILTER (WHERE kind = 'replayed') FROM ev)::bigint AS ev_replayed,
  (SELECT count(*) FILTER (WHERE kind = 'conflict') FROM ev)::bigint AS ev_conflict,
  (SELECT count(*) FILTER (WHERE kind = 'in_progress') FROM ev)::bigint AS ev_in_progress,
  (SELECT count(*) FROM rec)::bigint AS items`;
