import type { SqlExecutor } from "../db/sql";

/**
 * Volume data for the shared tables, generated set-based in SQL (INSERT … SELECT
 * FROM generate_series) so millions of rows take seconds to minutes, not hours.
 *
 * Every value is derived by hashing (seed, series index) with md5/sha256, never
 * random(): the same seed and index always give the same row, on Postgres and on
 * PGlite alike. Keys are `bulk-<seed>-<index>`, so they never collide with the demo
 * traffic's keys (UUIDs and provider event ids) and a second run with the same
 * seed inserts nothing (ON CONFLICT DO NOTHING; pass `startIndex` to add more).
 *
 * What a batch writes, in ONE statement (records, their events and the
 * reconciliation items of pending records, via data-modifying CTEs):
 * - records: ~93.5 % completed, ~6 % failed, ~0.5 % pending (payments/refunds, each
 *   with an open reconciliation item), ~0.2 % stuck in processing (updated_at at
 *   least 2 h old); TTL per operation, so many are expired; ~0.05 % are a second
 *   submission of the previous index's purchase under another key, 20–240 s later
 *   (same scope, operation, payload hash and amount: a double charge);
 * - exactly `eventsPerRecord` events per record: reserved, then the outcome
 *   (completed | failed | pending; in_progress for processing), then replayed /
 *   conflict (with expected and received hashes in `detail`) for finished records
 *   and in_progress rejections for unfinished ones.
 */

/** Relative traffic by UTC hour of day: quiet nights, a lunch peak and an evening peak. */
export const HOURLY_WEIGHTS = [
  0.25, 0.18, 0.12, 0.1, 0.1, 0.14, 0.3, 0.5, 0.7, 0.85, 0.95, 1.0, 1.0, 0.95, 0.9, 0.85, 0.85, 0.9, 0.95, 1.0, 0.95, 0.8, 0.6,
  0.4,
];

/** How long each operation's record protects its intent (seconds). */
export const TTL_SECONDS: Record<string, number> = {
  create_order: 86400, // 24 h
  capture_payment: 30 * 86400, // 30 days
  refund_payment: 14 * 86400, // 14 days
  issue_invoice: 7 * 86400, // 7 days
  accept_webhook: 3 * 86400, // 3 days
};

export interface BulkProgress {
  batch: number;
  batches: number;
  /** Cumulative totals so far. */
  records: number;
  events: number;
  elapsedMs: number;
}

export interface BulkOptions {
  records: number;
  /** Events per record, exactly (default 3; at least 1). */
  eventsPerRecord?: number;
  seed?: number;
  /** Spread created_at over the last `days` days (default 30). */
  days?: number;
  /** Records per statement (default 100 000). */
  batchSize?: number;
  /** First series index (default 0): lets a second run with the same seed add more rows. */
  startIndex?: number;
  now?: Date;
  /** Batches running at once on a pooled executor (default 1). */
  concurrency?: number;
  onProgress?: (p: BulkProgress) => void;
}

export interface BulkResult {
  seed: number;
  requested: number;
  records: number;
  /** Indexes whose key already existed (a re-run): nothing written for them. */
  skipped: number;
  events: number;
  reconciliationItems: number;
  byStatus: { completed: number; failed: number; pending: number; processing: number };
  eventsByKind: { reserved: number; completed: number; failed: number; pending: number; replayed: number; conflict: number; in_progress: number };
  doubleSubmits: number;
  elapsedMs: number;
  recordsPerSecond: number;
  eventsPerSecond: number;
}

/** 1000 buckets → UTC hour, distributed like HOURLY_WEIGHTS (the inverse CDF as a lookup table). */
function hourTable(): number[] {
  const total = HOURLY_WEIGHTS.reduce((a, b) => a + b, 0);
  const table: number[] = [];
  let cum = 0;
  let h = 0;
  for (let k = 0; k < 1000; k++) {
    const target = ((k + 0.5) / 1000) * total;
    while (cum + HOURLY_WEIGHTS[h] < target && h < 23) cum += HOURLY_WEIGHTS[h++];
    table.push(h);
  }
  return table;
}

// u(hex, pos): a uniform number in [0,1) from 6 hex digits (24 bits) of a hash.
const u = (h: string, pos: number) => `(('x' || substr(${h}, ${pos}, 6))::bit(24)::int / 16777216.0)`;

/*
 * Parameters: $1 seed, $2 first index, $3 end index (exclusive), $4 now, $5 days,
 * $6 events per record, $7 hour lookup table.
 * h1 hashes the intent (for a double submission: the previous index), h2 the row itself.
 */
