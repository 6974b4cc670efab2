import { OPEN_RECONCILIATION_STATES } from "../kernel/vocabulary";
import { cursorTimeSql } from "../db/paging";
import { paramList, type Statement } from "../db/params";
import type { SqlExecutor } from "../db/sql";
import type { StuckThresholds } from "../records/config";
import { HELD_SCOPE_OF_RECORD, heldScopeRecordsSql, protectedRecordIdsSql } from "../retention/eligibility";
import { recordEligibleSql, recordWindowSql } from "../retention/eligibility.postgres";
import type { PolicyRule } from "../retention/rules";
import type { DepartureRow } from "./census-store";
import { DEPARTURES_SQL, recordCensusSql } from "./census-store.postgres";
import type { ConflictEvent, ConflictsInput } from "./conflicts";
import { countsSql } from "./rollup-store.postgres";
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
 * The read screens' statements on PostgreSQL, verbatim from lib/stats/overview.ts,
 * metrics.ts, conflicts.ts and expiry.ts (which index each reads: their module comments).
 */

type Params = ReturnType<typeof paramList>;

function recordFilters(p: Params, f: { operation?: string; scope?: string }, alias = "r"): string {
  return [...(f.operation ? [` AND ${alias}.operation = ${p.add(f.operation)}`] : []), ...(f.scope ? [` AND ${alias}.scope = ${p.add(f.scope)}`] : [])].join(
    "",
  );
}

/** The moment before which a record of the row's operation is stuck: now − its threshold, computed here rather than per row. */
function stuckBeforeSql(p: Params, t: StuckThresholds, now: Date, alias = "r"): string {
  const before = (seconds: number) => `${p.add(new Date(now.getTime() - seconds * 1000))}::timestamptz`;
  const ops = Object.keys(t.byOperation);
  if (!ops.length) return before(t.defaultSeconds);
  return `CASE ${alias}.operation ${ops.map((op) => `WHEN ${p.add(op)}::text THEN ${before(t.byOperation[op])}`).join(" ")} ELSE ${before(t.defaultSeconds)} END`;
}

/**
 * The processing and pending records by status and operation: ranges of the unsettled-status
 * index (status, operation, updated_at), index only, grouped in the index's order — no sort and
 * no hash. A row per status and operation (store.ts ActiveStatusRow): n, the stuck ones, the
 * oldest updated_at, and with `ageBounds` the pending records whose age has reached each bound
 * (`a0`…, cumulative), which activeGroupRows makes the groups every store answers. Grouping by
 * the pending age bucket as well (an expression) made PostgreSQL sort the 70k entries of 10M
 * records on disk, the planner taking every entry for a group of its own (110 → 24 ms in psql).
 */
export function activeByOperationSql(f: { operation?: string; scope?: string }, t: StuckThresholds, now: Date, ageBounds?: readonly number[]): Statement {
  const p = paramList();
  const stuck = `count(*) FILTER (WHERE r.updated_at < ${stuckBeforeSql(p, t, now)})::bigint AS stuck`;
  const reached = ascendingBounds(ageBounds ?? []).map(
    (b, k) => `count(*) FILTER (WHERE r.updated_at <= ${p.add(new Date(now.getTime() - b * 1000))}::timestamptz)::bigint AS a${k}`,
  );
  return {
    text: `SELECT r.status, r.operation, count(*)::bigint AS n, ${[stuck, ...reached].join(", ")}, min(r.updated_at) AS oldest
             FROM idempotency_records r
            WHERE r.status IN ('processing', 'pending')${recordFilters(p, f)}
            GROUP BY r.status, r.operation`,
    values: p.values,
  };
}

/**
 * Records by expires_at interval (`recordIntervals`) and operation: all of them, expired
 * but not purged, and the forecast days. Without a scope, from the record census
 * (census-store.postgres.ts recordCensusSql). With a scope, the scope's one pass
 * (scope-counts.ts), which counts the failed records too: an index-only scan of
 * (scope, operation, expires_at, status) grouped by operation in index order, each column a
 * FILTER over a bound bound as a constant, the numbers taken from them after the grouping (a few rows). Rows:
 * { name, operation, n }.
 */
