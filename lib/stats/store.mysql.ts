import { MYSQL } from "../db/dialect";
import { Params, plain, type Statement } from "../db/params";
import type { SqlExecutor } from "../db/sql";
import { OPEN_RECONCILIATION_STATES } from "../kernel/vocabulary";
import type { StuckThresholds } from "../records/config";
import { HELD_SCOPE_OF_RECORD, heldScopeRecordsSql, protectedRecordIdsSql } from "../retention/eligibility";
import { recordEligibleSql, recordWindowSql } from "../retention/eligibility.mysql";
import type { PolicyRule } from "../retention/rules";
import type { DepartureRow } from "./census-store";
import { DEPARTURES_SQL, recordCensusSql } from "./census-store.mysql";
import type { ConflictEvent, ConflictsInput } from "./conflicts";
import { bin, countsSql, watermarkSql } from "./rollup-store.mysql";
import { countOpenItems, type OpenItemsFrom } from "./open-items";
import { scopeNumberSql, scopePass } from "./scope-counts";
import {
  activeGroupRows,
  ascendingBounds,
  foldActive,
  type ActiveStatusRow,
  type ConflictGroupRow,
  EXPIRED_PART_STATUSES,
  startOfUtc,
  type ExpiredPart,
  type ExpiredRow,
  type MetricsReads,
  metricsStatements,
  overviewStatements,
  type StatsStatementBuilders,
  type OverviewReads,
  type RecordFilter,
  type RollupStateRow,
  type StatsStore,
} from "./store";

/**
 * The read screens' statements on MySQL / MariaDB (what they show: overview.ts, metrics.ts,
 * conflicts.ts, expiry.ts; the PostgreSQL side: store.postgres.ts). The same index ranges:
 * no FILTER (COUNT(CASE …)), no LATERAL (joins from the small side, STRAIGHT_JOIN where the
 * order is the point), no width_bucket or date_trunc (comparisons with times computed in
 * the process, epoch arithmetic for buckets). The loose index scans PostgreSQL spells as
 * recursive CTEs are MySQL's own (`GROUP BY` on an index prefix: "Using index for
 * group-by"); the conflicts' per-operation ranges are an `IN` list of the operations (a
 * range each) or, for the newest-first page, one ordered LIMIT branch per operation.
 * Parameters bind in text order (`?`): each fragment adds its values where it stands.
 */

function recordFilters(p: Params, f: { operation?: string; scope?: string }, alias = "r"): string {
  return [...(f.operation ? [` AND ${alias}.operation = ${p.add(f.operation)}`] : []), ...(f.scope ? [` AND ${alias}.scope = ${p.add(f.scope)}`] : [])].join(
    "",
  );
}

/** The moment before which a record of the row's operation is stuck: now − its threshold (computed here). */
function stuckBeforeSql(p: Params, t: StuckThresholds, now: Date, alias = "r"): string {
  const before = (seconds: number) => p.add(new Date(now.getTime() - seconds * 1000));
  const ops = Object.keys(t.byOperation);
  if (!ops.length) return before(t.defaultSeconds);
  return `CASE ${alias}.operation ${ops.map((op) => `WHEN ${p.add(op)} THEN ${before(t.byOperation[op])}`).join(" ")} ELSE ${before(t.defaultSeconds)} END`;
}

/**
 * The processing and pending records by status and operation: ranges of the unsettled index
 * (status, operation, updated_at, scope), index only, grouped in the index's order — no
 * temporary table (grouping by the pending age as well took one: 10M records, 70k unsettled,
 * 58 → 35 ms). A row per status and operation: n, the stuck ones (processing), the oldest
 * updated_at, and with `ageBounds` the pending records whose age has reached each bound (`a0`…,
 * cumulative: store.ts ActiveStatusRow). activeGroupRows makes them the groups every store
 * answers (store.ts foldActive). Parameters bind in text order.
 */
