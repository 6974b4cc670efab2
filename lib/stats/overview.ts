import { EVENT_KINDS, OPEN_RECONCILIATION_STATES, RECORD_STATUSES, REQUEST_KINDS, type EventKind, type RecordStatus } from "../kernel/vocabulary";
import { z } from "zod";
import { inTransaction, SNAPSHOT, type SqlExecutor } from "../db/sql";
import { operationSchema, scopeSchema } from "../idempotency/schemas";
import { describeThresholds, readSideConfig, type StuckThresholds } from "../records/config";
import { DEPARTURES_SQL, departureRows, recordCensusSql, type Departure, type ExpiryInterval } from "./census";
import { eventCountsSql } from "./rollups";
import { isoTime, optional, resolveRange } from "../kernel/input";
import { paramList } from "../db/params";

/**
 * The overview: every number on the console's first screen, for a time range and
 * optional operation/scope filters (which apply to every number).
 *
 * Record side (live state, exact; no counters on the writers' tables — ADR 0006, 0007):
 * - all records, expired but not purged, expiring in the next 24 h and the 7-day forecast
 *   (24 h buckets from asOf, as lib/stats/expiry.ts): recordTotalsSql — without a scope
 *   from the record census (lib/stats/census.ts: records per operation and expiry hour,
 *   kept from the rollups' watermark, + the partial hours at the edges + the records not
 *   counted yet), so they read a few thousand rows whatever the table size; with a scope,
 *   one pass over the scope's rows;
 * - records by status: processing, pending and failed are index-only ranges of the partial
 *   index (status, operation, updated_at) WHERE status <> 'completed' (with a scope: the
 *   scope pass above); completed = all − those three (status is CHECK-constrained);
 * - processing/pending by operation (stuck = processing and unchanged for longer than its
 *   operation's STUCK_THRESHOLDS, oldest pending, pending age distribution): ranges of the
 *   same index;
 * - open reconciliation items: (state, next_check_at).
 *
 * Event side (requests, replays, conflicts, rates, the charts): lib/stats/rollups.ts
 * eventCountsSql — the query builder countEvents and /api/metrics use too — per chart
 * bucket: the coarsest rollup tier whose grain divides the chart step (day, hour,
 * 15 minutes) for the whole buckets, finer tiers for the partial ones at the edges, raw
 * events for the partial minutes and for what is not rolled up yet; ONE statement grouped
 * per chart bucket, so the totals are the sums of the series, exact and from one snapshot.
 * Requests = reserved + replayed + conflict + in_progress events (REQUEST_KINDS, the
 * definition lib/stats/conflicts.ts uses); replay rate = replayed ÷ requests, conflict
 * rate = conflict ÷ requests (null without requests).
 *
 * On Postgres all of it is read in one REPEATABLE READ READ ONLY transaction (`snapshot`),
 * so the numbers agree with each other. Not on the embedded PGlite: it is one connection
 * shared by every request, and a BEGIN there would sweep other requests' statements into
 * this read-only transaction.
 */

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
export const MAX_RANGE_MS = 400 * DAY_MS;

/** Chart bucket sizes, chosen from the span of the range (at most ~400 points). */
export const SERIES_STEPS = [
  { name: "1m", seconds: 60, upToMs: 3 * HOUR_MS },
  { name: "15m", seconds: 900, upToMs: 2 * DAY_MS },
  { name: "1h", seconds: 3600, upToMs: 14 * DAY_MS },
  { name: "1d", seconds: 86400, upToMs: Infinity },
] as const;
export type SeriesStep = (typeof SERIES_STEPS)[number];

export function seriesStep(from: Date, to: Date): SeriesStep {
  const span = to.getTime() - from.getTime();
  return SERIES_STEPS.find((s) => span <= s.upToMs) ?? SERIES_STEPS[SERIES_STEPS.length - 1];
}

/** Pending age buckets (lower bounds in seconds; the last is open-ended). */
export const PENDING_AGE_BUCKETS = [
  { label: "< 5 min", minSeconds: 0 },
  { label: "5–15 min", minSeconds: 300 },
  { label: "15 min–1 h", minSeconds: 900 },
  { label: "1–6 h", minSeconds: 3600 },
  { label: "6–24 h", minSeconds: 21600 },
  { label: "1–7 d", minSeconds: 86400 },
  { label: "> 7 d", minSeconds: 604800 },
] as const;