export function recordTotalsSql(r: Pick<OverviewReads, "filters" | "recordIntervals" | "now">): Statement {
  const f = r.filters;
  if (!f.scope) return recordCensusSql(r.recordIntervals, { operation: f.operation, failed: true, now: r.now });
  const p = paramList();
  const pass = scopePass(r.recordIntervals, (d) => `${p.add(d)}::timestamptz`);
  const columns = pass.columns.map((where, i) => `${where ? `count(*) FILTER (WHERE ${where})` : "count(*)"} AS c${i}`);
  return {
    text: `SELECT k.name, t.operation, k.n FROM (
             SELECT r.operation, ${columns.join(", ")}
               FROM idempotency_records r WHERE TRUE${recordFilters(p, f)} GROUP BY r.operation
           ) t CROSS JOIN LATERAL (VALUES ${pass.numbers.map((n) => `(${p.add(n.name)}::text, ${scopeNumberSql(n)})`).join(", ")}) k(name, n)
           WHERE k.n > 0`,
    values: p.values,
  };
}

/**
 * Open reconciliation items (open, checking, needs_manual); filtered through their record.
 * `from: "items"`: each open item's record from the processing and pending records — the
 * unsettled index alone (INCLUDE (scope, id)), hashed — and, only for an item whose record is
 * neither (a one-time filter: normally none), a probe of its record by primary key (OFFSET 0
 * keeps the planner from turning that into a join that reads every record): O(open items +
 * unsettled records), no random read per item (PostgreSQL 5M, one operation: 164 → 30 ms).
 * `from: "records"` (a scope): one probe of the items' record_id index per record of the scope,
 * the ids an index-only scan of (scope, created_at, id): O(the scope's records), for a scope with
 * fewer records than OPEN_ITEM_COST × the open items (open-items.ts countOpenItems).
 */
export function openReconciliationSql(f: { operation?: string; scope?: string }, from: OpenItemsFrom = "items"): Statement {
  const p = paramList();
  const states = p.add([...OPEN_RECONCILIATION_STATES]);
  const filters = recordFilters(p, f);
  if (!filters) return { text: `SELECT count(*)::bigint AS n FROM reconciliation_items i WHERE i.state = ANY (${states}::text[])`, values: p.values };
  return {
    text:
      from === "records" && f.scope
        ? `SELECT count(*)::bigint AS n FROM idempotency_records r
            CROSS JOIN LATERAL (SELECT 1 FROM reconciliation_items i WHERE i.record_id = r.id AND i.state = ANY (${states}::text[]) OFFSET 0) i
            WHERE TRUE${filters}`
        : `SELECT count(*)::bigint AS n FROM (
             SELECT COALESCE(u.operation, x.operation) AS operation, COALESCE(u.scope, x.scope) AS scope
               FROM reconciliation_items i
               LEFT JOIN (SELECT r.id, r.operation, r.scope FROM idempotency_records r WHERE r.status IN ('processing', 'pending')) u ON u.id = i.record_id
               LEFT JOIN LATERAL (SELECT r.operation, r.scope FROM idempotency_records r WHERE u.id IS NULL AND r.id = i.record_id OFFSET 0) x ON TRUE
              WHERE i.state = ANY (${states}::text[])
           ) r WHERE TRUE${filters}`,
    values: p.values,
  };
}

/** Every operation in the events: a loose index scan of (operation, kind, occurred_at), one probe each. */
export const KNOWN_OPERATIONS_SQL = `WITH RECURSIVE o AS (
    SELECT min(operation) AS operation FROM idempotency_events
    UNION ALL
    SELECT (SELECT min(e.operation) FROM idempotency_events e WHERE e.operation > o.operation) FROM o WHERE o.operation IS NOT NULL
  ) SELECT operation FROM o WHERE operation IS NOT NULL`;

