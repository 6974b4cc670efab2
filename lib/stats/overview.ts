import { EVENT_KINDS, RECORD_STATUSES, REQUEST_KINDS, type EventKind, type RecordStatus } from "../kernel/vocabulary";
import { z } from "zod";
import type { ReadDatabase } from "../db/client";
import { isServerMode } from "../db/config";
import { lagJson, readLag, type ReadLag } from "../db/replica";
import { inSharedSnapshot, type SpareSession, type SqlExecutor } from "../db/sql";
import { operationSchema, scopeSchema } from "../idempotency/schemas";
import { describeThresholds, readSideConfig, type StuckThresholds } from "../records/config";
import { departureRows, type Departure, type ExpiryInterval } from "./census";
import { countPlan } from "./count-plan";
import { expiryBuckets, statsStore, type OverviewReads } from "./store";
import { isoTime, optional, resolveRange } from "../kernel/input";

/**
 * The overview: every number on the console's first screen, for a time range and
 * optional operation/scope filters (which apply to every number).
 *
 * Record side (live state, exact; no counters on the writers' tables — ADR 0006, 0007):
 * - all records, expired but not purged, expiring in the next 24 h and the 7-day forecast
 *   (24 h buckets from asOf, as lib/stats/expiry.ts): the record totals — without a scope
 *   from the record census (lib/stats/census.ts: records per operation and expiry hour,
 *   kept from the rollups' watermark, + the partial hours at the edges + the records not
 *   counted yet), so they read a few thousand rows whatever the table size; with a scope,
 *   one pass over the scope's rows;
 * - records by status: processing and pending from the ranges below, failed from the census
 *   too (its failed count per operation and hour, ADR 0016; with a scope: the scope pass
 *   above); completed = all − those three (status is CHECK-constrained);
 * - processing/pending by operation (stuck = processing and unchanged for longer than its
 *   operation's STUCK_THRESHOLDS, oldest pending) and the pending age distribution: one read of
 *   the unsettled-status index's ranges, grouped by operation and age bucket (store.ts foldActive);
 * - open reconciliation items: (state, next_check_at).
 *
 * Event side (requests, replays, conflicts, rates, the charts): the event counts of
 * lib/stats/rollups.ts — the statement countEvents and /api/metrics use too — per chart
 * bucket: the coarsest rollup tier whose grain divides the chart step (day, hour,
 * 15 minutes) for the whole buckets, finer tiers for the partial ones at the edges, raw
 * events for the partial minutes and for what is not rolled up yet; ONE statement grouped
 * per chart bucket, so the totals are the sums of the series, exact and from one snapshot.
 * Requests = reserved + replayed + conflict + in_progress events (REQUEST_KINDS, the
 * definition lib/stats/conflicts.ts uses); replay rate = replayed ÷ requests, conflict
 * rate = conflict ÷ requests (null without requests).
 *
 * On a database server (PostgreSQL, MySQL/MariaDB) all of it is read in one REPEATABLE READ
 * READ ONLY transaction (`snapshot`; dialect.snapshot), so the numbers agree with each
 * other. Not on the embedded PGlite: it is one connection shared by every request, and a
 * BEGIN there would sweep other requests' statements into this read-only transaction.
 *
 * The statements: store.ts (StatsStore.overview; the set, overviewStatements), each dialect's
 * builders in store.postgres.ts and store.mysql.ts.
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
  /** One REPEATABLE READ READ ONLY transaction for everything (a database server; see above). Default true. */
  snapshot?: boolean;
  /**
   * The read side's lag (lib/db/replica.ts, ADR 0013), measured before the snapshot: the data is read
   * as of `lag.asOf` (its `now`), and the answer says how far behind the primary it is.
   */
  lag?: ReadLag;
  /** A second session to read alongside `session` in its snapshot (ReadDatabase.withSpareSession). */
  spare?: SpareSession;
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
  /**
   * When the data was read: ages, thresholds and expiry windows are relative to it. Read off a
   * replica, the moment its data is current to (now − its lag).
   */
  asOf: Date;
  /** Where the data comes from (ADR 0013): null for the primary, else the replica's lag (seconds; null: cannot tell). */
  replica: { replicating: boolean; lagSeconds: number | null } | null;
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

export function thresholdOf(t: StuckThresholds, operation: string): number {
  return t.byOperation[operation] ?? t.defaultSeconds;
}

const floorTo = (ms: number, step: number) => Math.floor(ms / step) * step;