export const FORECAST_DAYS = 7;

export const overviewQuerySchema = z
  .object({
    from: optional(isoTime),
    to: optional(isoTime),
    operation: optional(operationSchema),
    scope: optional(scopeSchema),
  })
  .strict()
  .transform((v, ctx) => {
    const range = resolveRange(v, { defaultSpanMs: DAY_MS, maxSpanMs: MAX_RANGE_MS });
    if (typeof range === "string") {
      ctx.addIssue({ code: "custom", message: range, path: ["from"] });
      return z.NEVER;
    }
    return { ...range, operation: v.operation, scope: v.scope };
  });

export type OverviewQuery = z.output<typeof overviewQuerySchema>;

export interface OverviewInput {
  from: Date;
  to: Date;
  operation?: string;
  scope?: string;
}

export interface OverviewOptions {
  /** The moment the data is read at (ages, stuck thresholds, expiry windows); default: now. */
  now?: Date;
  thresholds?: StuckThresholds;
  /** One REPEATABLE READ READ ONLY transaction for everything (Postgres; see above). Default true. */
  snapshot?: boolean;
}

export interface EventTotals {
  requests: number;
  reserved: number;
  replays: number;
  conflicts: number;
  inProgress: number;
  completed: number;
  failed: number;
  pending: number;
  reconciled: number;
  /** replayed ÷ requests; null without requests. */
  replayRate: number | null;
  /** conflict ÷ requests; null without requests. */
  conflictRate: number | null;
}

export interface OperationState {
  operation: string;
  processing: number;
  stuck: number;
  stuckThresholdSeconds: number;
  oldestStuckSince: Date | null;
  pending: number;
  oldestPendingSince: Date | null;
  oldestPendingAgeSeconds: number | null;
  expiredNotPurged: number;
}

export interface ForecastBucket {
  start: Date;
  end: Date;
  count: number;
}

export interface Overview {
  /** When the data was read: ages, thresholds and expiry windows are relative to it. */
  asOf: Date;
  from: Date;
  to: Date;
  filters: { operation: string | null; scope: string | null };
  records: { byStatus: Record<RecordStatus, number>; total: number };
  events: { total: EventTotals; byOperation: ({ operation: string } & EventTotals)[] };
  stuck: { count: number; oldestSince: Date | null; oldestAgeSeconds: number | null; thresholds: Record<string, string> };
  pending: { count: number; oldestSince: Date | null; oldestAgeSeconds: number | null };
  /** Records per operation that are processing/pending/expired, with their stuck threshold. */
  operations: OperationState[];
  reconciliation: { open: number };
  expiry: { expiringNext24h: number; expiredNotPurged: number; forecast: ForecastBucket[] };
  pendingAges: { label: string; minSeconds: number; maxSeconds: number | null; count: number }[];
  series: {
    step: { name: string; seconds: number };
    /** Events by kind per bucket (bucket start, UTC; the first and last may be partial). */
    transitions: { start: Date; counts: Record<EventKind, number>; total: number }[];
    /** Per bucket and operation: requests, conflicts and conflict ÷ requests (null without requests). */
    conflictRate: { start: Date; byOperation: Record<string, { requests: number; conflicts: number; rate: number | null }> }[];
  };
  rollups: {
    watermark: bigint;
    /** Events not rolled up yet (id above the watermark); counted raw meanwhile, so totals stay exact. */
    lagEvents: number;
    gapsOpen: number;
    refreshedAt: Date | null;
    /** Seconds since the last refresh finished (null if never). */
    lagSeconds: number | null;
  };
  /** For the filter controls: every operation seen in the events, and up to 100 scopes. */
  known: { operations: string[]; scopes: string[] };
  /**
   * The record census's view of the writers (lib/stats/census.ts): what it saw them do outside
   * the protocol (each followed exactly, or repaired once found), and when the full check last ran.
   */
  census: { departures: Departure[]; verifiedAt: Date | null; lastCheckDrift: number | null };
}

type Params = ReturnType<typeof paramList>;

function recordFilters(p: Params, f: { operation?: string; scope?: string }, alias = "r"): string {
  return [
    ...(f.operation ? [` AND ${alias}.operation = ${p.add(f.operation)}`] : []),
    ...(f.scope ? [` AND ${alias}.scope = ${p.add(f.scope)}`] : []),
  ].join("");
}

