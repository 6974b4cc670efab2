import { MYSQL } from "../db/dialect";
import { paramList } from "../db/params";
import { execute, utcDateTime, type SqlExecutor } from "../db/sql";
import type { BulkBatch, BulkBatchCounts, DemoStore, InFlightRow } from "./store";

/**
 * The demo's statements on MySQL/MariaDB (ADR 0012).
 *
 * The bulk batch is set-based like PostgreSQL's and derives every value by hashing
 * (seed, series index) with MD5/SHA2 — PostgreSQL's formulas, so the same seed gives the same
 * records, events and items on every MySQL run, and (compared for 5,000 records) the same
 * rows as on PostgreSQL but for their ids; nothing relies on that. MySQL has no
 * generate_series, no data-modifying CTE and no RETURNING, so a batch is several statements
 * on the executor (autocommit, READ COMMITTED: the reads take no locks):
 *   1. the highest record and event ids now (`top`); then for each CHUNK of the batch's range
 *   2. the records (INSERT … SELECT over a cross join of digit tables; a key that exists is
 *   left as it is), 3. the events and 4. the reconciliation items of the records it inserted —
 *   those of its key range with an id above `top` (ids are taken at insert time, so every one
 *   it inserted is above, and every one that existed before is not); 5. the counts of the
 *   batch, read back from the tables by the same rule (no secondary index needed: the primary
 *   keys' ranges and the keys' text, so the bench may defer the secondary indexes). Not one
 *   transaction: a batch killed midway leaves some records without their events (PostgreSQL's
 *   one statement leaves nothing); and two runs of the same seed over the same range at once
 *   could both write a record's events.
 *
 * Values are literals in the text (validated integers, the UTC time): `?` binds in order and
 * the statements use each value many times. The hash levels are materialised (a derived table
 * with a LIMIT is never merged into its outer query), so each MD5 is computed once per row.
 */
export function mysqlDemoStore(ex: SqlExecutor): DemoStore {
  return {
    async insertBulkBatch(b) {
      const [{ top, topEvent }] = await ex.query<{ top: bigint; topEvent: bigint }>(
        `SELECT (SELECT COALESCE(MAX(id), 0) FROM idempotency_records) AS top, (SELECT COALESCE(MAX(id), 0) FROM idempotency_events) AS "topEvent"`,
      );
      let items = 0;
      for (let from = b.from; from < b.to; from += CHUNK) {
        const part = bulkSql({ ...b, from, to: Math.min(b.to, from + CHUNK) });
        await execute(ex, part.records);
        const mine = part.mine(BigInt(top));
        await execute(ex, part.events(mine));
        items += (await execute(ex, part.items(mine))).affectedRows;
      }
      const whole = bulkSql(b);
      const [records] = await ex.query<Record<string, bigint | number>>(whole.recordCounts(whole.mine(BigInt(top))));
      const [events] = await ex.query<Record<string, bigint | number>>(whole.eventCounts(BigInt(top), BigInt(topEvent)));
      return { ...records, ...events, items } as BulkBatchCounts;
    },

    processingSince(since) {
      return ex.query<InFlightRow>(`SELECT id, operation, amount_minor, currency FROM idempotency_records WHERE status = 'processing' AND created_at >= ?`, [
        since,
      ]);
    },

    async dispatchOutbox(rows) {
      if (rows.length === 0) return;
      const iso = (d: Date | null) => (d === null ? null : d.toISOString());
      const p = paramList(MYSQL);
      // The rows as one JSON document, read back as a table (JSON_TABLE: MySQL 8, MariaDB 10.6).
      const doc = p.add(
        JSON.stringify(rows.map((r) => [r.recordId.toString(), r.topic, r.status, r.attempts, iso(r.sentAt), iso(r.nextAttemptAt), r.lastError])),
      );
      await execute(
        ex,
        `UPDATE outbox_messages o
           JOIN JSON_TABLE(${doc}, '$[*]' COLUMNS (
                  record_id BIGINT PATH '$[0]', topic LONGTEXT PATH '$[1]', status VARCHAR(255) PATH '$[2]', attempts INT PATH '$[3]',
                  sent_at VARCHAR(40) PATH '$[4]', next_attempt_at VARCHAR(40) PATH '$[5]', last_error LONGTEXT PATH '$[6]')) f
             ON o.record_id = f.record_id AND o.topic = f.topic COLLATE utf8mb4_bin
            SET o.status = f.status, o.attempts = f.attempts, o.sent_at = ${MYSQL.time("f.sent_at")},
                o.next_attempt_at = COALESCE(${MYSQL.time("f.next_attempt_at")}, o.next_attempt_at), o.last_error = f.last_error
          WHERE o.status = 'pending' AND o.attempts = 0`,
        p.values,
      );
    },
  };
}