export function activeByOperationSql(f: { operation?: string; scope?: string }, t: StuckThresholds, now: Date, ageBounds?: readonly number[]): Statement {
  const p = new Params(MYSQL);
  const stuck = `COUNT(CASE WHEN r.updated_at < ${stuckBeforeSql(p, t, now)} THEN 1 END) AS stuck`;
  const reached = ascendingBounds(ageBounds ?? []).map(
    (b, k) => `COUNT(CASE WHEN r.updated_at <= ${p.add(new Date(now.getTime() - b * 1000))} THEN 1 END) AS a${k}`,
  );
  const text = `SELECT r.status, r.operation, COUNT(*) AS n, ${[stuck, ...reached].join(", ")}, MIN(r.updated_at) AS oldest
             FROM idempotency_records r
            WHERE r.status IN ('processing', 'pending')${recordFilters(p, f)}
            GROUP BY r.status, r.operation`;
  return { text, values: p.values };
}

/**
 * Records by expires_at interval and operation (PostgreSQL's recordTotalsSql): without a
 * scope from the record census; with one, the scope's one pass (scope-counts.ts), a covering
 * range of (scope, operation, expires_at, status) grouped by operation, each column a
 * conditional count over a bound bound as a constant, the numbers taken from them after the
 * grouping by a join with the names (a few rows). Rows: { name, operation, n }.
 */
export function recordTotalsSql(r: Pick<OverviewReads, "filters" | "recordIntervals" | "now">): Statement {
  const f = r.filters;
  if (!f.scope) return recordCensusSql(r.recordIntervals, { operation: f.operation, failed: true, now: r.now });
  const p = new Params(MYSQL);
  // Parameters bind in text order: the pass's bounds and filters, then the names.
  const { columns, numbers } = scopePass(r.recordIntervals, (d) => p.add(d));
  const counts = columns.map((where, i) => `${where ? `COUNT(CASE WHEN ${where} THEN 1 END)` : "COUNT(*)"} AS c${i}`);
  const pass = `SELECT r.operation, ${counts.join(", ")} FROM idempotency_records r WHERE TRUE${recordFilters(p, f)} GROUP BY r.operation`;
  const names = numbers.map((n, i) => `SELECT ${i} AS i, ${p.add(n.name)} AS name`).join(" UNION ALL ");
  const text = `SELECT u.name, u.operation, u.n FROM (
      SELECT k.name, t.operation, CASE k.i ${numbers.map((n, i) => `WHEN ${i} THEN ${scopeNumberSql(n)}`).join(" ")} END AS n
        FROM (${pass}) t JOIN (${names}) k
    ) u WHERE u.n > 0`;
  return { text, values: p.values };
}

/**
 * Open reconciliation items (open, checking, needs_manual); filtered through their record
 * (PostgreSQL's openReconciliationSql). `from: "items"`: each open item's record among the
 * processing and pending records — their ids and whether they match the filters, from the
 * unsettled index alone, materialized once (the LIMIT keeps MySQL and MariaDB from merging the
 * derived table back into a lookup per item) and probed by id. Only the flag, not the operation
 * and scope: two VARCHAR(255) columns made the temporary table 2 KB a row, past
 * tmp_memory_table_size, so MariaDB wrote it to disk (10M records, 70k unsettled: 947 → 85 ms).
 * Only for an item whose record is neither (normally none) a primary-key lookup of its record:
 * O(open items + unsettled records), not a random read of the big table per item.
 * `from: "records"` (a scope), a probe of the items' record_id index per record of the scope, the
 * ids from a scope index (InnoDB's secondary indexes carry the primary key).
 */
