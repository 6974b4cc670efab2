import { isServerMode } from "../db/config";
import { Counter, Gauge, Registry } from "prom-client";
import type { ReadDatabase } from "../db/client";
import { readLag, type ReadLag } from "../db/replica";
import type { SqlExecutor } from "../db/sql";
import { readSideConfig, type StuckThresholds } from "../records/config";
import { REQUEST_KINDS } from "../kernel/vocabulary";
import { inSnapshot, thresholdOf } from "./overview";
import { countPlan } from "./count-plan";
import { statsStore } from "./store";
import { addRedisMetrics, latestRedisCensuses, type RedisCensusEntry } from "../redis/metrics";

/**
 * Prometheus exposition (GET /api/metrics), cheap enough to scrape every 15–60 s:
 * only the small index ranges the overview uses for live state — processing/pending
 * from (status, updated_at), open reconciliation items from (state, next_check_at) —
 * plus the event rollups (the day tier: a few rows per operation × scope × kind and day).
 * Deliberately NOT exported: records by status (an exact count
 * of the big completed/failed populations reads the whole index; see the overview).
 * Expired-not-purged comes from the record census (lib/stats/census.ts): its whole hours
 * below now, the current partial hour and the records not counted yet.
 *
 * Requests, replays and conflicts are exposed as Prometheus COUNTERS (`…_total`), each
 * set, per scrape, to the all-time total from the rollups (+ the events not rolled up
 * yet, so it is exact): a fresh Counter per scrape incremented once by the total. That
 * is legitimate because the source is monotonic — rollups only ever grow (retention
 * purges of events do not lower them), and the raw remainder moves into them within one
 * snapshot — so rate()/increase() work as for any counter, across console restarts and
 * across several console instances (every instance reports the same database totals;
 * aggregate with max, not sum). A `rebuildRollups` after events were purged can lower a
 * total once; Prometheus treats that as a counter reset, which is the correct reading.
 * Gauges named _total would lose the counter type (and rate() reset handling).
 *
 * Each scrape builds its own Registry (never the global default one): concurrent
 * scrapes cannot mix values, and no process-level metrics leak in.
 *
 * The statements: store.ts (StatsStore.metrics; the set, metricsStatements), each dialect's
 * builders in store.postgres.ts and store.mysql.ts.
 */

export interface MetricsOptions {
  now?: Date;
  thresholds?: StuckThresholds;
  /** One REPEATABLE READ READ ONLY transaction (a database server); see lib/stats/overview.ts. */
  snapshot?: boolean;
  /** The Redis key stores' latest censuses (default: this process's; lib/redis/metrics.ts). */
  redis?: RedisCensusEntry[];
  /** The read side's lag (lib/db/replica.ts, ADR 0013): values as of `lag.asOf`, and the replica's lag exposed. */
  lag?: ReadLag;
}

/** GET /api/metrics off the read side (a replica with DATABASE_READ_URL), its lag measured first on the same connection. */
export function readMetrics(read: ReadDatabase, opts: Omit<MetricsOptions, "lag" | "snapshot" | "now"> = {}): Promise<{ text: string; contentType: string }> {
  return read.withSession(async (session) => renderMetrics(session, { ...opts, snapshot: isServerMode(read.mode), lag: await readLag(read, session) }));
}

