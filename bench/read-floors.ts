/**
 * The floors bench:read measures the console against (bench/read-side.ts): the same numbers by
 * hand-written SQL straight from the shared tables, in each dialect's spelling, and each
 * dialect's way of saying what a statement read (PostgreSQL's EXPLAIN ANALYZE, MariaDB's
 * ANALYZE FORMAT=JSON). The lib side is the console's own code, the same on both databases.
 */
import { byDialect, MYSQL, POSTGRES, type Dialect, type HasDialect } from "@/lib/db/dialect";
import { Params, type Statement } from "@/lib/db/params";
import type { SqlExecutor } from "@/lib/db/sql";
import { OPEN_RECONCILIATION_STATES } from "@/lib/kernel/vocabulary";
import type { SearchInput } from "@/lib/records/search";
import type { OverviewInput } from "@/lib/stats/overview";
import { bin } from "@/lib/stats/rollup-store.mysql";
import { fmt } from "./common";

export interface ScanSummary {
  ms: number;
  scans: string;
  rowsRead: number;
}

export interface RawOverview {
  events: { operation: string; kind: string; n: bigint | number }[];
  rec: Record<"processing" | "pending" | "completed" | "failed" | "stuck" | "expired" | "expiring", bigint | number>;
}

export type SearchCase = [label: string, input: SearchInput, sql: string, params: unknown[]];

export interface ReadFloors {
  dialect: Dialect;
  /** The overview's event and record numbers, computed directly (no rollups, one scan each). */
  overview(s: SqlExecutor, input: OverviewInput, now: Date, stepSeconds: number, stuckSeconds: number): Promise<RawOverview>;
  /** One statement, run and measured: its time, its scans and the rows they read. */
  explain(s: SqlExecutor, q: Statement): Promise<ScanSummary>;
  /** `fn` with index scans disabled (PostgreSQL), or null where a session cannot turn them off (MySQL). */
  withoutIndexes: (<T>(s: SqlExecutor, fn: () => Promise<T>) => Promise<T>) | null;
  /** The plain GROUP BYs the record-side counts are compared with. */
  recordCounts(now: Date): [label: string, q: Statement][];
  /** A record in the middle of the table with a provider reference (the search cases' sample). */
  sample(mid: bigint): Statement;
  search(sample: { key: string; scope: string; ref: string | null }): SearchCase[];
  /** The queue's first page (51 records) as the screen shows it: each with its newest open reconciliation item. */
  queuePage(s: SqlExecutor, kind: "stuck" | "all", stuckSeconds: number): Promise<unknown>;
  /** The queue's tab counts: stuck, pending, open items, other records with open items, oldest pending and stuck. */
  queueCounts(s: SqlExecutor, stuckSeconds: number): Promise<unknown>;
  metrics(s: SqlExecutor): Promise<unknown>;
  /**
   * The Expiry page's numbers by hand: records expiring per hour of the next 24 h and per day of
   * the next 30 days, expired ones by operation and status (with legal holds, open items, the
   * oldest) — three statements at once on `pool`, as the page runs its own.
   */
  expiry(pool: SqlExecutor): Promise<unknown>;
  /** `n` new events spread over the last minute (the refresher's steady-state cost). */
  freshEvents(n: number): Statement;
  /** Rollup rows per tier. */
  /** Per grain: the rollup rows (per scope) and the rows of the totals over every scope (ADR 0019). */
  tiers: string;
  /** 1 when the records table has a row (count(*) as a number in both dialects). */
  anyRecord: string;
}

const SEARCH_COLUMNS = `id, scope, operation, idempotency_key, status, provider_reference, created_at, updated_at, expires_at`;
const NEWEST = `ORDER BY created_at DESC, id DESC LIMIT 51`;

// ---------------------------------------------------------------------------
// PostgreSQL

interface PgPlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Index Name"?: string;
  "Actual Rows": number;
  "Actual Loops": number;
  Plans?: PgPlanNode[];
}