/** SQL for the stuck threshold (seconds) of the row's operation. */
function thresholdSql(p: Params, t: StuckThresholds, alias = "r"): string {
  const ops = Object.keys(t.byOperation);
  if (!ops.length) return `${p.add(t.defaultSeconds)}::float8`;
  return `CASE ${alias}.operation ${ops.map((op) => `WHEN ${p.add(op)}::text THEN ${p.add(t.byOperation[op])}::float8`).join(" ")} ELSE ${p.add(t.defaultSeconds)}::float8 END`;
}

export function thresholdOf(t: StuckThresholds, operation: string): number {
  return t.byOperation[operation] ?? t.defaultSeconds;
}

const floorTo = (ms: number, step: number) => Math.floor(ms / step) * step;

/** The processing and pending records by operation (two small ranges of (status, updated_at)). */
export function activeByOperationSql(f: { operation?: string; scope?: string }, t: StuckThresholds, now: Date) {
  const p = paramList();
  const nowP = p.add(now);
  const threshold = thresholdSql(p, t);
  const stuck = `r.status = 'processing' AND r.updated_at < ${nowP}::timestamptz - make_interval(secs => ${threshold})`;
  return {
    text: `SELECT r.operation,
                  count(*) FILTER (WHERE r.status = 'processing')::bigint AS processing,
                  count(*) FILTER (WHERE ${stuck})::bigint AS stuck,
                  min(r.updated_at) FILTER (WHERE ${stuck}) AS "oldestStuck",
                  count(*) FILTER (WHERE r.status = 'pending')::bigint AS pending,
                  min(r.updated_at) FILTER (WHERE r.status = 'pending') AS "oldestPending"
             FROM idempotency_records r
            WHERE r.status IN ('processing', 'pending')${recordFilters(p, f)}
            GROUP BY r.operation`,
    values: p.values,
  };
}

/** The expires_at intervals the overview counts records in (lib/stats/census.ts names them). */
export function recordIntervals(now: Date): ExpiryInterval[] {
  return [
    { name: "all", from: null, to: null },
    { name: "expired", from: null, to: now },
    // The forecast: 24 h buckets from asOf (as lib/stats/expiry.ts); "expiring in the next 24 h" is d0.
    ...Array.from({ length: FORECAST_DAYS }, (_, i) => ({
      name: `d${i}`,
      from: new Date(now.getTime() + i * DAY_MS),
      to: new Date(now.getTime() + (i + 1) * DAY_MS),
    })),
  ];
}

/**
 * Records by expires_at interval (recordIntervals) and operation: all of them, expired
 * but not purged, and the forecast days. Without a scope, from the record census
 * (lib/stats/census.ts: census hours + partial hours at the edges + records not counted
 * yet). With a scope (no census per scope; a scope's records are few), one pass over the
 * scope's rows. Rows: { name, operation, n }.
 */
export function recordTotalsSql(f: { operation?: string; scope?: string }, now: Date): { text: string; values: unknown[] } {
  if (!f.scope) return recordCensusSql(recordIntervals(now), { operation: f.operation });
  const p = paramList();
  const nowP = `${p.add(now)}::timestamptz`;
  return {
    text: `SELECT k.name, r.operation, count(*)::bigint AS n FROM idempotency_records r
             CROSS JOIN LATERAL (
               SELECT 'all'
               UNION ALL SELECT 'status:' || r.status WHERE r.status <> 'completed'
               UNION ALL SELECT 'expired' WHERE r.expires_at < ${nowP}
               UNION ALL SELECT 'd' || floor(extract(epoch FROM r.expires_at - ${nowP}) / 86400)::int
                 WHERE r.expires_at >= ${nowP} AND r.expires_at < ${nowP} + make_interval(days => ${p.add(FORECAST_DAYS)})
             ) k(name)
            WHERE TRUE${recordFilters(p, f)}
            GROUP BY 1, 2`,
    values: p.values,
  };
}

/**
 * Open reconciliation items (open, checking, needs_manual); filtered through their record:
 * one primary-key probe per open item (OFFSET 0 keeps the planner from turning it into a
 * join that reads every record of the scope), so it reads O(open items) whatever the filter.
 */