export function openReconciliationSql(f: { operation?: string; scope?: string }, from: OpenItemsFrom = "items"): Statement {
  const p = new Params(MYSQL);
  const states = p.list(OPEN_RECONCILIATION_STATES);
  if (!f.operation && !f.scope) return { text: `SELECT COUNT(*) AS n FROM reconciliation_items i WHERE i.state IN (${states})`, values: p.values };
  if (from === "records" && f.scope) {
    return {
      text: `SELECT COUNT(*) AS n FROM idempotency_records r STRAIGHT_JOIN reconciliation_items i ON i.record_id = r.id WHERE i.state IN (${states})${recordFilters(p, f)}`,
      values: p.values,
    };
  }
  // Parameters bind in text order: the derived table's come before the states'.
  const q = new Params(MYSQL);
  const matches = (a: string) =>
    [...(f.operation ? [`${a}.operation = ${q.add(f.operation)}`] : []), ...(f.scope ? [`${a}.scope = ${q.add(f.scope)}`] : [])].join(" AND ");
  const derived = `SELECT r.id, ${matches("r")} AS m FROM idempotency_records r WHERE r.status IN ('processing', 'pending') LIMIT 18446744073709551615`;
  return {
    text: `SELECT STRAIGHT_JOIN COUNT(*) AS n FROM reconciliation_items i
             LEFT JOIN (${derived}) u ON u.id = i.record_id
             LEFT JOIN idempotency_records x ON u.id IS NULL AND x.id = i.record_id
            WHERE i.state IN (${q.list(OPEN_RECONCILIATION_STATES)}) AND COALESCE(u.m, ${matches("x")})`,
    values: q.values,
  };
}

/** Every operation in the events: a loose index scan of (operation, kind, occurred_at). */
export const KNOWN_OPERATIONS_SQL = `SELECT operation FROM idempotency_events GROUP BY operation ORDER BY operation`;

/** Up to 100 scopes: a loose index scan of an index led by scope. */
export const KNOWN_SCOPES_SQL = `SELECT scope FROM idempotency_records GROUP BY scope ORDER BY scope LIMIT 100`;

export const CENSUS_STATE_SQL = `SELECT s.updated_at AS "verifiedAt", s.watermark AS drift FROM rollup_state s WHERE s.name = 'census_verified'`;

export const ROLLUP_STATE_SQL = `SELECT COALESCE(s.watermark, 0) AS watermark, s.updated_at AS "refreshedAt",
    (SELECT COUNT(*) FROM idempotency_events e WHERE e.id > ${watermarkSql("events")}) AS lag,
    (SELECT COUNT(*) FROM rollup_gaps) AS gaps
  FROM (SELECT 1 AS one) o LEFT JOIN rollup_state s ON s.name = 'events'`;

/**
 * What counting a scope's open items from the items' side costs per item against a probe per
 * record of the scope (open-items.ts countOpenItems): a probe of the processing and pending
 * records, materialized once (openReconciliationSql) — no longer a lookup of each item's record
 * in the big table, which made it 4.
 */
export const OPEN_ITEM_COST: number = 1;

/** This dialect's builders of the overview's and a metrics scrape's statements (store.ts). */
const STATEMENT_BUILDERS: StatsStatementBuilders = {
  recordTotalsSql,
  activeByOperationSql,
  openReconciliationSql,
  countsSql,
  recordCensusSql,
  rollupState: ROLLUP_STATE_SQL,
  knownOperations: KNOWN_OPERATIONS_SQL,
  knownScopes: KNOWN_SCOPES_SQL,
  departures: DEPARTURES_SQL,
  censusState: CENSUS_STATE_SQL,
};

/** Every statement the overview runs, by name, in order (store.ts overviewStatements). */
export const overviewSql = (r: OverviewReads) => overviewStatements(STATEMENT_BUILDERS, r);

/** Every statement a metrics scrape runs, by name, in order (store.ts metricsStatements). */
export const metricsSql = (r: MetricsReads) => metricsStatements(STATEMENT_BUILDERS, r);

/** A JSON member as text, NULL when absent or JSON null (PostgreSQL's `->>`). `key` is a constant. */
const jsonText = (column: string, key: string) =>
  `CASE WHEN JSON_TYPE(JSON_EXTRACT(${column}, '$.${key}')) = 'NULL' THEN NULL ELSE JSON_UNQUOTE(JSON_EXTRACT(${column}, '$.${key}')) END`;

/**
 * The conflict events of [from, to) of `operations`: one range of (operation, kind,
 * occurred_at) per operation (exported for EXPLAIN). `select` and `tail` are the shape.
 */
export function conflictRowsSql(input: ConflictsInput, operations: readonly string[], shape: { select: string; tail: string }): Statement {
  const p = new Params(MYSQL);
  const text = `SELECT ${shape.select} FROM idempotency_events e
     WHERE e.operation IN (${p.list(operations)}) AND e.kind = 'conflict' AND e.occurred_at >= ${p.add(input.from)} AND e.occurred_at < ${p.add(input.to)}${
       input.scope ? ` AND e.scope = ${p.add(input.scope)}` : ""
     }
     ${shape.tail}`;
  return { text, values: p.values };
}