const postgres: ReadFloors = {
  dialect: POSTGRES,
  async overview(s, input, now, stepSeconds, stuckSeconds) {
    const params = [input.from, input.to, input.operation ?? null, input.scope ?? null];
    const f = (a: string) => `($3::text IS NULL OR ${a}.operation = $3) AND ($4::text IS NULL OR ${a}.scope = $4)`;
    const events = await s.query<RawOverview["events"][number]>(
      `SELECT operation, kind, count(*)::bigint AS n FROM (
         SELECT date_bin(make_interval(secs => $5), occurred_at, timestamptz '1970-01-01 00:00:00+00') AS b, operation, kind
           FROM idempotency_events e WHERE occurred_at >= $1 AND occurred_at < $2 AND ${f("e")}) x
        GROUP BY 1, 2`,
      [...params, stepSeconds],
    );
    const [rec] = await s.query<RawOverview["rec"]>(
      `SELECT count(*) FILTER (WHERE status = 'processing')::bigint AS processing,
              count(*) FILTER (WHERE status = 'pending')::bigint AS pending,
              count(*) FILTER (WHERE status = 'completed')::bigint AS completed,
              count(*) FILTER (WHERE status = 'failed')::bigint AS failed,
              count(*) FILTER (WHERE status = 'processing' AND updated_at < $1::timestamptz - make_interval(secs => $2))::bigint AS stuck,
              count(*) FILTER (WHERE expires_at < $1)::bigint AS expired,
              count(*) FILTER (WHERE expires_at >= $1 AND expires_at < $1::timestamptz + interval '24 hours')::bigint AS expiring
         FROM idempotency_records r WHERE ($3::text IS NULL OR r.operation = $3) AND ($4::text IS NULL OR r.scope = $4)`,
      [now, stuckSeconds, input.operation ?? null, input.scope ?? null],
    );
    return { events, rec };
  },
  async explain(s, q) {
    const [row] = await s.query<{ "QUERY PLAN": { Plan: PgPlanNode; "Execution Time": number }[] }>(
      `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${q.text}`,
      q.values,
    );
    const plan = row["QUERY PLAN"][0];
    const scans = new Map<string, number>();
    let rowsRead = 0;
    const walk = (n: PgPlanNode) => {
      if (n["Node Type"].includes("Scan") && (n["Relation Name"] || n["Index Name"])) {
        const name = `${n["Node Type"].replace(" Scan", "")}:${n["Index Name"] ?? n["Relation Name"]}`;
        const rows = n["Actual Rows"] * n["Actual Loops"];
        scans.set(name, (scans.get(name) ?? 0) + rows);
        // A bitmap index scan feeds its heap scan: count the rows once.
        if (!n["Node Type"].startsWith("Bitmap Index")) rowsRead += rows;
      }
      n.Plans?.forEach(walk);
    };
    walk(plan.Plan);
    return { ms: plan["Execution Time"], scans: describeScans(scans), rowsRead };
  },
  async withoutIndexes(s, fn) {
    await s.exec("BEGIN; SET LOCAL enable_indexscan = off; SET LOCAL enable_indexonlyscan = off; SET LOCAL enable_bitmapscan = off;");
    try {
      return await fn();
    } finally {
      await s.exec("ROLLBACK");
    }
  },
  recordCounts(now) {
    return [
      ["by status: GROUP BY status (whole status index)", plain(`SELECT status, count(*) FROM idempotency_records GROUP BY status`)],
      [
        "by status, operation=capture_payment: GROUP BY",
        plain(`SELECT status, count(*) FROM idempotency_records WHERE operation = 'capture_payment' GROUP BY status`),
      ],
      [
        "expired not purged: GROUP BY operation",
        { text: `SELECT operation, count(*) FROM idempotency_records WHERE expires_at < $1 GROUP BY operation`, values: [now] },
      ],
      [
        "7-day forecast: GROUP BY day",
        {
          text: `SELECT floor(extract(epoch FROM expires_at - $1) / 86400), count(*) FROM idempotency_records WHERE expires_at >= $1 AND expires_at < $1::timestamptz + interval '7 days' GROUP BY 1`,
          values: [now],
        },
      ],
    ];
  },
  sample(mid) {
    return {
      text: `SELECT idempotency_key AS key, scope, provider_reference AS ref FROM idempotency_records
              WHERE id >= $1 AND provider_reference IS NOT NULL ORDER BY id LIMIT 1`,
      values: [mid],
    };
  },
  search(sample) {
    const prefix = (sample.ref ?? "x").slice(0, 8);
    return [
      ["key, exact", { q: sample.key, field: "key" }, `SELECT ${SEARCH_COLUMNS} FROM idempotency_records WHERE idempotency_key = $1 ${NEWEST}`, [sample.key]],
      [
        "any of the six fields, exact",
        { q: sample.key },
        `SELECT ${SEARCH_COLUMNS} FROM idempotency_records WHERE idempotency_key = $1 OR scope = $1 OR provider_reference = $1 OR provider_request_id = $1
           OR correlation_id = $1 OR resource_id = $1 ${NEWEST}`,
        [sample.key],
      ],
      [
        "provider reference, prefix",
        { q: prefix, field: "provider_reference", match: "prefix" },
        `SELECT ${SEARCH_COLUMNS} FROM idempotency_records WHERE provider_reference LIKE $1 || '%' ${NEWEST}`,
        [prefix],
      ],
      [
        "scope, exact (newest first)",
        { q: sample.scope, field: "scope" },
        `SELECT ${SEARCH_COLUMNS} FROM idempotency_records WHERE scope = $1 ${NEWEST}`,
        [sample.scope],
      ],
      ["newest records, status=pending", { status: "pending" }, `SELECT ${SEARCH_COLUMNS} FROM idempotency_records WHERE status = 'pending' ${NEWEST}`, []],
    ];
  },
  queuePage(s, kind, stuckSeconds) {
    const stuck = `SELECT * FROM idempotency_records WHERE status = 'processing' AND updated_at < now() - make_interval(secs => $1)`;
    return s.query(
      `SELECT q.*, ri.id AS ri_id, ri.state AS ri_state, ri.attempts AS ri_attempts, ri.next_check_at AS ri_next_check_at
         FROM (${kind === "stuck" ? `${stuck} ORDER BY updated_at, id LIMIT 51` : queueUnion(stuck)}) q
         LEFT JOIN LATERAL (SELECT * FROM reconciliation_items i WHERE i.record_id = q.id AND i.state IN (${OPEN_STATES})
                             ORDER BY i.created_at DESC, i.id DESC LIMIT 1) ri ON TRUE
        ORDER BY q.updated_at, q.id`,
      [stuckSeconds],
    );
  },
  queueCounts(s, stuckSeconds) {
    const stuck = `status = 'processing' AND updated_at < now() - make_interval(secs => $1)`;
    return s.query(queueCountsText(stuck), [stuckSeconds]);
  },
  expiry(pool) {
    const ahead = (secs: number, span: string) =>
      pool.query(`SELECT floor(extract(epoch FROM expires_at - now()) / ${secs})::int AS i, count(*) AS n FROM idempotency_records
                   WHERE expires_at >= now() AND expires_at < now() + interval '${span}' GROUP BY 1`);
    return Promise.all([
      ahead(3600, "24 hours"),
      ahead(86400, "30 days"),
      pool.query(`SELECT operation, status, count(*) AS n, count(*) FILTER (WHERE legal_hold) AS held,
                         count(*) FILTER (WHERE EXISTS (SELECT 1 FROM reconciliation_items i WHERE i.record_id = r.id AND i.state IN (${OPEN_STATES}))) AS open,
                         min(expires_at) AS oldest
                    FROM idempotency_records r WHERE expires_at < now() GROUP BY 1, 2`),
    ]);
  },
  metrics(s) {
    return s.query(
      `SELECT (SELECT json_agg(x) FROM (SELECT operation, kind, count(*) FROM idempotency_events GROUP BY 1, 2) x) AS events,
              (SELECT json_agg(y) FROM (SELECT operation, count(*) FILTER (WHERE status = 'pending') AS pending,
                      count(*) FILTER (WHERE expires_at < now()) AS expired FROM idempotency_records GROUP BY 1) y) AS records`,
    );
  },
  freshEvents(n) {
    return {
      text: `INSERT INTO idempotency_events (scope, operation, idempotency_key, kind, occurred_at)
             SELECT 'tenant:' || (ARRAY['acme', 'globex', 'initech', 'umbrella', 'hooli'])[1 + i % 5],
                    (ARRAY['create_order', 'capture_payment', 'accept_webhook', 'issue_invoice', 'refund_payment'])[1 + (i / 5) % 5],
                    'bench-refresh-' || $1::int || '-' || i, (ARRAY['reserved', 'completed', 'replayed', 'conflict'])[1 + i % 4],
                    now() - make_interval(secs => 60 * i::float8 / $1::int)
               FROM generate_series(1, $1::int) AS i`,
      values: [n],
    };
  },
  tiers: `SELECT 60 AS grain, (SELECT count(*) FROM event_rollups)::bigint AS rows, count(*)::bigint AS totals FROM event_rollup_totals WHERE grain_seconds = 60
          UNION ALL SELECT t.grain_seconds, count(*)::bigint, (SELECT count(*) FROM event_rollup_totals s WHERE s.grain_seconds = t.grain_seconds)::bigint
            FROM event_rollup_tiers t GROUP BY 1 ORDER BY 1`,
  anyRecord: `SELECT count(*)::bigint AS n FROM (SELECT 1 FROM idempotency_records LIMIT 1) x`,
};