/** Up to 100 scopes: a loose index scan of (scope, created_at, id). */
export const KNOWN_SCOPES_SQL = `WITH RECURSIVE s AS (
    SELECT min(scope) AS scope, 1 AS n FROM idempotency_records
    UNION ALL
    SELECT (SELECT min(r.scope) FROM idempotency_records r WHERE r.scope > s.scope), s.n + 1 FROM s WHERE s.scope IS NOT NULL AND s.n < 100
  ) SELECT scope FROM s WHERE scope IS NOT NULL`;

export const CENSUS_STATE_SQL = `SELECT s.updated_at AS "verifiedAt", s.watermark AS drift FROM rollup_state s WHERE s.name = 'census_verified'`;

export const ROLLUP_STATE_SQL = `SELECT COALESCE(s.watermark, 0)::bigint AS watermark, s.updated_at AS "refreshedAt",
    (SELECT count(*) FROM idempotency_events e WHERE e.id > COALESCE(s.watermark, 0))::bigint AS lag,
    (SELECT count(*) FROM rollup_gaps)::bigint AS gaps
  FROM (SELECT 1) one LEFT JOIN rollup_state s ON s.name = 'events'`;

/**
 * What counting a scope's open items from the items' side costs per item against a probe per
 * record of the scope (open-items.ts countOpenItems): the items' side hashes the open items
 * against the unsettled index.
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

/**
 * The conflict events of the range, one index range per operation (exported for EXPLAIN).
 * The operations come from a loose index scan: min(operation) > previous, one index probe
 * each, over (operation, kind, occurred_at).
 */
export function conflictRowsSql(input: ConflictsInput, shape: { select: string; inner?: (p: Params) => string; outer?: (p: Params) => string }): Statement {
  const p = paramList();
  const from = p.add(input.from);
  const to = p.add(input.to);
  const ops = input.operation
    ? `ops AS (SELECT ${p.add(input.operation)}::text AS operation)`
    : `o AS (
         SELECT min(operation) AS operation FROM idempotency_events
         UNION ALL
         SELECT (SELECT min(e.operation) FROM idempotency_events e WHERE e.operation > o.operation) FROM o WHERE o.operation IS NOT NULL
       ), ops AS (SELECT operation FROM o WHERE operation IS NOT NULL)`;
  const scope = input.scope ? `AND e.scope = ${p.add(input.scope)}` : "";
  // OFFSET 0 keeps the subquery from being flattened into a join, which would read the
  // whole time range by occurred_at and filter on kind: per operation, it is an index range.
  const inner = shape.inner?.(p) ?? "OFFSET 0";
  const text = `WITH RECURSIVE ${ops}
    SELECT ${shape.select} FROM ops
      CROSS JOIN LATERAL (
        SELECT e.* FROM idempotency_events e
         WHERE e.operation = ops.operation AND e.kind = 'conflict' AND e.occurred_at >= ${from} AND e.occurred_at < ${to} ${scope}
         ${inner}
      ) e
    ${shape.outer?.(p) ?? ""}`;
  return { text, values: p.values };
}

type ExpiryFilter = RecordFilter & { now: Date };

function expiryBase(q: ExpiryFilter) {
  const p = paramList();
  const now = p.add(q.now);
  const and = [...(q.operation ? [` AND r.operation = ${p.add(q.operation)}`] : []), ...(q.scope ? [` AND r.scope = ${p.add(q.scope)}`] : [])].join("");
  return { p, now, and };
}

/** Records expiring in the next 24 h per UTC hour, or in the next 30 days per UTC day (rows: { i, n }, i = 0 the hour or day of `now`; buckets: expiryBuckets, store.ts). */
export function expiringSql(q: ExpiryFilter, per: "hour" | "day"): Statement {
  const [secs, span] = per === "hour" ? [3600, "24 hours"] : [86400, "30 days"];
  const { p, now, and } = expiryBase(q);
  const origin = p.add(startOfUtc(q.now, per));
  return {
    text: `SELECT floor(extract(epoch FROM r.expires_at - ${origin}::timestamptz) / ${secs})::int AS i, count(*)::bigint AS n
               FROM idempotency_records r
              WHERE r.expires_at >= ${now}::timestamptz AND r.expires_at < ${now}::timestamptz + interval '${span}'${and}
              GROUP BY 1`,
    values: p.values,
  };
}