/**
 * The drill-down page, newest first: per operation an ordered backward range with LIMIT (the
 * index is (operation, kind, occurred_at) + the primary key), merged; so a page reads at most
 * `limit + 1` rows per operation, whatever the range holds.
 */
export function conflictPageSql(input: ConflictsInput, operations: readonly string[], limit: number): Statement {
  const p = new Params(MYSQL);
  // Each value is added where it stands in the text (they bind in order): the cursor after the range.
  const cursor = (c: NonNullable<ConflictsInput["cursor"]>) =>
    ` AND (e.occurred_at < ${MYSQL.time(p.add(c.t))} OR (e.occurred_at = ${MYSQL.time(p.add(c.t))} AND e.id < ${p.add(c.id)}))`;
  const branch = (operation: string) => {
    return `(SELECT e.id, e.occurred_at AS "occurredAt", e.operation, e.scope, e.idempotency_key AS "idempotencyKey",
             e.record_id AS "recordId", ${jsonText("e.detail", "expectedPayloadHash")} AS "expectedPayloadHash",
             COALESCE(${jsonText("e.detail", "receivedPayloadHash")}, e.payload_hash) AS "receivedPayloadHash",
             ${MYSQL.cursorTime("e.occurred_at")} AS "cursorTime"
        FROM idempotency_events e
       WHERE e.operation = ${p.add(operation)} AND e.kind = 'conflict' AND e.occurred_at >= ${p.add(input.from)} AND e.occurred_at < ${p.add(input.to)}${
         input.scope ? ` AND e.scope = ${p.add(input.scope)}` : ""
       }${input.cursor ? cursor(input.cursor) : ""}
       ORDER BY e.occurred_at DESC, e.id DESC LIMIT ${p.add(limit + 1)})`;
  };
  const text = `${operations.map(branch).join("\n      UNION ALL\n      ")}
      ORDER BY "occurredAt" DESC, id DESC LIMIT ${p.add(limit + 1)}`;
  return { text, values: p.values };
}

type ExpiryFilter = RecordFilter & { now: Date };

/** Records expiring in the next 24 h per UTC hour, or in the next 30 days per UTC day (rows: { i, n }, i = 0 the hour or day of `now`; buckets: expiryBuckets, store.ts). */
export function expiringSql(q: ExpiryFilter, per: "hour" | "day"): Statement {
  const [secs, buckets] = per === "hour" ? [3600, 24] : [86400, 30];
  const p = new Params(MYSQL);
  const origin = startOfUtc(q.now, per);
  const text = `SELECT FLOOR(TIMESTAMPDIFF(MICROSECOND, ${p.add(origin)}, r.expires_at) / ${secs * 1_000_000}) AS i, COUNT(*) AS n
               FROM idempotency_records r
              WHERE r.expires_at >= ${p.add(q.now)} AND r.expires_at < ${p.add(new Date(q.now.getTime() + buckets * secs * 1000))}${recordFilters(p, q)}
              GROUP BY i`;
  return { text, values: p.values };
}

/**
 * Expired records by operation and status, with what a purge under `rules` would remove now
 * (lib/retention/eligibility.ts) and how many are past their policy's window; the open items'
 * record ids read once (a derived table MariaDB materializes with a key), not a probe of the items
 * per expired record, as on PostgreSQL. `part` as there (ExpiredPart, store.ts; "protected":
 * protectedExpiredSql).
 */
