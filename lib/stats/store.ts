import { byDialect } from "../db/dialect";
import { plain, type Statement } from "../db/params";
import type { SqlExecutor } from "../db/sql";
import type { StuckThresholds } from "../records/config";
import type { PolicyRule } from "../retention/rules";
import type { ConflictEvent, ConflictsInput } from "./conflicts";
import type { CountPlan } from "./count-plan";
import type { CensusCountOptions, DepartureRow, ExpiryInterval } from "./census-store";
import type { OpenItemsFrom } from "./open-items";
import type { EventCountsRow } from "./rollup-store";
import { mysqlStatsStore } from "./store.mysql";
import { postgresStatsStore } from "./store.postgres";

/** The filters of the read screens; each applies to every number. */
export interface RecordFilter {
  operation?: string;
  scope?: string;
}

/** What the overview reads (lib/stats/overview.ts decides it: the intervals, buckets and the chart's count plan). */
export interface OverviewReads {
  filters: RecordFilter;
  /** The moment the data is read at (ages, stuck thresholds, expiry windows). */
  now: Date;
  thresholds: StuckThresholds;
  /**
   * The expires_at intervals of the record totals ('all', 'expired', 'd0'…): from the census
   * without a scope, in the scope's one pass (scopePass) with one.
   */
  recordIntervals: readonly ExpiryInterval[];
  /** The pending age buckets' lower bounds in seconds, the first bucket's (0) left out. */
  pendingAgeBounds: readonly number[];
  /** The chart: event counts per bucket of `stepSeconds`, as `plan` splits [from, to). */
  series: { plan: CountPlan; stepSeconds: number };
}

/** Processing and pending records of one operation; stuck = processing for longer than its threshold. */
export interface ActiveRow {
  operation: string;
  processing: bigint;
  stuck: bigint;
  oldestStuck: Date | null;
  pending: bigint;
  oldestPending: Date | null;
}

/** A group of the active statement: an operation's processing records (i null), or its pending records of age bucket i. */
export interface ActiveGroupRow extends ActiveRow {
  i: number | null;
}

/**
 * A row of the active statement (store.*.ts activeByOperationSql): the processing or pending
 * records of one operation — how many, the stuck ones (counted for both statuses, used for the
 * processing ones), the oldest updated_at, and with age bounds the records whose age has reached
 * each bound (`a0`… in ascending order of the bounds, cumulative).
 */
export type ActiveStatusRow = { status: string; operation: string; n: bigint; stuck: bigint; oldest: Date | null } & Record<`a${number}`, bigint>;

/** The pending age bounds in the order the active statement's `a0`… count them. */
export const ascendingBounds = (bounds: readonly number[]) => [...bounds].sort((a, b) => a - b);

/**
 * The active statement's rows as its groups (ActiveGroupRow): an operation's processing records
 * with i null; its pending records per age bucket i (how many of `ageBounds` the age has reached:
 * those that reached k bounds less those that reached k + 1), or with i null without bounds. The
 * oldest stuck record is the oldest processing one when any is stuck (stuck = updated before a
 * time, per operation).
 */
export function activeGroupRows(rows: readonly ActiveStatusRow[], ageBounds?: readonly number[]): ActiveGroupRow[] {
  const none = { processing: 0n, stuck: 0n, oldestStuck: null, pending: 0n, oldestPending: null };
  return rows.flatMap((r): ActiveGroupRow[] => {
    const n = BigInt(r.n);
    if (r.status === "processing") {
      const stuck = BigInt(r.stuck);
      return [{ ...none, operation: r.operation, i: null, processing: n, stuck, oldestStuck: stuck > 0n ? r.oldest : null }];
    }
    if (!ageBounds) return [{ ...none, operation: r.operation, i: null, pending: n, oldestPending: r.oldest }];
    const reached = (k: number) => (k === 0 ? n : k > ageBounds.length ? 0n : BigInt(r[`a${k - 1}`]));
    return Array.from({ length: ageBounds.length + 1 }, (_, i) => ({
      ...none,
      operation: r.operation,
      i,
      pending: reached(i) - reached(i + 1),
      oldestPending: r.oldest,
    }));
  });
}

/**
 * The active statement's groups as the overview reads them: per operation (counts summed, the
 * oldest the least), and the pending records per age bucket (all operations).
 */
export function foldActive(rows: readonly ActiveGroupRow[]): { active: ActiveRow[]; ages: { i: number; n: bigint }[] } {
  const byOperation = new Map<string, ActiveRow>();
  const ages = new Map<number, bigint>();
  const least = (a: Date | null, b: Date | null) => (a === null ? b : b === null ? a : a <= b ? a : b);
  for (const r of rows) {
    const o = byOperation.get(r.operation);
    if (!o)
      byOperation.set(r.operation, {
        operation: r.operation,
        processing: BigInt(r.processing),
        stuck: BigInt(r.stuck),
        oldestStuck: r.oldestStuck,
        pending: BigInt(r.pending),
        oldestPending: r.oldestPending,
      });
    else {
      o.processing += BigInt(r.processing);
      o.stuck += BigInt(r.stuck);
      o.oldestStuck = least(o.oldestStuck, r.oldestStuck);
      o.pending += BigInt(r.pending);
      o.oldestPending = least(o.oldestPending, r.oldestPending);
    }
    if (r.i !== null && BigInt(r.pending) > 0n) ages.set(Number(r.i), (ages.get(Number(r.i)) ?? 0n) + BigInt(r.pending));
  }
  return { active: [...byOperation.values()], ages: [...ages].map(([i, n]) => ({ i, n })) };
}