export async function renderMetrics(session: SqlExecutor, opts: MetricsOptions = {}): Promise<{ text: string; contentType: string }> {
  const now = opts.now ?? opts.lag?.asOf ?? new Date();
  const thresholds = opts.thresholds ?? readSideConfig().stuck;
  const data = await inSnapshot(session, opts.snapshot ?? true, () =>
    statsStore(session).metrics({
      now,
      thresholds,
      expired: [{ name: "expired", from: null, to: now }],
      // All-time event totals per operation and kind: the day tier of the rollups, plus what they do not cover yet.
      allTime: countPlan({}),
    }),
  );

  // Every known operation gets every per-operation series (0 when nothing), so series do not come and go.
  const operations = new Set<string>(data.operations.map((o) => o.operation));
  for (const r of [...data.active, ...data.expired, ...data.totals]) operations.add(r.operation);

  const registry = new Registry();
  const reg = [registry];
  const gauge = (name: string, help: string, labelNames: string[] = []) => new Gauge({ name, help, labelNames, registers: reg });
  const counter = (name: string, help: string, labelNames: string[]) => new Counter({ name, help, labelNames, registers: reg });

  const stuck = gauge(
    "idempotency_records_processing_stuck",
    "Records in processing unchanged for longer than their operation's stuck threshold (STUCK_THRESHOLDS).",
    ["operation"],
  );
  const threshold = gauge("idempotency_stuck_threshold_seconds", "The stuck threshold applied per operation.", ["operation"]);
  const pending = gauge("idempotency_records_pending", "Records pending (external outcome uncertain, awaiting reconciliation).", ["operation"]);
  const oldestPending = gauge("idempotency_oldest_pending_age_seconds", "Seconds since the oldest pending record last changed (0 when none is pending).", [
    "operation",
  ]);
  const expiredG = gauge("idempotency_records_expired_not_purged", "Records whose expires_at has passed and that are still stored.", ["operation"]);
  const openG = gauge("idempotency_reconciliation_items_open", "Reconciliation items open, checking or needing manual resolution.");
  const requests = counter("idempotency_requests_total", "Requests (reserved + replayed + conflict + in_progress events) since rollups began.", ["operation"]);
  const replays = counter("idempotency_replays_total", "Requests answered with the stored response (replayed events).", ["operation"]);
  const conflicts = counter("idempotency_conflicts_total", "Requests reusing a key with a different payload (conflict events).", ["operation"]);
  const events = counter("idempotency_events_total", "Events recorded by the writers, by kind.", ["operation", "kind"]);
  const lag = gauge("idempotency_rollup_lag_events", "Events not rolled up yet (counted raw meanwhile; totals stay exact).");
  const gaps = gauge("idempotency_rollup_gaps_open", "Event ids below the rollup watermark not visible yet (open writer transactions).");
  const refreshed = gauge("idempotency_rollup_last_refresh_timestamp_seconds", "When the rollups were last refreshed (Unix time; 0 if never).");
  const asOf = gauge("idempotency_stats_as_of_timestamp_seconds", "When these values were read (Unix time); off a replica, the moment its data is current to.");

  const byOp = <T extends { operation: string }>(rows: T[]) => new Map(rows.map((r) => [r.operation, r]));
  const act = byOp(data.active);
  const exp = byOp(data.expired);
  const totals = new Map<string, { requests: number; replays: number; conflicts: number }>();
  for (const op of operations) totals.set(op, { requests: 0, replays: 0, conflicts: 0 });
  for (const t of data.totals) {
    const n = Number(t.n);
    const o = totals.get(t.operation)!;
    if ((REQUEST_KINDS as readonly string[]).includes(t.kind)) o.requests += n;
    if (t.kind === "replayed") o.replays += n;
    if (t.kind === "conflict") o.conflicts += n;
    events.inc({ operation: t.operation, kind: t.kind }, n);
  }
  for (const op of [...operations].sort()) {
    const a = act.get(op);
    stuck.set({ operation: op }, Number(a?.stuck ?? 0));
    threshold.set({ operation: op }, thresholdOf(thresholds, op));
    pending.set({ operation: op }, Number(a?.pending ?? 0));
    oldestPending.set({ operation: op }, a?.oldestPending ? Math.max(0, (now.getTime() - a.oldestPending.getTime()) / 1000) : 0);
    expiredG.set({ operation: op }, Number(exp.get(op)?.n ?? 0));
    const t = totals.get(op)!;
    // A fresh counter incremented once = set to the (monotonic) total; see above.
    requests.inc({ operation: op }, t.requests);
    replays.inc({ operation: op }, t.replays);
    conflicts.inc({ operation: op }, t.conflicts);
  }
  openG.set(Number(data.open[0].n));
  const [r] = data.rollup;
  lag.set(Number(r.lag));
  gaps.set(Number(r.gaps));
  refreshed.set(r.refreshedAt ? r.refreshedAt.getTime() / 1000 : 0);
  asOf.set(now.getTime() / 1000);
  if (opts.lag?.replica) {
    // Only when the values come from a replica (DATABASE_READ_URL); absent while it cannot tell.
    const replicaLag = gauge("idempotency_console_read_replica_lag_seconds", "How far the replica these values were read from is behind the primary.");
    if (opts.lag.lagSeconds !== null) replicaLag.set(opts.lag.lagSeconds);
  }
  addRedisMetrics(registry, opts.redis ?? latestRedisCensuses());
  return { text: await registry.metrics(), contentType: registry.contentType };
}