export function openReconciliationSql(f: { operation?: string; scope?: string }) {
  const p = paramList();
  const states = p.add([...OPEN_RECONCILIATION_STATES]);
  const filters = recordFilters(p, f);
  return {
    text: filters
      ? `SELECT count(*)::bigint AS n FROM reconciliation_items i
          CROSS JOIN LATERAL (SELECT r.operation, r.scope FROM idempotency_records r WHERE r.id = i.record_id OFFSET 0) r
          WHERE i.state = ANY (${states}::text[])${filters}`
      : `SELECT count(*)::bigint AS n FROM reconciliation_items i WHERE i.state = ANY (${states}::text[])`,
    values: p.values,
  };
}

/**
 * The three small statuses, exact, in one statement (rows: { name: 'status:<status>', n });
 * completed = all (recordTotalsSql) − these (status is CHECK-constrained to the four).
 * Index-only ranges of the partial index (status, operation, updated_at) WHERE status <>
 * 'completed' (migration 20261130080000). With a scope, recordTotalsSql's one pass over the
 * scope's rows counts them too, and this reads nothing.
 */
export function statusCountsSql(f: { operation?: string; scope?: string }) {
  if (f.scope) return { text: `SELECT NULL::text AS name, 0::bigint AS n WHERE FALSE`, values: [] as unknown[] };
  const p = paramList();
  const fr = recordFilters(p, f);
  const count = (status: string) => `SELECT 'status:${status}' AS name, count(*)::bigint AS n FROM idempotency_records r WHERE r.status = '${status}'${fr}`;
  return {
    text: `${count("processing")} UNION ALL ${count("pending")} UNION ALL ${count("failed")}`,
    values: p.values,
  };
}