// ---------------------------------------------------------------------------
// MySQL / MariaDB

/** A table access in MariaDB's ANALYZE FORMAT=JSON: r_rows is per loop. */
interface MariaTable {
  table_name?: string;
  access_type?: string;
  key?: string;
  r_loops?: number;
  r_rows?: number;
}

/** Digits 0–9 as a derived table (MariaDB has no generate_series; its sequence engine may be off). */
const DIGITS = `(SELECT 0 AS d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4
  UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)`;

const mysql: ReadFloors = {
  dialect: MYSQL,
  async overview(s, input, now, stepSeconds, stuckSeconds) {
    const e = new Params(MYSQL);
    const range = `occurred_at >= ${e.time(input.from)} AND occurred_at < ${e.time(input.to)}`;
    const eventFilters = `${input.operation ? ` AND e.operation = ${e.add(input.operation)}` : ""}${input.scope ? ` AND e.scope = ${e.add(input.scope)}` : ""}`;
    const events = await s.query<RawOverview["events"][number]>(
      `SELECT operation, kind, COUNT(*) AS n FROM (
         SELECT ${bin("occurred_at", stepSeconds)} AS b, operation, kind FROM idempotency_events e WHERE ${range}${eventFilters}) x
        GROUP BY operation, kind`,
      e.values,
    );
    const r = new Params(MYSQL);
    const at = () => r.time(now);
    const select = `SELECT COUNT(CASE WHEN status = 'processing' THEN 1 END) AS processing,
              COUNT(CASE WHEN status = 'pending' THEN 1 END) AS pending,
              COUNT(CASE WHEN status = 'completed' THEN 1 END) AS completed,
              COUNT(CASE WHEN status = 'failed' THEN 1 END) AS failed,
              COUNT(CASE WHEN status = 'processing' AND updated_at < ${at()} - INTERVAL ${Math.floor(stuckSeconds)} SECOND THEN 1 END) AS stuck,
              COUNT(CASE WHEN expires_at < ${at()} THEN 1 END) AS expired,
              COUNT(CASE WHEN expires_at >= ${at()} AND expires_at < ${at()} + INTERVAL 24 HOUR THEN 1 END) AS expiring`;
    const recordFilters = [input.operation ? `r.operation = ${r.add(input.operation)}` : null, input.scope ? `r.scope = ${r.add(input.scope)}` : null]
      .filter(Boolean)
      .join(" AND ");
    const [rec] = await s.query<RawOverview["rec"]>(`${select} FROM idempotency_records r${recordFilters ? ` WHERE ${recordFilters}` : ""}`, r.values);
    return { events, rec };
  },
  async explain(s, q) {
    // ANALYZE runs the statement and reports what each table access read (MariaDB; MySQL 8 spells
    // it EXPLAIN ANALYZE, as a text tree).
    const started = performance.now();
    const [row] = await s.query<Record<string, string>>(`ANALYZE FORMAT=JSON ${q.text}`, q.values);
    const wall = performance.now() - started;
    const doc = JSON.parse(jsonWithUnreadableStrings(Object.values(row)[0])) as { query_block?: { r_total_time_ms?: number } };
    const scans = new Map<string, number>();
    let rowsRead = 0;
    const walk = (node: unknown) => {
      if (Array.isArray(node)) return node.forEach(walk);
      if (!node || typeof node !== "object") return;
      const t = node as MariaTable;
      if (typeof t.table_name === "string" && typeof t.r_rows === "number" && !t.table_name.startsWith("<")) {
        const rows = t.r_rows * (t.r_loops ?? 1);
        const name = `${t.access_type ?? "?"}:${t.key ?? t.table_name}`;
        scans.set(name, (scans.get(name) ?? 0) + rows);
        rowsRead += rows;
      }
      Object.values(node).forEach(walk);
    };
    walk(doc);
    // A UNION's time is per branch; the statement's own round trip then.
    return { ms: doc.query_block?.r_total_time_ms ?? wall, scans: describeScans(scans), rowsRead };
  },
  withoutIndexes: null,
  recordCounts(now) {
    const expired = new Params(MYSQL);
    const forecast = new Params(MYSQL);
    const from = forecast.time(now);
    return [
      ["by status: GROUP BY status (whole status index)", plain(`SELECT status, COUNT(*) AS n FROM idempotency_records GROUP BY status`)],
      [
        "by status, operation=capture_payment: GROUP BY",
        plain(`SELECT status, COUNT(*) AS n FROM idempotency_records WHERE operation = 'capture_payment' GROUP BY status`),
      ],
      [
        "expired not purged: GROUP BY operation",
        { text: `SELECT operation, COUNT(*) AS n FROM idempotency_records WHERE expires_at < ${expired.time(now)} GROUP BY operation`, values: expired.values },
      ],
      [
        "7-day forecast: GROUP BY day",
        {
          text: `SELECT FLOOR(TIMESTAMPDIFF(SECOND, ${from}, expires_at) / 86400) AS d, COUNT(*) AS n FROM idempotency_records
                  WHERE expires_at >= ${from} AND expires_at < ${from} + INTERVAL 7 DAY GROUP BY d`,
          values: [...forecast.values, ...forecast.values, ...forecast.values],
        },
      ],
    ];
  },
  sample(mid) {
    return {
      text: `SELECT idempotency_key AS \`key\`, scope, provider_reference AS ref FROM idempotency_records
              WHERE id >= ? AND provider_reference IS NOT NULL ORDER BY id LIMIT 1`,
      values: [String(mid)],
    };
  },
  search(sample) {
    const prefix = (sample.ref ?? "x").slice(0, 8);
    const k = sample.key;
    return [
      ["key, exact", { q: k, field: "key" }, `SELECT ${SEARCH_COLUMNS} FROM idempotency_records WHERE idempotency_key = ? ${NEWEST}`, [k]],
      [
        "any of the six fields, exact",
        { q: k },
        `SELECT ${SEARCH_COLUMNS} FROM idempotency_records WHERE idempotency_key = ? OR scope = ? OR provider_reference = ? OR provider_request_id = ?
           OR correlation_id = ? OR resource_id = ? ${NEWEST}`,
        [k, k, k, k, k, k],
      ],
      [
        "provider reference, prefix",
        { q: prefix, field: "provider_reference", match: "prefix" },
        `SELECT ${SEARCH_COLUMNS} FROM idempotency_records WHERE provider_reference LIKE CONCAT(?, '%') ${NEWEST}`,
        [prefix],
      ],
      [
        "scope, exact (newest first)",
        { q: sample.scope, field: "scope" },
        `SELECT ${SEARCH_COLUMNS} FROM idempotency_records WHERE scope = ? ${NEWEST}`,
        [sample.scope],
      ],
      ["newest records, status=pending", { status: "pending" }, `SELECT ${SEARCH_COLUMNS} FROM idempotency_records WHERE status = 'pending' ${NEWEST}`, []],
    ];
  },
  queuePage(s, kind, stuckSeconds) {
    const stuck = `SELECT * FROM idempotency_records WHERE status = 'processing' AND updated_at < UTC_TIMESTAMP(6) - INTERVAL ${Math.floor(stuckSeconds)} SECOND`;
    // No LATERAL in MariaDB: the newest open item's id by a correlated subquery, then its row.
    return s.query(
      `SELECT q.*, ri.id AS ri_id, ri.state AS ri_state, ri.attempts AS ri_attempts, ri.next_check_at AS ri_next_check_at
         FROM (SELECT q.*, (SELECT i.id FROM reconciliation_items i WHERE i.record_id = q.id AND i.state IN (${OPEN_STATES})
                             ORDER BY i.created_at DESC, i.id DESC LIMIT 1) AS item_id
                 FROM (${kind === "stuck" ? `${stuck} ORDER BY updated_at, id LIMIT 51` : queueUnion(stuck)}) q) q
         LEFT JOIN reconciliation_items ri ON ri.id = q.item_id
        ORDER BY q.updated_at, q.id`,
    );
  },
  queueCounts(s, stuckSeconds) {
    return s.query(queueCountsText(`status = 'processing' AND updated_at < UTC_TIMESTAMP(6) - INTERVAL ${Math.floor(stuckSeconds)} SECOND`));
  },
  expiry(pool) {
    const ahead = (secs: number, span: string) =>
      pool.query(`SELECT FLOOR(TIMESTAMPDIFF(SECOND, UTC_TIMESTAMP(6), expires_at) / ${secs}) AS i, COUNT(*) AS n FROM idempotency_records
                   WHERE expires_at >= UTC_TIMESTAMP(6) AND expires_at < UTC_TIMESTAMP(6) + INTERVAL ${span} GROUP BY i`);
    return Promise.all([
      ahead(3600, "24 HOUR"),
      ahead(86400, "30 DAY"),
      pool.query(`SELECT operation, status, COUNT(*) AS n, SUM(legal_hold) AS held,
                         SUM(EXISTS (SELECT 1 FROM reconciliation_items i WHERE i.record_id = r.id AND i.state IN (${OPEN_STATES}))) AS open,
                         MIN(expires_at) AS oldest
                    FROM idempotency_records r WHERE expires_at < UTC_TIMESTAMP(6) GROUP BY operation, status`),
    ]);
  },
  async metrics(s) {
    const events = await s.query(`SELECT operation, kind, COUNT(*) AS n FROM idempotency_events GROUP BY operation, kind`);
    const records = await s.query(
      `SELECT operation, COUNT(CASE WHEN status = 'pending' THEN 1 END) AS pending,
              COUNT(CASE WHEN expires_at < UTC_TIMESTAMP(6) THEN 1 END) AS expired FROM idempotency_records GROUP BY operation`,
    );
    return { events, records };
  },
  freshEvents(n) {
    const count = Math.floor(n);
    return {
      text: `INSERT INTO idempotency_events (scope, operation, idempotency_key, kind, occurred_at)
             SELECT CONCAT('tenant:', ELT(1 + i % 5, 'acme', 'globex', 'initech', 'umbrella', 'hooli')),
                    ELT(1 + FLOOR(i / 5) % 5, 'create_order', 'capture_payment', 'accept_webhook', 'issue_invoice', 'refund_payment'),
                    CONCAT('bench-refresh-', ${count}, '-', i), ELT(1 + i % 4, 'reserved', 'completed', 'replayed', 'conflict'),
                    UTC_TIMESTAMP(6) - INTERVAL FLOOR(60000000 * i / ${count}) MICROSECOND
               FROM (SELECT 1 + a.d + 10 * b.d + 100 * c.d + 1000 * d.d + 10000 * e.d AS i
                       FROM ${DIGITS} a, ${DIGITS} b, ${DIGITS} c, ${DIGITS} d, ${DIGITS} e) x
              WHERE i <= ${count}`,
      values: [],
    };
  },
  tiers: `SELECT 60 AS grain, (SELECT COUNT(*) FROM event_rollups) AS \`rows\`, COUNT(*) AS totals FROM event_rollup_totals WHERE grain_seconds = 60
          UNION ALL SELECT t.grain_seconds, COUNT(*), (SELECT COUNT(*) FROM event_rollup_totals s WHERE s.grain_seconds = t.grain_seconds)
            FROM event_rollup_tiers t GROUP BY t.grain_seconds ORDER BY grain`,
  anyRecord: `SELECT COUNT(*) AS n FROM (SELECT 1 FROM idempotency_records LIMIT 1) x`,
};