/**
 * Rows per statement. An INSERT … SELECT holds the table's AUTO-INC lock to its end (MariaDB's
 * innodb_autoinc_lock_mode 1), and a concurrent batch's insert waiting longer than
 * innodb_lock_wait_timeout fails (error 1467): short statements keep the waits short, and
 * their derived tables fit in memory (tmp_table_size).
 */
const CHUNK = 20_000;

/** An integer spliced into the text: validated, so the text is only digits. */
function int(n: number | bigint): string {
  if (typeof n === "bigint" ? false : !Number.isSafeInteger(n)) throw new Error(`not an integer: ${n}`);
  return String(n);
}

// u(hex, pos): a uniform number in [0,1) from 6 hex digits (24 bits) of a hash (a DOUBLE: exact for 24 bits).
const u = (h: string, pos: number) => `(CONV(SUBSTR(${h}, ${pos}, 6), 16, 10) / 16777216.0)`;

/** `SELECT 0 AS d UNION ALL … 9`: one decimal digit, for a series as a cross join. */
const DIGITS = `(SELECT 0 AS d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4
                 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)`;

/** The integers [from, to) as a derived table with column `i`. */
function series(from: number, to: number): string {
  const n = to - from;
  const width = Math.max(1, Math.ceil(Math.log10(n)));
  const digits = Array.from({ length: width }, (_, k) => `${DIGITS} d${k}`).join(" CROSS JOIN ");
  const sum = Array.from({ length: width }, (_, k) => (k === 0 ? "d0.d" : `d${k}.d * ${10 ** k}`)).join(" + ");
  return `(SELECT ${int(from)} + ${sum} AS i FROM ${digits} WHERE ${sum} < ${int(n)})`;
}

/** The hour table (1000 buckets → UTC hour) as a CASE over the bucket: its runs of equal hours. */
function hourOf(bucket: string, table: number[]): string {
  const runs: string[] = [];
  for (let k = 0; k < table.length; k++) {
    if (k + 1 < table.length && table[k + 1] === table[k]) continue;
    runs.push(`WHEN ${bucket} < ${k + 1} THEN ${int(table[k])}`);
  }
  return `CASE ${runs.join(" ")} ELSE ${int(table[table.length - 1])} END`;
}