export function expiredSql(q: ExpiryFilter & { rules?: readonly PolicyRule[]; part?: ExpiredPart }): Statement {
  if (q.part === "protected") return protectedExpiredSql(q);
  const p = new Params(MYSQL);
  // Placeholders in the order of the text: the select list's eligibility and window, the open items', then the range's.
  const eligible = recordEligibleSql(q.rules ?? [], q.now, p, "r");
  const pastWindow = recordWindowSql(q.rules ?? [], q.now, p, "r");
  const text = `SELECT r.operation, r.status, COUNT(*) AS n,
                    COUNT(CASE WHEN r.legal_hold THEN 1 END) AS held,
                    COUNT(o.record_id) AS "open",
                    COUNT(CASE WHEN ${eligible} THEN 1 END) AS purgeable,
                    COUNT(CASE WHEN ${pastWindow} THEN 1 END) AS pastWindow,
                    MIN(r.expires_at) AS oldest
               FROM idempotency_records r LEFT JOIN (SELECT DISTINCT i.record_id FROM reconciliation_items i WHERE i.state IN (${p.list(OPEN_RECONCILIATION_STATES)})) o
                 ON o.record_id = r.id
              WHERE r.expires_at < ${p.add(q.now)}${EXPIRED_PART_STATUSES[q.part ?? "all"]}${recordFilters(p, q)}
              GROUP BY r.operation, r.status ORDER BY r.operation, r.status`;
  return { text, values: p.values };
}

/**
 * The expired completed and failed records a protection may keep, PostgreSQL's two parts
 * (store.postgres.ts protectedExpiredSql): the ids a protection names, each probed by primary key,
 * and the records of held scopes read by the scope (the scope-counts index, which carries the
 * primary key here: index-only as well).
 */
function protectedExpiredSql(q: ExpiryFilter & { rules?: readonly PolicyRule[] }): Statement {
  const p = new Params(MYSQL);
  // Placeholders in the order of the text: each part's select list, then its range.
  const expired = () => `r.expires_at < ${p.add(q.now)}${EXPIRED_PART_STATUSES.protected}${recordFilters(p, q)}`;
  const byIds = `SELECT r.operation, r.status, COUNT(CASE WHEN hs.scope IS NULL THEN 1 END) AS n,
                        COUNT(CASE WHEN r.legal_hold THEN 1 END) AS held,
                        COUNT(CASE WHEN k.has_open_item = 1 THEN 1 END) AS "open",
                        COUNT(CASE WHEN ${recordEligibleSql(q.rules ?? [], q.now, p, "r")} THEN 1 END) AS purgeable,
                        COUNT(CASE WHEN hs.scope IS NULL AND ${recordWindowSql(q.rules ?? [], q.now, p, "r")} THEN 1 END) AS pastWindow,
                        MIN(CASE WHEN hs.scope IS NULL THEN r.expires_at END) AS oldest
                   FROM (${protectedRecordIdsSql(p)}) k JOIN idempotency_records r ON r.id = k.id ${HELD_SCOPE_OF_RECORD}
                  WHERE ${expired()}
                  GROUP BY r.operation, r.status`;
  const byScope = `SELECT r.operation, r.status, COUNT(*), 0, 0, 0, COUNT(CASE WHEN ${recordWindowSql(q.rules ?? [], q.now, p, "r")} THEN 1 END), MIN(r.expires_at)
                     FROM ${heldScopeRecordsSql(p, expired(), "r.operation, r.status, r.expires_at")}
                    GROUP BY r.operation, r.status`;
  const text = `SELECT operation, status, SUM(n) AS n, SUM(held) AS held, SUM("open") AS "open", SUM(purgeable) AS purgeable,
                       SUM(pastWindow) AS pastWindow, MIN(oldest) AS oldest
                  FROM (${byIds} UNION ALL ${byScope}) t
                 GROUP BY operation, status ORDER BY operation, status`;
  return { text, values: p.values };
}

/** The earliest expiry of each (operation, status) of `groups` among the records expired at `now`: an ordered range of (operation, expires_at) each, up to the first record of the status. */
export function oldestExpiredSql(groups: readonly { operation: string; status: string }[], now: Date): Statement {
  const p = new Params(MYSQL);
  const text = groups
    .map(
      (g) => `SELECT ${p.add(g.operation)} AS operation, ${p.add(g.status)} AS status,
              (SELECT r.expires_at FROM idempotency_records r FORCE INDEX (idempotency_records_operation_expires_at_idx)
                WHERE r.operation = ${p.add(g.operation)} AND r.expires_at < ${p.add(now)} AND r.status = ${p.add(g.status)}
                ORDER BY r.expires_at LIMIT 1) AS oldest`,
    )
    .join("\n UNION ALL ");
  return { text, values: p.values };
}