/**
 * Expired records by operation and status, with what a purge under `rules` would remove now
 * (lib/retention/eligibility.ts) and how many are past their policy's window. Whether a record
 * has an open reconciliation item: the open items' record ids, read once and hashed — a probe of
 * the items per expired record took two thirds of the statement (10M records, 6M expired: 4.6–5.1
 * → 1.5–1.8 s). `part` (ExpiredPart, store.ts): every expired record, the processing and pending
 * ones (the unsettled-status index), or the settled ones a protection may keep (protectedExpiredSql).
 */
export function expiredSql(q: ExpiryFilter & { rules?: readonly PolicyRule[]; part?: ExpiredPart }): Statement {
  if (q.part === "protected") return protectedExpiredSql(q);
  const { p, now, and } = expiryBase(q);
  const eligible = recordEligibleSql(q.rules ?? [], q.now, p, "r");
  const pastWindow = recordWindowSql(q.rules ?? [], q.now, p, "r");
  return {
    text: `SELECT r.operation, r.status, count(*)::bigint AS n,
                    count(*) FILTER (WHERE r.legal_hold)::bigint AS held,
                    count(o.record_id)::bigint AS open,
                    count(*) FILTER (WHERE ${eligible})::bigint AS purgeable,
                    count(*) FILTER (WHERE ${pastWindow})::bigint AS "pastWindow",
                    min(r.expires_at) AS oldest
               FROM idempotency_records r
               LEFT JOIN (SELECT DISTINCT i.record_id FROM reconciliation_items i WHERE i.state = ANY (${p.add([...OPEN_RECONCILIATION_STATES])}::text[])) o ON o.record_id = r.id
              WHERE r.expires_at < ${now}::timestamptz${EXPIRED_PART_STATUSES[q.part ?? "all"]}${and}
              GROUP BY 1, 2 ORDER BY 1, 2`,
    values: p.values,
  };
}

/**
 * The expired completed and failed records a protection may keep (ExpiredPart "protected"), in
 * two parts added up per operation and status:
 * - the ids a protection names (protectedRecordIdsSql), a primary-key probe each: their holds and
 *   open items, what a purge would take; counted and past the window unless their scope is held;
 * - the records of held scopes (heldScopeRecordsSql): counted and past the window — an index
 *   range of the scope each, index-only (the scope-counts index), never their ids.
 * A record of a held scope with another protection is in both, counted in the second only.
 */
function protectedExpiredSql(q: ExpiryFilter & { rules?: readonly PolicyRule[] }): Statement {
  const { p, now, and } = expiryBase(q);
  const eligible = recordEligibleSql(q.rules ?? [], q.now, p, "r");
  const pastWindow = recordWindowSql(q.rules ?? [], q.now, p, "r");
  const expired = `r.expires_at < ${now}::timestamptz${EXPIRED_PART_STATUSES.protected}${and}`;
  return {
    text: `SELECT operation, status, sum(n)::bigint AS n, sum(held)::bigint AS held, sum(open)::bigint AS open,
                  sum(purgeable)::bigint AS purgeable, sum("pastWindow")::bigint AS "pastWindow", min(oldest) AS oldest
             FROM (SELECT r.operation, r.status, count(*) FILTER (WHERE hs.scope IS NULL) AS n,
                          count(*) FILTER (WHERE r.legal_hold) AS held,
                          count(*) FILTER (WHERE k.has_open_item = 1) AS open,
                          count(*) FILTER (WHERE ${eligible}) AS purgeable,
                          count(*) FILTER (WHERE hs.scope IS NULL AND ${pastWindow}) AS "pastWindow",
                          min(r.expires_at) FILTER (WHERE hs.scope IS NULL) AS oldest
                     FROM (${protectedRecordIdsSql(p)}) k JOIN idempotency_records r ON r.id = k.id ${HELD_SCOPE_OF_RECORD}
                    WHERE ${expired}
                    GROUP BY 1, 2
                   UNION ALL
                   SELECT r.operation, r.status, count(*), 0, 0, 0, count(*) FILTER (WHERE ${pastWindow}), min(r.expires_at)
                     FROM ${heldScopeRecordsSql(p, expired, "r.operation, r.status, r.expires_at")}
                    GROUP BY 1, 2) t
            GROUP BY 1, 2 ORDER BY 1, 2`,
    values: p.values,
  };
}

