import { byDialect } from "../db/dialect";
import type { Statement } from "../db/params";
import type { SqlExecutor } from "../db/sql";
import type { StuckThresholds } from "../records/config";
import { activeGroupRows, type ActiveStatusRow, foldActive } from "../stats/store";
import { mysqlInsightsStore } from "./store.mysql";
import { postgresInsightsStore } from "./store.postgres";

/** A half-open time range [from, to). */
export interface Range {
  from: Date;
  to: Date;
}

/** Requests and outcomes of one scope × operation × event kind in a range. */
export interface TrafficRow {
  scope: string;
  operation: string;
  kind: string;
  n: number;
}

/** One record of a scope's key sample. */
export interface KeySampleRow {
  scope: string;
  id: bigint;
  operation: string;
  idempotencyKey: string;
  createdAt: Date;
}

/** A same-payload retry (replayed or in_progress) that came after its record's expires_at. */
export interface LateRetryRow {
  eventId: bigint;
  recordId: bigint;
  scope: string;
  operation: string;
  idempotencyKey: string;
  kind: string;
  occurredAt: Date;
  createdAt: Date;
  expiresAt: Date;
}

/** The retry windows of one operation's sampled retries: first request (the record's created_at) to its last retry. */
export interface RetryWindowRow {
  operation: string;
  /** Retry events (replayed, in_progress, conflict) read: the newest of the range, at most the sample size. */
  events: number;
  /** Whether the sample stopped at its size (older retries of the range not read). */
  sampled: boolean;
  /** Keys (records) those retries belong to; retries whose record was purged are counted apart. */
  keys: number;
  purged: number;
  p50Seconds: number | null;
  p95Seconds: number | null;
  p99Seconds: number | null;
  maxSeconds: number | null;
  /** Same-payload retries after expiry in the sample, and the newest of them. */
  lateCount: number;
  late: LateRetryRow[];
}

/** How long an operation's keys are kept: the expiry its writers set (median of its newest records) and the census's record count. */
export interface ExpiryRow {
  operation: string;
  ttlSeconds: number | null;
  /** Records of the operation (the record census; records not counted yet left out). */
  records: number;
}

/** Stuck and pending records of one operation, now and `window` ago. */
export interface ActiveRow {
  operation: string;
  stuck: number;
  /** Stuck already at now − window and still processing. */
  stuckBefore: number;
  pending: number;
  oldestPending: Date | null;
}

/**
 * activeByOperation in both dialects: the read side's active statement (`statement`, the stats
 * store's activeByOperationSql without filters) at `now` and `windowSeconds` earlier, in turn.
 */
export async function activeNowAndBefore(ex: SqlExecutor, statement: (at: Date) => Statement, now: Date, windowSeconds: number): Promise<ActiveRow[]> {
  const active = async (at: Date) => {
    const st = statement(at);
    return foldActive(activeGroupRows(await ex.query<ActiveStatusRow>(st.text, st.values))).active;
  };
  const current = await active(now);
  const earlier = new Map((await active(new Date(now.getTime() - windowSeconds * 1000))).map((r) => [r.operation, Number(r.stuck)]));
  return current.map((r): ActiveRow => ({
    operation: r.operation,
    stuck: Number(r.stuck),
    stuckBefore: earlier.get(r.operation) ?? 0,
    pending: Number(r.pending),
    oldestPending: r.oldestPending,
  }));
}

/** The statements the insights run (ADR 0011): each named by what it answers. */
export interface InsightsStore {
  /**
   * Events per scope, operation and kind in the range, from the rollups (hour tier for the
   * whole hours, minute tier for the edges, raw events for the partial minutes at both ends and
   * for what is not rolled up yet): a few rows per scope × operation × kind and hour.
   */
  traffic(range: Range): Promise<TrafficRow[]>;
  /** The newest `perScope` records created in the range, for each scope (an index range per scope). */
  keySamples(scopes: readonly string[], range: Range, perScope: number): Promise<KeySampleRow[]>;
  /**
   * Per operation, the newest `perOperation` retry events of the range (one index range per
   * operation and kind), each with its record by primary key: retry windows and late retries.
   */
  retryWindows(range: Range, perOperation: number, lateLimit: number): Promise<RetryWindowRow[]>;
  /** Per operation: its writers' expiry (the newest records by expires_at) and its record count. */
  expiryByOperation(): Promise<ExpiryRow[]>;
  /** Stuck (per-operation threshold) and pending records, now and `windowSeconds` earlier. */
  activeByOperation(thresholds: StuckThresholds, now: Date, windowSeconds: number): Promise<ActiveRow[]>;
}

export function insightsStore(ex: SqlExecutor): InsightsStore {
  return byDialect(ex, { postgres: postgresInsightsStore, mysql: mysqlInsightsStore })(ex);
}