/** The expiry screen's three statements (for EXPLAIN). */
export function expirySql(q: ExpiryFilter & { rules?: readonly PolicyRule[] }) {
  return { hours: expiringSql(q, "hour"), days: expiringSql(q, "day"), expired: expiredSql(q) };
}

export function mysqlStatsStore(ex: SqlExecutor): StatsStore {
  const q = <T>(x: Statement) => ex.query<T>(x.text, x.values);
  /** The operations a conflicts statement ranges over: the filter's, or every one in the events. */
  const conflictOperations = async (input: ConflictsInput) =>
    input.operation ? [input.operation] : (await q<{ operation: string }>(plain(KNOWN_OPERATIONS_SQL))).map((r) => r.operation);
  return {
    // Nothing to set: MariaDB's read-side plans are pinned in the statements themselves.
    readSidePlans: async () => {},
    async overview(reads) {
      const sql = overviewSql(reads);
      const totals = await q<{ name: string; operation: string; n: bigint }>(sql.totals);
      return {
        totals,
        ...foldActive(activeGroupRows(await q<ActiveStatusRow>(sql.active), reads.pendingAgeBounds)),
        open: await countOpenItems(sql, totals, q, OPEN_ITEM_COST),
        series: await q<{ b: Date; operation: string; kind: string; n: bigint }>(sql.series),
        rollup: await q<RollupStateRow>(sql.rollup),
        operations: await q<{ operation: string }>(sql.operations),
        scopes: await q<{ scope: string }>(sql.scopes),
        departures: await q<DepartureRow>(sql.departures),
        census: await q<{ verifiedAt: Date; drift: bigint }>(sql.census),
      };
    },
    async metrics(reads) {
      const sql = metricsSql(reads);
      return {
        operations: await q<{ operation: string }>(sql.operations),
        active: foldActive(activeGroupRows(await q<ActiveStatusRow>(sql.active))).active,
        expired: await q<{ name: string; operation: string; n: bigint }>(sql.expired),
        open: await q<{ n: bigint }>(sql.open),
        totals: await q<{ operation: string; kind: string; n: bigint }>(sql.totals),
        rollup: await q<RollupStateRow>(sql.rollup),
      };
    },

    async conflictGroups(input) {
      const ops = await conflictOperations(input);
      if (!ops.length) return [];
      return q<ConflictGroupRow>(
        conflictRowsSql(input, ops, {
          select: `e.operation, e.scope, COUNT(*) AS conflicts, COUNT(DISTINCT e.idempotency_key) AS "keys",
             MIN(e.occurred_at) AS "firstAt", MAX(e.occurred_at) AS "lastAt"`,
          tail: `GROUP BY e.operation, e.scope ORDER BY COUNT(*) DESC, e.operation, e.scope`,
        }),
      );
    },
    async conflictTrend(input, bucket) {
      const ops = await conflictOperations(input);
      if (!ops.length) return [];
      return q<{ b: Date; operation: string; n: bigint }>(
        conflictRowsSql(input, ops, {
          select: `${bin("e.occurred_at", bucket === "hour" ? 3600 : 86400)} AS b, e.operation, COUNT(*) AS n`,
          tail: `GROUP BY b, e.operation`,
        }),
      );
    },
    async conflictPage(input, limit) {
      const ops = await conflictOperations(input);
      if (!ops.length) return [];
      return q<ConflictEvent & { cursorTime: string }>(conflictPageSql(input, ops, limit));
    },

    expiringPerHour: (f, now) => q<{ i: number; n: bigint }>(expiringSql({ ...f, now }, "hour")),
    expiringPerDay: (f, now) => q<{ i: number; n: bigint }>(expiringSql({ ...f, now }, "day")),
    expiredGroups: (f, now, rules, part) => q<ExpiredRow>(expiredSql({ ...f, now, rules, part })),
    oldestExpired: (groups, now) => q<{ operation: string; status: string; oldest: Date }>(oldestExpiredSql(groups, now)),
  };
}