/** The rollups' progress: the events mark, when it last moved, the events above it and the gaps open. */
export interface RollupStateRow {
  watermark: bigint;
  refreshedAt: Date | null;
  lag: bigint;
  gaps: bigint;
}

/** The overview's rows, read in the caller's snapshot. */
export interface OverviewRows {
  /** Per record interval name and 'status:failed' (COUNTED_STATUSES), per operation: the census's, or a scope's pass. */
  totals: { name: string; operation: string; n: bigint }[];
  active: ActiveRow[];
  /** Pending records per age bucket (i = 0 … the number of bounds). */
  ages: { i: number; n: bigint }[];
  open: { n: bigint }[];
  series: { b: Date; operation: string; kind: string; n: bigint }[];
  rollup: RollupStateRow[];
  operations: { operation: string }[];
  scopes: { scope: string }[];
  departures: DepartureRow[];
  /** When the census check last ran and by how many records it was off (no row before the refresher's first tick). */
  census: { verifiedAt: Date; drift: bigint }[];
}

/** What a metrics scrape reads (lib/stats/metrics.ts). */
export interface MetricsReads {
  now: Date;
  thresholds: StuckThresholds;
  /** The expires_at interval of "expired, not purged". */
  expired: readonly ExpiryInterval[];
  /** The all-time event counts' plan. */
  allTime: CountPlan;
}

export interface MetricsRows {
  operations: { operation: string }[];
  active: ActiveRow[];
  expired: { name: string; operation: string; n: bigint }[];
  open: { n: bigint }[];
  totals: EventCountsRow[];
  rollup: RollupStateRow[];
}

export interface ConflictGroupRow {
  operation: string;
  scope: string;
  conflicts: bigint;
  keys: bigint;
  firstAt: Date;
  lastAt: Date;
}

export interface ExpiredRow {
  operation: string;
  status: string;
  n: bigint;
  held: bigint;
  open: bigint;
  purgeable: bigint;
  /** Past the window of its operation's policy (lib/retention/eligibility.ts), whatever else keeps it. */
  pastWindow: bigint;
  oldest: Date;
}

/**
 * Which expired records an expiredGroups statement reads: every one (a scope's Expiry page, and the
 * plain count the census-based page is checked against), the processing and pending ones, or the
 * completed and failed ones a protection may keep (lib/retention/eligibility.ts protectedRecordIdsSql).
 */
export type ExpiredPart = "all" | "unsettled" | "protected";

const UNIT_MS = { hour: 3_600_000, day: 86_400_000 } as const;

/** The start of the UTC hour or day `t` falls in (the census's hours; expiryBuckets). */
export const startOfUtc = (t: Date, per: "hour" | "day"): Date => new Date(Math.floor(t.getTime() / UNIT_MS[per]) * UNIT_MS[per]);

/**
 * The expiry histograms' buckets (the Expiry page's 24 hours and 30 days, the overview's 7-day
 * forecast): `count` UTC hours or days from `now` — the first from `now` to the next hour
 * (midnight), the last up to `now` + count units, so count + 1 buckets off the hour (midnight),
 * count on it — adding up to [now, now + count units) exactly. Their inner bounds are the
 * census's hours: only the first and the last read records (ADR 0018). Bucket i is row i of
 * expiringPerHour / expiringPerDay.
 */
export function expiryBuckets(now: Date, per: "hour" | "day", count = per === "hour" ? 24 : 30): { start: Date; end: Date }[] {
  const unit = UNIT_MS[per];
  const t = now.getTime();
  const first = startOfUtc(now, per).getTime();
  const inner = Array.from({ length: count }, (_, i) => first + (i + 1) * unit).filter((b) => b < t + count * unit);
  const bounds = [t, ...inner, t + count * unit];
  return bounds.slice(1).map((end, i) => ({ start: new Date(bounds[i]), end: new Date(end) }));
}

/** The condition each ExpiredPart adds to an expiredGroups statement (records aliased `r`). */
export const EXPIRED_PART_STATUSES: Record<ExpiredPart, string> = {
  all: "",
  unsettled: ` AND r.status IN ('processing', 'pending')`,
  protected: ` AND r.status IN ('completed', 'failed')`,
};

/**
 * The statements of the read screens (ADR 0011): the overview, the metrics scrape, the
 * conflicts and the expiry screens. What they show and how the rows become numbers is
 * their modules' (overview.ts, metrics.ts, conflicts.ts, expiry.ts).
 */