/**
 * The earliest expiry of each (operation, status) of `groups` among the records expired at `now`:
 * an ordered range of (operation, expires_at) each, up to the first record of the status. The
 * operation is compared as a range and ordered by, which that index alone gives without a sort: by
 * equality it drops out of the order (one value), and PostgreSQL walked the expires_at index
 * filtering on the operation (1M records: 184k rows a group, 3.0 s for ten groups → 7 ms; MySQL
 * forces the index).
 */
export function oldestExpiredSql(groups: readonly { operation: string; status: string }[], now: Date): Statement {
  const p = paramList();
  return {
    text: `SELECT g.operation, g.status, o.oldest
             FROM unnest(${p.add(groups.map((g) => g.operation))}::text[], ${p.add(groups.map((g) => g.status))}::text[]) g(operation, status)
             CROSS JOIN LATERAL (
               SELECT r.expires_at AS oldest FROM idempotency_records r
                WHERE r.operation >= g.operation AND r.operation <= g.operation AND r.status = g.status AND r.expires_at < ${p.add(now)}::timestamptz
                ORDER BY r.operation, r.expires_at LIMIT 1) o`,
    values: p.values,
  };
}

/** The expiry screen's three statements (for the EXPLAIN test). */
export function expirySql(q: ExpiryFilter & { rules?: readonly PolicyRule[] }) {
  return { hours: expiringSql(q, "hour"), days: expiringSql(q, "day"), expired: expiredSql(q) };
}

/**
 * What the read side's snapshots (the overview, a metrics scrape, the conflicts screen) run
 * under (SET LOCAL: their snapshot transaction only; lib/stats/overview.ts inSnapshot).
 * Their statements are small index ranges, but some bound a range by a value read at run time
 * (the rollup watermark), which the planner estimates as a third of the table: at 1M events
 * it launched two parallel workers for the "not rolled up yet" branch, ~50 ms of worker start
 * for a branch that reads no rows. The same reasoning as jit = off (lib/db/client.ts).
 * A scope's pass (recordTotalsSql), the one statement that reads in proportion to its rows, stays
 * serial too: on one 2-core machine two workers took a 1.75M-record scope's overview from 954 to
 * 604–647 ms, on another from 576 to 1,121–1,166 (docs/scale.md): workers are new processes every
 * time, and there a new backend's first pass over the same entries took twice a warm one's.
 */
export const READ_SIDE_PLANS = `SET LOCAL max_parallel_workers_per_gather = 0`;

/**
 * A scope's pass compiled: the one statement whose cost is per entry (a dozen aggregates over each
 * of the scope's index entries) runs with JIT on — expressions and tuple deforming only, no
 * inlining or optimisation (~5 ms to compile; with them it was slower) — and only when its
 * estimate passes jit_above_cost (the default: a scope of about a million records; a small
 * scope's pass is not compiled). On a 5M database, acme's 1.75M entries: 375–382 → 313–326 ms
 * (docs/scale.md). Session SETs, not LOCAL: the embedded PGlite reads outside a transaction
 * (where a failed pass's ROLLBACK takes the SET back, and `off` is sent in any case).
 */
export const SCOPE_PASS_JIT = {
  on: `SET jit = on; SET jit_inline_above_cost = -1; SET jit_optimize_above_cost = -1`,
  off: `SET jit = off; RESET jit_inline_above_cost; RESET jit_optimize_above_cost`,
} as const;