const BATCH_SQL = `
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
    (date_trunc('day', $4::timestamptz AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')
      - make_interval(days => floor(power(${u("h1", 13)}, 1.15) * $5::int)::int)
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
      WHEN 'create_order' THEN ${TTL_SECONDS.create_order} WHEN 'capture_payment' THEN ${TTL_SECONDS.capture_payment}
      WHEN 'refund_payment' THEN ${TTL_SECONDS.refund_payment} WHEN 'issue_invoice' THEN ${TTL_SECONDS.issue_invoice}
      ELSE ${TTL_SECONDS.accept_webhook} END),
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

type BatchRow = Record<
  | "records"
  | "completed"
  | "failed"
  | "pending"
  | "processing"
  | "dups"
  | "events"
  | "ev_reserved"
  | "ev_completed"
  | "ev_failed"
  | "ev_pending"
  | "ev_replayed"
  | "ev_conflict"
  | "ev_in_progress"
  | "items",
  bigint | number | string
>;

export async function bulkGenerate(sql: SqlExecutor, opts: BulkOptions): Promise<BulkResult> {
  const started = performance.now();
  const records = opts.records;
  const seed = opts.seed ?? 1;
  const days = opts.days ?? 30;
  const perRecord = opts.eventsPerRecord ?? 3;
  const batchSize = opts.batchSize ?? 100_000;
  const startIndex = opts.startIndex ?? 0;
  const now = opts.now ?? new Date();
  const concurrency = Math.max(1, opts.concurrency ?? 1);
  if (!(Number.isInteger(records) && records >= 0)) throw new Error("records must be a non-negative integer");
  if (!(Number.isInteger(perRecord) && perRecord >= 1 && perRecord <= 100)) throw new Error("eventsPerRecord must be an integer in 1..100");
  if (!(Number.isInteger(batchSize) && batchSize >= 1)) throw new Error("batchSize must be a positive integer");
  if (!(Number.isInteger(days) && days >= 1 && days <= 3650)) throw new Error("days must be an integer in 1..3650");
  if (!Number.isInteger(seed) || !(Number.isInteger(startIndex) && startIndex >= 0)) throw new Error("seed and startIndex must be integers");

  const result: BulkResult = {
    seed,
    requested: records,
    records: 0,
    skipped: 0,
    events: 0,
    reconciliationItems: 0,
    byStatus: { completed: 0, failed: 0, pending: 0, processing: 0 },
    eventsByKind: { reserved: 0, completed: 0, failed: 0, pending: 0, replayed: 0, conflict: 0, in_progress: 0 },
    doubleSubmits: 0,
    elapsedMs: 0,
    recordsPerSecond: 0,
    eventsPerSecond: 0,
  };
  const hours = hourTable();
  const batches = Math.ceil(records / batchSize);
  let nextBatch = 0;
  let done = 0;

  const runBatch = async (b: number) => {
    const from = startIndex + b * batchSize;
    const to = Math.min(startIndex + records, from + batchSize);
    const [row] = await sql.query<BatchRow>(BATCH_SQL, [seed, from, to, now.toISOString(), days, perRecord, hours]);
    const n = (k: keyof BatchRow) => Number(row[k]);
    result.records += n("records");
    result.skipped += to - from - n("records");
    result.byStatus.completed += n("completed");
    result.byStatus.failed += n("failed");
    result.byStatus.pending += n("pending");
    result.byStatus.processing += n("processing");
    result.events += n("events");
    result.eventsByKind.reserved += n("ev_reserved");
    result.eventsByKind.completed += n("ev_completed");
    result.eventsByKind.failed += n("ev_failed");
    result.eventsByKind.pending += n("ev_pending");
    result.eventsByKind.replayed += n("ev_replayed");
    result.eventsByKind.conflict += n("ev_conflict");
    result.eventsByKind.in_progress += n("ev_in_progress");
    result.reconciliationItems += n("items");
    if (n("records") === to - from) result.doubleSubmits += n("dups");
    opts.onProgress?.({ batch: ++done, batches, records: result.records, events: result.events, elapsedMs: Math.round(performance.now() - started) });
  };

  await Promise.all(
    Array.from({ length: Math.min(concurrency, batches) }, async () => {
      while (nextBatch < batches) await runBatch(nextBatch++);
    }),
  );

  result.elapsedMs = Math.round(performance.now() - started);
  const secs = Math.max(result.elapsedMs, 1) / 1000;
  result.recordsPerSecond = Math.round(result.records / secs);
  result.eventsPerSecond = Math.round(result.events / secs);
  return result;
}