/** One dialect's statement builders for the overview and a metrics scrape (store.postgres.ts, store.mysql.ts). */
export interface StatsStatementBuilders {
  recordTotalsSql(r: Pick<OverviewReads, "filters" | "recordIntervals" | "now">): Statement;
  activeByOperationSql(f: RecordFilter, t: StuckThresholds, now: Date, ageBounds?: readonly number[]): Statement;
  openReconciliationSql(f: RecordFilter, from?: OpenItemsFrom): Statement;
  countsSql(plan: CountPlan, f: RecordFilter, step?: number): Statement;
  recordCensusSql(intervals: readonly ExpiryInterval[], f?: CensusCountOptions): Statement;
  rollupState: string;
  knownOperations: string;
  knownScopes: string;
  departures: string;
  censusState: string;
}

/**
 * Every statement the overview runs, by name, in order — the same set on every dialect (also for
 * bench/read-side.ts's EXPLAIN). With a scope, the scope's pass replaces the census and the status
 * counts, and the open items are counted from whichever side is smaller (open-items.ts).
 */
export function overviewStatements(b: StatsStatementBuilders, r: OverviewReads) {
  const f = r.filters;
  return {
    totals: b.recordTotalsSql(r),
    active: b.activeByOperationSql(f, r.thresholds, r.now, r.pendingAgeBounds),
    open: b.openReconciliationSql(f),
    ...(f.scope ? { openUnfiltered: b.openReconciliationSql({}), openFromRecords: b.openReconciliationSql(f, "records") } : {}),
    series: b.countsSql(r.series.plan, f, r.series.stepSeconds),
    rollup: plain(b.rollupState),
    operations: plain(b.knownOperations),
    scopes: plain(b.knownScopes),
    departures: plain(b.departures),
    census: plain(b.censusState),
  };
}

/** Every statement a metrics scrape runs, by name, in order — the same set on every dialect. */
export function metricsStatements(b: StatsStatementBuilders, r: MetricsReads) {
  return {
    operations: plain(b.knownOperations),
    active: b.activeByOperationSql({}, r.thresholds, r.now),
    expired: b.recordCensusSql(r.expired, { now: r.now }),
    open: b.openReconciliationSql({}),
    totals: b.countsSql(r.allTime, {}),
    rollup: plain(b.rollupState),
  };
}

export interface StatsStore {
  /**
   * The planner settings every read-side snapshot runs under (its first statement, scoped to
   * the transaction): PostgreSQL's READ_SIDE_PLANS (store.postgres.ts); nothing on MySQL.
   */
  readSidePlans(): Promise<void>;
  /**
   * Every row the overview shows, in the caller's snapshot (a few thousand rows whatever the table
   * size). `alongside`: a second session in the same snapshot to run part of the statements on at
   * once (inSnapshot), where the store can use one.
   */
  overview(reads: OverviewReads, alongside?: SqlExecutor | null): Promise<OverviewRows>;
  /** Every row a metrics scrape exports, in the caller's snapshot. */
  metrics(reads: MetricsReads): Promise<MetricsRows>;

  /** The conflict events of [from, to) by operation and scope, most conflicts first. */
  conflictGroups(input: ConflictsInput): Promise<ConflictGroupRow[]>;
  /** The conflict events per UTC hour or day (bucket start `b`) and operation. */
  conflictTrend(input: ConflictsInput, bucket: "hour" | "day"): Promise<{ b: Date; operation: string; n: bigint }[]>;
  /** The drill-down from `input.cursor` on, newest first: `limit + 1` rows to detect a next page, with their cursor text. */
  conflictPage(input: ConflictsInput, limit: number): Promise<(ConflictEvent & { cursorTime: string })[]>;

  /** Records expiring in the next 24 h per UTC hour (i = 0: from `now` to the next hour; … 24). */
  expiringPerHour(f: RecordFilter, now: Date): Promise<{ i: number; n: bigint }[]>;
  /** Records expiring in the next 30 days per UTC day (i = 0: from `now` to midnight; … 30). */
  expiringPerDay(f: RecordFilter, now: Date): Promise<{ i: number; n: bigint }[]>;
  /** Expired records by operation and status (of `part`, default all): held, with an open reconciliation item, purgeable now under `rules`, past the window, oldest expiry. */
  expiredGroups(f: RecordFilter, now: Date, rules: readonly PolicyRule[], part?: ExpiredPart): Promise<ExpiredRow[]>;
  /** The earliest expires_at before `now` of each (operation, status) in `groups` (at least one). */
  oldestExpired(groups: readonly { operation: string; status: string }[], now: Date): Promise<{ operation: string; status: string; oldest: Date }[]>;
}

export function statsStore(ex: SqlExecutor): StatsStore {
  return byDialect(ex, { postgres: postgresStatsStore, mysql: mysqlStatsStore })(ex);
}