export function pendingAgesSql(f: { operation?: string; scope?: string }, now: Date) {
  const p = paramList();
  const nowP = p.add(now);
  const bounds = p.add(PENDING_AGE_BUCKETS.slice(1).map((b) => b.minSeconds));
  return {
    text: `SELECT width_bucket(extract(epoch FROM ${nowP}::timestamptz - r.updated_at)::float8, ${bounds}::float8[]) AS i, count(*)::bigint AS n
             FROM idempotency_records r WHERE r.status = 'pending'${recordFilters(p, f)} GROUP BY 1`,
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

function emptyTotals(): Omit<EventTotals, "replayRate" | "conflictRate"> {
  return { requests: 0, reserved: 0, replays: 0, conflicts: 0, inProgress: 0, completed: 0, failed: 0, pending: 0, reconciled: 0 };
}

const KIND_FIELD: Record<EventKind, keyof ReturnType<typeof emptyTotals>> = {
  reserved: "reserved",
  replayed: "replays",
  conflict: "conflicts",
  in_progress: "inProgress",
  completed: "completed",
  failed: "failed",
  pending: "pending",
  reconciled: "reconciled",
};

function addKind(t: ReturnType<typeof emptyTotals>, kind: string, n: number) {
  const field = KIND_FIELD[kind as EventKind];
  if (field) t[field] += n;
  if ((REQUEST_KINDS as readonly string[]).includes(kind)) t.requests += n;
}

function withRates(t: ReturnType<typeof emptyTotals>): EventTotals {
  return { ...t, replayRate: t.requests ? t.replays / t.requests : null, conflictRate: t.requests ? t.conflicts / t.requests : null };
}

/** Event totals per operation and kind → EventTotals per operation and overall. */
export function totalsOf(rows: { operation: string; kind: string; count: number }[]) {
  const total = emptyTotals();
  const byOp = new Map<string, ReturnType<typeof emptyTotals>>();
  for (const r of rows) {
    addKind(total, r.kind, r.count);
    const o = byOp.get(r.operation) ?? emptyTotals();
    addKind(o, r.kind, r.count);
    byOp.set(r.operation, o);
  }
  return {
    total: withRates(total),
    byOperation: [...byOp.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([operation, t]) => ({ operation, ...withRates(t) })),
  };
}

/** Bucket starts (UTC-aligned to the step) covering [from, to). */
export function seriesBuckets(from: Date, to: Date, stepSeconds: number): Date[] {
  const step = stepSeconds * 1000;
  const out: Date[] = [];
  for (let t = floorTo(from.getTime(), step); t < to.getTime(); t += step) out.push(new Date(t));
  return out;
}

/** Runs `fn` in one read-only snapshot (or as is). */
export async function inSnapshot<T>(session: SqlExecutor, snapshot: boolean, fn: () => Promise<T>): Promise<T> {
  return snapshot ? inTransaction(session, fn, SNAPSHOT) : fn();
}

/** Every statement overviewStats runs, by name (for bench/read-side.ts's EXPLAIN). */
export function overviewSql(input: OverviewInput, now: Date, thresholds: StuckThresholds) {
  const f = { operation: input.operation, scope: input.scope };
  const plain = (text: string) => ({ text, values: [] as unknown[] });
  return {
    status: statusCountsSql(f),
    totals: recordTotalsSql(f, now),
    active: activeByOperationSql(f, thresholds, now),
    ages: pendingAgesSql(f, now),
    open: openReconciliationSql(f),
    series: eventCountsSql(input, { stepSeconds: seriesStep(input.from, input.to).seconds }),
    rollup: plain(ROLLUP_STATE_SQL),
    operations: plain(KNOWN_OPERATIONS_SQL),
    scopes: plain(KNOWN_SCOPES_SQL),
    departures: plain(DEPARTURES_SQL),
    census: plain(CENSUS_STATE_SQL),
  };
}

const q = <T>(s: SqlExecutor, x: { text: string; values: unknown[] }) => s.query<T>(x.text, x.values);
const ageSeconds = (now: Date, since: Date | null) => (since ? Math.max(0, Math.floor((now.getTime() - since.getTime()) / 1000)) : null);

/**
 * Everything the overview shows. `session` must be one connection when `snapshot` is on
 * (Database.withSession).
 */
export async function overviewStats(session: SqlExecutor, input: OverviewInput, opts: OverviewOptions = {}): Promise<Overview> {
  const now = opts.now ?? new Date();
  const thresholds = opts.thresholds ?? readSideConfig().stuck;
  const step = seriesStep(input.from, input.to);
  const sql = overviewSql(input, now, thresholds);

  const data = await inSnapshot(session, opts.snapshot ?? true, async () => ({
    status: await q<{ name: string; n: bigint }>(session, sql.status),
    totals: await q<{ name: string; operation: string; n: bigint }>(session, sql.totals),
    active: await q<{ operation: string; processing: bigint; stuck: bigint; oldestStuck: Date | null; pending: bigint; oldestPending: Date | null }>(
      session,
      sql.active,
    ),
    ages: await q<{ i: number; n: bigint }>(session, sql.ages),
    open: await q<{ n: bigint }>(session, sql.open),
    series: await q<{ b: Date; operation: string; kind: string; n: bigint }>(session, sql.series),
    rollup: await q<{ watermark: bigint; refreshedAt: Date | null; lag: bigint; gaps: bigint }>(session, sql.rollup),
    operations: await q<{ operation: string }>(session, sql.operations),
    scopes: await q<{ scope: string }>(session, sql.scopes),
    departures: await q<{ kind: string; records: bigint; firstSeenAt: Date; lastSeenAt: Date }>(session, sql.departures),
    census: await q<{ verifiedAt: Date; drift: bigint }>(session, sql.census),
  }));

  const totalOf = (name: string) => [...data.totals, ...data.status].reduce((s, r) => s + (r.name === name ? Number(r.n) : 0), 0);
  const byStatus: Record<RecordStatus, number> = {
    processing: totalOf("status:processing"),
    pending: totalOf("status:pending"),
    completed: totalOf("all") - totalOf("status:processing") - totalOf("status:pending") - totalOf("status:failed"),
    failed: totalOf("status:failed"),
  };

  // Per operation: processing/pending/stuck and expired, merged.
  const ops = new Map<string, OperationState>();
  const opState = (operation: string) => {
    let o = ops.get(operation);
    if (!o) {
      o = {
        operation,
        processing: 0,
        stuck: 0,
        stuckThresholdSeconds: thresholdOf(thresholds, operation),
        oldestStuckSince: null,
        pending: 0,
        oldestPendingSince: null,
        oldestPendingAgeSeconds: null,
        expiredNotPurged: 0,
      };
      ops.set(operation, o);
    }
    return o;
  };
  for (const a of data.active) {
    const o = opState(a.operation);
    o.processing = Number(a.processing);
    o.stuck = Number(a.stuck);
    o.oldestStuckSince = a.oldestStuck;
    o.pending = Number(a.pending);
    o.oldestPendingSince = a.oldestPending;
    o.oldestPendingAgeSeconds = ageSeconds(now, a.oldestPending);
  }
  for (const e of data.totals) if (e.name === "expired") opState(e.operation).expiredNotPurged = Number(e.n);
  const operations = [...ops.values()].sort((a, b) => a.operation.localeCompare(b.operation));
  const minDate = (dates: (Date | null)[]) =>
    dates.reduce<Date | null>((m, d) => (d && (!m || d.getTime() < m.getTime()) ? d : m), null);
  const oldestStuck = minDate(operations.map((o) => o.oldestStuckSince));
  const oldestPending = minDate(operations.map((o) => o.oldestPendingSince));

  // Events: the series, and the totals as its sums.
  const rows = data.series.map((r) => ({ b: r.b, operation: r.operation, kind: r.kind, count: Number(r.n) }));
  const events = totalsOf(rows);
  const buckets = seriesBuckets(input.from, input.to, step.seconds);
  const index = new Map(buckets.map((b, i) => [b.getTime(), i]));
  const transitions = buckets.map((start) => ({
    start,
    counts: Object.fromEntries(EVENT_KINDS.map((k) => [k, 0])) as Record<EventKind, number>,
    total: 0,
  }));
  const opNames = events.byOperation.map((o) => o.operation);
  const conflictRate = buckets.map((start) => ({
    start,
    byOperation: Object.fromEntries(opNames.map((op) => [op, { requests: 0, conflicts: 0, rate: null as number | null }])),
  }));
  for (const r of rows) {
    const i = index.get(r.b.getTime());
    if (i === undefined) throw new Error(`event bucket ${r.b.toISOString()} outside the range`); // cannot happen: both from date_bin on the epoch
    const t = transitions[i];
    if (r.kind in t.counts) t.counts[r.kind as EventKind] += r.count;
    t.total += r.count;
    const c = conflictRate[i].byOperation[r.operation];
    if ((REQUEST_KINDS as readonly string[]).includes(r.kind)) c.requests += r.count;
    if (r.kind === "conflict") c.conflicts += r.count;
  }
  for (const b of conflictRate) for (const c of Object.values(b.byOperation)) c.rate = c.requests ? c.conflicts / c.requests : null;

  const expiringNext24h = totalOf("d0");
  const forecast = Array.from({ length: FORECAST_DAYS }, (_, i) => ({
    start: new Date(now.getTime() + i * DAY_MS),
    end: new Date(now.getTime() + (i + 1) * DAY_MS),
    count: totalOf(`d${i}`),
  }));
  const ageCounts = new Map(data.ages.map((r) => [Number(r.i), Number(r.n)]));
  const [rollup] = data.rollup;

  return {
    asOf: now,
    from: input.from,
    to: input.to,
    filters: { operation: input.operation ?? null, scope: input.scope ?? null },
    records: { byStatus, total: RECORD_STATUSES.reduce((s, k) => s + byStatus[k], 0) },
    events,
    stuck: {
      count: operations.reduce((s, o) => s + o.stuck, 0),
      oldestSince: oldestStuck,
      oldestAgeSeconds: ageSeconds(now, oldestStuck),
      thresholds: describeThresholds(thresholds),
    },
    pending: { count: operations.reduce((s, o) => s + o.pending, 0), oldestSince: oldestPending, oldestAgeSeconds: ageSeconds(now, oldestPending) },
    operations,
    reconciliation: { open: Number(data.open[0].n) },
    expiry: { expiringNext24h, expiredNotPurged: operations.reduce((s, o) => s + o.expiredNotPurged, 0), forecast },
    pendingAges: PENDING_AGE_BUCKETS.map((b, i) => ({
      label: b.label,
      minSeconds: b.minSeconds,
      maxSeconds: PENDING_AGE_BUCKETS[i + 1]?.minSeconds ?? null,
      count: ageCounts.get(i) ?? 0,
    })),
    series: { step: { name: step.name, seconds: step.seconds }, transitions, conflictRate },
    rollups: {
      watermark: rollup.watermark,
      lagEvents: Number(rollup.lag),
      gapsOpen: Number(rollup.gaps),
      refreshedAt: rollup.refreshedAt,
      lagSeconds: ageSeconds(now, rollup.refreshedAt),
    },
    known: { operations: data.operations.map((o) => o.operation), scopes: data.scopes.map((s) => s.scope) },
    census: {
      departures: departureRows(data.departures),
      // The row exists from the refresher's first tick; a check has run once its drift is recorded after that.
      verifiedAt: data.census[0]?.verifiedAt ?? null,
      lastCheckDrift: data.census[0] ? Number(data.census[0].drift) : null,
    },
  };
}