export function postgresStatsStore(ex: SqlExecutor): StatsStore {
  const q = <T>(x: Statement) => ex.query<T>(x.text, x.values);
  const compiled = async <T>(read: () => Promise<T>) => {
    await ex.exec(SCOPE_PASS_JIT.on);
    try {
      return await read();
    } finally {
      // In a transaction the pass's failure aborted, this fails too, and the ROLLBACK resets jit.
      await ex.exec(SCOPE_PASS_JIT.off).catch(() => {});
    }
  };
  return {
    readSidePlans: () => ex.exec(READ_SIDE_PLANS),
    async overview(reads, alongside) {
      const sql = overviewSql(reads);
      // The census (or the scope's pass) and the active statement on this session; the series, the
      // small state reads and the open items (after the totals, which a scope's count needs) on
      // `alongside` when given — the same snapshot, both at once, about even (10M records: census
      // 13 ms + active 27 against series 26 + open items 5 + the rest 2).
      const pass = () => q<{ name: string; operation: string; n: bigint }>(sql.totals);
      const totals = reads.filters.scope ? compiled(pass) : pass();
      const records = async () => ({ totals: await totals, ...foldActive(activeGroupRows(await q<ActiveStatusRow>(sql.active), reads.pendingAgeBounds)) });
      const events = async (run: <T>(s: Statement) => Promise<T[]>) => ({
        series: await run<{ b: Date; operation: string; kind: string; n: bigint }>(sql.series),
        rollup: await run<RollupStateRow>(sql.rollup),
        operations: await run<{ operation: string }>(sql.operations),
        scopes: await run<{ scope: string }>(sql.scopes),
        departures: await run<DepartureRow>(sql.departures),
        census: await run<{ verifiedAt: Date; drift: bigint }>(sql.census),
        open: await countOpenItems(sql, await totals, run, OPEN_ITEM_COST),
      });
      if (!alongside) return { ...(await records()), ...(await events(q)) };
      const [r, e] = await Promise.all([records(), events((s) => alongside.query(s.text, s.values))]);
      return { ...r, ...e };
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

    conflictGroups: (input) =>
      q<ConflictGroupRow>(
        conflictRowsSql(input, {
          select: `e.operation, e.scope, count(*)::bigint AS conflicts, count(DISTINCT e.idempotency_key)::bigint AS keys,
             min(e.occurred_at) AS "firstAt", max(e.occurred_at) AS "lastAt"`,
          outer: () => `GROUP BY e.operation, e.scope ORDER BY count(*) DESC, e.operation, e.scope`,
        }),
      ),
    conflictTrend: (input, bucket) =>
      q<{ b: Date; operation: string; n: bigint }>(
        conflictRowsSql(input, {
          select: `date_trunc('${bucket}', e.occurred_at, 'UTC') AS b, e.operation, count(*)::bigint AS n`,
          outer: () => `GROUP BY 1, 2`,
        }),
      ),
    conflictPage(input, limit) {
      // Newest first; each operation's range read in index order, then merged.
      let take = "";
      return q<ConflictEvent & { cursorTime: string }>(
        conflictRowsSql(input, {
          select: `e.id, e.occurred_at AS "occurredAt", e.operation, e.scope, e.idempotency_key AS "idempotencyKey",
             e.record_id AS "recordId", e.detail->>'expectedPayloadHash' AS "expectedPayloadHash",
             COALESCE(e.detail->>'receivedPayloadHash', e.payload_hash) AS "receivedPayloadHash",
             ${cursorTimeSql("e.occurred_at")} AS "cursorTime"`,
          inner: (p) => {
            take = p.add(limit + 1);
            const cursor = input.cursor ? `AND (e.occurred_at, e.id) < (${p.add(input.cursor.t)}::timestamptz, ${p.add(input.cursor.id)}::bigint)` : "";
            return `${cursor} ORDER BY e.occurred_at DESC, e.id DESC LIMIT ${take}`;
          },
          outer: () => `ORDER BY e.occurred_at DESC, e.id DESC LIMIT ${take}`,
        }),
      );
    },

    expiringPerHour: (f, now) => q<{ i: number; n: bigint }>(expiringSql({ ...f, now }, "hour")),
    expiringPerDay: (f, now) => q<{ i: number; n: bigint }>(expiringSql({ ...f, now }, "day")),
    expiredGroups: (f, now, rules, part) => q<ExpiredRow>(expiredSql({ ...f, now, rules, part })),
    oldestExpired: (groups, now) => q<{ operation: string; status: string; oldest: Date }>(oldestExpiredSql(groups, now)),
  };
}