/** The expires_at intervals the overview counts records in (lib/stats/census.ts names them). */
export function recordIntervals(now: Date): ExpiryInterval[] {
  return [
    { name: "all", from: null, to: null },
    { name: "expired", from: null, to: now },
    { name: "next24h", from: now, to: new Date(now.getTime() + DAY_MS) },
    // The forecast: today (from asOf) and the next UTC days, the Expiry page's first day buckets.
    ...forecastBuckets(now).map((b, i) => ({ name: `d${i}`, from: b.start, to: b.end })),
  ];
}

/** The 7-day forecast's buckets: the UTC day of `now` from `now`, then whole UTC days (expiryBuckets). */
const forecastBuckets = (now: Date) => expiryBuckets(now, "day", FORECAST_DAYS).slice(0, FORECAST_DAYS);

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

/**
 * Runs `fn` in one read-only snapshot (dialect.snapshot) under the read side's planner settings
 * (StatsStore.readSidePlans), or as is (the embedded PGlite: see above). With `spare`, `fn` may
 * get a second session in the same snapshot to read alongside (inSharedSnapshot: PostgreSQL, when
 * the pool has a connection free), else null.
 */
export async function inSnapshot<T>(session: SqlExecutor, snapshot: boolean, fn: (other: SqlExecutor | null) => Promise<T>, spare?: SpareSession): Promise<T> {
  if (!snapshot) return fn(null);
  return inSharedSnapshot(session, spare, fn, (s) => statsStore(s).readSidePlans());
}

/**
 * What the overview reads for `input` at `now` (the store runs it: store.ts overviewStatements,
 * also for bench/read-side.ts's EXPLAIN).
 */
export function overviewReads(input: OverviewInput, now: Date, thresholds: StuckThresholds): OverviewReads {
  const stepSeconds = seriesStep(input.from, input.to).seconds;
  return {
    filters: { operation: input.operation, scope: input.scope },
    now,
    thresholds,
    recordIntervals: recordIntervals(now),
    pendingAgeBounds: PENDING_AGE_BUCKETS.slice(1).map((b) => b.minSeconds),
    series: { plan: countPlan(input, { stepSeconds }), stepSeconds },
  };
}

const ageSeconds = (now: Date, since: Date | null) => (since ? Math.max(0, Math.floor((now.getTime() - since.getTime()) / 1000)) : null);

/**
 * GET /api/v1/stats/overview: the overview off the read side (a replica with DATABASE_READ_URL,
 * ADR 0013), its lag measured first on the same connection, then everything as of the moment its
 * data is current to.
 */
export function readOverview(read: ReadDatabase, input: OverviewInput, opts: Omit<OverviewOptions, "lag" | "snapshot" | "now"> = {}): Promise<Overview> {
  return read.withSession(async (session) =>
    overviewStats(session, input, { ...opts, snapshot: isServerMode(read.mode), lag: await readLag(read, session), spare: read.withSpareSession }),
  );
}

/**
 * Everything the overview shows. `session` must be one connection when `snapshot` is on
 * (Database.withSession).
 */
export async function overviewStats(session: SqlExecutor, input: OverviewInput, opts: OverviewOptions = {}): Promise<Overview> {
  const now = opts.now ?? opts.lag?.asOf ?? new Date();
  const thresholds = opts.thresholds ?? readSideConfig().stuck;
  const step = seriesStep(input.from, input.to);
  const reads = overviewReads(input, now, thresholds);

  const data = await inSnapshot(session, opts.snapshot ?? true, (other) => statsStore(session).overview(reads, other), opts.spare);

  const totalOf = (name: string) => data.totals.reduce((s, r) => s + (r.name === name ? Number(r.n) : 0), 0);
  // Processing and pending from the active statement (per operation, every filter), failed from
  // the census or the scope's pass: each unsettled record read once (scope-counts.ts).
  const activeOf = (field: "processing" | "pending") => data.active.reduce((s, a) => s + Number(a[field]), 0);
  const processing = activeOf("processing");
  const pending = activeOf("pending");
  const failed = totalOf("status:failed");
  const byStatus: Record<RecordStatus, number> = { processing, pending, completed: totalOf("all") - processing - pending - failed, failed };

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
  const minDate = (dates: (Date | null)[]) => dates.reduce<Date | null>((m, d) => (d && (!m || d.getTime() < m.getTime()) ? d : m), null);
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

  const expiringNext24h = totalOf("next24h");
  const forecast = forecastBuckets(now).map((b, i) => ({ ...b, count: totalOf(`d${i}`) }));
  const ageCounts = new Map(data.ages.map((r) => [Number(r.i), Number(r.n)]));
  const [rollup] = data.rollup;

  return {
    asOf: now,
    replica: opts.lag ? lagJson(opts.lag) : null,
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