/** The statements of one batch (see mysqlDemoStore). */
function bulkSql(b: BulkBatch) {
  const seed = int(b.seed);
  const n = b.to - b.from;
  const now = `CAST('${utcDateTime(b.now)}' AS DATETIME(6))`;
  const days = int(b.days);
  const ttl = b.ttlSeconds;
  const prefix = `bulk-${seed}-`;

  // h2 hashes the row itself; h1 the intent (for a double submission: the previous index). Materialised.
  // Odd indexes only are second submissions, so the first one (i - 1) is never itself a second one.
  const hashes = `(SELECT i, j, h2, (j <> i) AS dup, MD5(CONCAT('${seed}:', j)) AS h1, SHA2(CONCAT('bulk:${seed}:', j), 256) AS ph
      FROM (SELECT i, h2, CASE WHEN i % 2 = 1 AND ${u("h2", 13)} < 0.001 THEN i - 1 ELSE i END AS j
              FROM (SELECT i, MD5(CONCAT('${seed}:', i, ':row')) AS h2 FROM ${series(b.from, b.to)} s LIMIT ${n}) s) a
     LIMIT ${n})`;

  // What each row is: the same decisions as PostgreSQL's, in the same order. Materialised.
  const decided = `(SELECT c.*,
      CASE WHEN scope IN ('tenant:acme', 'tenant:initech') OR (scope = 'tenant:hooli' AND u_alt < 0.5) THEN 'mockpay' ELSE 'acmepay' END AS pname,
      CASE scope WHEN 'tenant:acme' THEN 'EUR' WHEN 'tenant:globex' THEN 'USD'
                 WHEN 'tenant:initech' THEN CASE WHEN u_alt < 0.15 THEN 'EUR' ELSE 'GBP' END
                 WHEN 'tenant:umbrella' THEN CASE WHEN u_alt < 0.30 THEN 'CHF' ELSE 'EUR' END
                 ELSE CASE WHEN u_alt < 0.20 THEN 'CAD' ELSE 'USD' END END AS cur,
      CASE operation WHEN 'create_order' THEN 'order' WHEN 'capture_payment' THEN 'payment'
                     WHEN 'accept_webhook' THEN 'provider_event' WHEN 'issue_invoice' THEN 'invoice' ELSE 'refund' END AS rtype,
      CONCAT(CASE operation WHEN 'create_order' THEN 'ord_' WHEN 'capture_payment' THEN 'pay_'
                            WHEN 'accept_webhook' THEN 'evt_' WHEN 'issue_invoice' THEN 'inv_' ELSE 're_' END, SUBSTR(h2, 3, 16)) AS rid,
      -- Stuck rows are at least 2 h old; a double submission comes 20–240 s after the first.
      LEAST(${now}, CASE
        WHEN dup THEN t0 + INTERVAL (20 + FLOOR(u_sec2 * 220)) SECOND
        WHEN status = 'processing' THEN LEAST(t0, ${now} - INTERVAL 2 HOUR)
        ELSE t0 END) AS created
    FROM (SELECT b.*,
        CASE WHEN t_raw > ${now} THEN t_raw - INTERVAL ${days} DAY ELSE t_raw END AS t0,
        operation IN ('capture_payment', 'refund_payment', 'accept_webhook') AS uses_provider,
        CASE WHEN dup THEN 'completed'
             WHEN u_status < 0.002 THEN 'processing'
             WHEN u_status < 0.016 AND operation IN ('capture_payment', 'refund_payment') THEN 'pending'
             WHEN u_status < 0.076 THEN 'failed'
             ELSE 'completed' END AS status
      FROM (SELECT a.i, a.h1, a.h2, a.ph, a.dup,
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
          -- created_at: a day (skewed towards now: growth), an hour from the daily rhythm, a second;
          -- the day follows the intent's place in the load, oldest first, as PostgreSQL's.
          CAST(DATE(${now}) AS DATETIME(6))
            - INTERVAL FLOOR(POW(1 - (GREATEST(a.j - ${int(b.load.first)}, 0) + 0.5) / ${int(b.load.records)}, 1.15) * ${days}) DAY
            + INTERVAL ${hourOf(`FLOOR(${u("h1", 19)} * 1000)`, b.hourTable)} HOUR
            + INTERVAL FLOOR(${u("h1", 25)} * 3600000) * 1000 MICROSECOND AS t_raw,
          CAST(GREATEST(199, ROUND(EXP(6.4 + ${u("ph", 1)} * 3.9) / 100) * 100 - 1) AS SIGNED) AS amount,
          ${u("ph", 7)} AS u_alt, ${u("h2", 1)} AS u_status, ${u("h2", 7)} AS u_lat, ${u("h2", 19)} AS u_sec2, ${u("h2", 25)} AS u_misc
        FROM ${hashes} a LIMIT ${n}) b) c
    LIMIT ${n})`;

  const rows = `(SELECT d.*,
      LEAST(${now}, CASE status
        WHEN 'processing' THEN created
        WHEN 'pending' THEN created + INTERVAL (10000000 + FLOOR(u_lat * 900) * 1000) MICROSECOND
        ELSE created + INTERVAL (50 + FLOOR(u_lat * 3000)) * 1000 MICROSECOND END) AS updated,
      CASE WHEN status = 'failed' THEN CASE operation WHEN 'capture_payment' THEN 402 WHEN 'accept_webhook' THEN 400 ELSE 422 END
           WHEN status = 'completed' THEN CASE operation WHEN 'accept_webhook' THEN 200 ELSE 201 END END AS code,
      CASE status
        WHEN 'failed' THEN CASE operation
          WHEN 'capture_payment' THEN CONCAT('provider ', pname, ' declined: card_declined')
          WHEN 'refund_payment' THEN CONCAT('provider ', pname, ' refused: charge_already_refunded')
          WHEN 'accept_webhook' THEN 'invalid signature'
          WHEN 'issue_invoice' THEN 'validation failed: missing_tax_id'
          ELSE 'validation failed: out_of_stock' END
        WHEN 'pending' THEN CONCAT('timeout after 10000 ms waiting for ', pname) END AS err
    FROM ${decided} d)`;

  const records = `
    INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, response_code,
        response_headers, response_body, resource_type, resource_id, correlation_id, provider, provider_request_id,
        provider_reference, amount_minor, currency, last_error, created_at, updated_at, expires_at, version, legal_hold)
    SELECT scope, operation, CONCAT('${prefix}', i), ph, status, code,
      CASE WHEN code IS NOT NULL THEN '[["Content-Type","application/json"]]' END,
      CASE status
        WHEN 'completed' THEN CASE WHEN operation = 'accept_webhook' THEN '{"received":true}'
          ELSE CONCAT('{"id":"', rid, '","status":"',
                      CASE operation WHEN 'capture_payment' THEN 'captured' WHEN 'refund_payment' THEN 'succeeded' ELSE 'created' END,
                      '","amount_minor":', amount, ',"currency":"', cur, '"}') END
        WHEN 'failed' THEN CONCAT('{"error":"', err, '"}') END,
      rtype,
      CASE WHEN status = 'completed' OR operation = 'accept_webhook' THEN rid END,
      CONCAT('cor_', SUBSTR(h1, 1, 24)),
      CASE WHEN uses_provider THEN pname END,
      CASE WHEN uses_provider AND status <> 'processing'
           THEN CONCAT(CASE pname WHEN 'mockpay' THEN 'mp_req_' ELSE 'acp_rq_' END, SUBSTR(h2, 5, 20)) END,
      CASE WHEN uses_provider AND status = 'completed'
           THEN CONCAT(CASE pname WHEN 'mockpay' THEN 'mp_ch_' ELSE 'acp_chg_' END, SUBSTR(h2, 9, 18)) END,
      amount, cur, err, created, updated,
      created + INTERVAL (CASE operation
        WHEN 'create_order' THEN ${int(ttl.create_order)} WHEN 'capture_payment' THEN ${int(ttl.capture_payment)}
        WHEN 'refund_payment' THEN ${int(ttl.refund_payment)} WHEN 'issue_invoice' THEN ${int(ttl.issue_invoice)}
        ELSE ${int(ttl.accept_webhook)} END) SECOND,
      CASE WHEN status = 'processing' THEN 0 ELSE 1 END,
      u_misc > 0.9998
    FROM ${rows} x
    ORDER BY i
    ON DUPLICATE KEY UPDATE idempotency_records.id = idempotency_records.id`;

  /** The batch's key range, on a table's idempotency_key column (digits only after the prefix: the CAST never warns). */
  const inRange = (key: string) => `${key} LIKE '${prefix}%'
      AND CASE WHEN SUBSTRING(${key}, ${prefix.length + 1}) REGEXP '^[0-9]{1,15}$' THEN CAST(SUBSTRING(${key}, ${prefix.length + 1}) AS UNSIGNED) END
          BETWEEN ${int(b.from)} AND ${int(b.to - 1)}`;
  /** The records this batch inserted: in its key range and above the highest id before it. */
  const mine = (top: bigint) => `r.id > ${int(top)} AND ${inRange("r.idempotency_key")}`;
  // A per-record 32-bit number that drives its extra events. Materialised.
  const newRecords = (where: string) => `(SELECT r.id, r.scope, r.operation, r.idempotency_key, r.payload_hash, r.status, r.response_code,
        r.provider, r.provider_request_id, r.last_error, r.created_at, r.updated_at,
        CAST(CONV(SUBSTR(MD5(r.idempotency_key), 1, 8), 16, 10) AS UNSIGNED) AS hb
      FROM idempotency_records r WHERE ${where} LIMIT ${n})`;
  const perRecord = Array.from({ length: b.eventsPerRecord }, (_, k) => (k === 0 ? "SELECT 1 AS n" : `SELECT ${k + 1}`)).join(" UNION ALL ");

  const events = (where: string) => `
    INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind, payload_hash, response_code, occurred_at, detail)
    SELECT id, scope, operation, idempotency_key, kind,
           CASE WHEN kind = 'conflict' THEN received ELSE payload_hash END,
           CASE WHEN kind IN ('completed', 'failed', 'replayed') THEN response_code END,
           LEAST(${now}, CASE
             WHEN n = 1 THEN created_at
             WHEN status = 'processing' THEN created_at + INTERVAL (n - 1) * (20 + r % 600) SECOND
             WHEN n = 2 THEN updated_at
             ELSE updated_at + INTERVAL (n - 2) * (1 + r % 7200) SECOND END),
           CASE kind
             WHEN 'conflict' THEN JSON_OBJECT('expectedPayloadHash', payload_hash, 'receivedPayloadHash', received)
             WHEN 'failed' THEN JSON_OBJECT('error', last_error)
             -- Keys in jsonb's order (shorter first), so the text is PostgreSQL's too.
             WHEN 'pending' THEN JSON_OBJECT('error', last_error, 'providerRequestId', provider_request_id)
             WHEN 'in_progress' THEN JSON_OBJECT('status', status) END
      FROM (SELECT k.*, CASE WHEN kind = 'conflict' THEN CONCAT(MD5(CONCAT(payload_hash, ':', n)), MD5(CONCAT(n, ':', payload_hash))) END AS received
              FROM (SELECT v.*,
                      CASE WHEN n = 1 THEN 'reserved'
                           WHEN status = 'processing' THEN 'in_progress'
                           WHEN n = 2 THEN status
                           WHEN status = 'pending' THEN 'in_progress'
                           WHEN r % 100 < 4 THEN 'conflict'
                           ELSE 'replayed' END AS kind
                      FROM (SELECT x.*, k.n, ((((hb + k.n * 40503) % 4294967296) * 1103515245) % 4294967296) >> 8 AS r
                              FROM ${newRecords(where)} x CROSS JOIN (${perRecord}) k) v) k) ev`;

  const items = (where: string) => `
    INSERT INTO reconciliation_items (record_id, provider, provider_request_id, state, attempts, last_checked_at,
        next_check_at, last_error, created_at, updated_at)
    SELECT id, provider, provider_request_id, 'open', att,
           CASE WHEN att > 0 THEN last_checked END,
           CASE WHEN att > 0 THEN last_checked + INTERVAL POW(2, att) MINUTE ELSE updated_at + INTERVAL 1 MINUTE END,
           CASE WHEN att > 0 THEN 'provider status unknown (HTTP 504 from status endpoint)' ELSE last_error END,
           updated_at, COALESCE(CASE WHEN att > 0 THEN last_checked END, updated_at)
      FROM (SELECT x.*, CAST(hb % 5 AS SIGNED) AS att,
                   LEAST(${now}, x.updated_at + INTERVAL (1 + (hb % 5) * 7) MINUTE) AS last_checked
              FROM ${newRecords(`${where} AND r.status = 'pending'`)} x) p
     ORDER BY id`;

  const count = (cond: string) => `CAST(COALESCE(SUM(${cond}), 0) AS SIGNED)`;
  const recordCounts = (where: string) => `
    SELECT COUNT(*) AS records, ${count("r.status = 'completed'")} AS completed, ${count("r.status = 'failed'")} AS failed,
           ${count("r.status = 'pending'")} AS pending, ${count("r.status = 'processing'")} AS processing,
           (SELECT COUNT(*) FROM (SELECT i, MD5(CONCAT('${seed}:', i, ':row')) AS h2 FROM ${series(b.from, b.to)} s LIMIT ${n}) g
             WHERE i % 2 = 1 AND ${u("h2", 13)} < 0.001) AS dups
      FROM idempotency_records r WHERE ${where}`;
  const eventCounts = (top: bigint, topEvent: bigint) => `
    SELECT COUNT(*) AS events, ${count("e.kind = 'reserved'")} AS ev_reserved, ${count("e.kind = 'completed'")} AS ev_completed,
           ${count("e.kind = 'failed'")} AS ev_failed, ${count("e.kind = 'pending'")} AS ev_pending,
           ${count("e.kind = 'replayed'")} AS ev_replayed, ${count("e.kind = 'conflict'")} AS ev_conflict,
           ${count("e.kind = 'in_progress'")} AS ev_in_progress
      FROM idempotency_events e WHERE e.id > ${int(topEvent)} AND e.record_id > ${int(top)} AND ${inRange("e.idempotency_key")}`;

  return { records, mine, events, items, recordCounts, eventCounts };
}