/** The open reconciliation states as SQL literals (the kernel's list). */
const OPEN_STATES = OPEN_RECONCILIATION_STATES.map((state) => `'${state}'`).join(", ");

/** The queue's tab counts in one statement (the same text in both dialects), `stuck` the stuck condition. */
function queueCountsText(stuck: string): string {
  return `SELECT (SELECT COUNT(*) FROM idempotency_records WHERE ${stuck}) AS stuck,
                 (SELECT COUNT(*) FROM idempotency_records WHERE status = 'pending') AS pending,
                 (SELECT COUNT(*) FROM reconciliation_items WHERE state IN (${OPEN_STATES})) AS open,
                 (SELECT COUNT(DISTINCT i.record_id) FROM reconciliation_items i JOIN idempotency_records r ON r.id = i.record_id
                   WHERE i.state IN (${OPEN_STATES}) AND r.status NOT IN ('processing', 'pending')) AS other,
                 (SELECT MIN(updated_at) FROM idempotency_records WHERE status = 'pending') AS oldest_pending,
                 (SELECT MIN(updated_at) FROM idempotency_records WHERE ${stuck}) AS oldest_stuck`;
}

/** The queue's first page of everything it lists: stuck, pending, settled with open reconciliation. */
function queueUnion(stuck: string): string {
  return `SELECT * FROM (
             (${stuck} ORDER BY updated_at, id LIMIT 51)
             UNION ALL (SELECT * FROM idempotency_records WHERE status = 'pending' ORDER BY updated_at, id LIMIT 51)
             UNION ALL (SELECT r.* FROM idempotency_records r WHERE r.status NOT IN ('processing', 'pending')
                          AND r.id IN (SELECT record_id FROM reconciliation_items WHERE state IN (${OPEN_STATES}))
                        ORDER BY updated_at, id LIMIT 51)
           ) q ORDER BY updated_at, id LIMIT 51`;
}

const plain = (text: string): Statement => ({ text, values: [] });

/**
 * MariaDB's ANALYZE FORMAT=JSON prints conditions as it would write them, and under the console's
 * ANSI_QUOTES an identifier's double quotes land unescaped inside a JSON string: such a line's
 * string value (one member per line) is replaced by "?" — the figures read here are numbers.
 */
function jsonWithUnreadableStrings(text: string): string {
  return text
    .split("\n")
    .map((line) => {
      const m = /^(\s*"[^"]+": )(".*")(,?)$/.exec(line);
      if (!m) return line;
      try {
        JSON.parse(m[2]);
        return line;
      } catch {
        return `${m[1]}"?"${m[3]}`;
      }
    })
    .join("\n");
}

function describeScans(scans: Map<string, number>): string {
  return [...scans.entries()].map(([k, v]) => `${k} (${fmt(v)})`).join(", ");
}

export const readFloors = (on: HasDialect): ReadFloors => byDialect(on, { postgres, mysql });
