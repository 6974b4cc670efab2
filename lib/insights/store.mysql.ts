import { MYSQL } from "../db/dialect";
import { Params, type Statement } from "../db/params";
import type { SqlExecutor } from "../db/sql";
import type { StuckThresholds } from "../records/config";
import { activeByOperationSql, KNOWN_OPERATIONS_SQL } from "../stats/store.mysql";
import { watermarkSql } from "../stats/rollup-store.mysql";
import { RETRY_SLICES } from "./config";
import {
  activeNowAndBefore,
  type ExpiryRow,
  type InsightsStore,
  type KeySampleRow,
  type LateRetryRow,
  type Range,
  type RetryWindowRow,
  type TrafficRow,
} from "./store";
import { trafficTiles } from "./traffic-tiles";

/**
 * The insights' statements on MySQL / MariaDB (what they answer: store.ts; the PostgreSQL
 * side: store.postgres.ts). The same index ranges, read the MySQL way: no LATERAL (MariaDB
 * has none), so a per-scope or per-operation range is one parenthesised `ORDER BY … LIMIT`
 * branch each, joined by UNION ALL; no percentile_cont or json_agg worth the name (MySQL 8
 * has no percentile at all), so the retry sample is read as rows — at most the sample size
 * per operation — and its windows, percentiles and late retries are computed here, as
 * percentile_cont does (linear interpolation). Parameters bind in text order (`?`).
 */

/** Branches per UNION ALL statement: long enough to save round trips, short enough for the parser. */
const BRANCHES_PER_STATEMENT = 50;
/** Records read by primary key per statement. */
const IDS_PER_STATEMENT = 1_000;

const chunks = <T>(xs: readonly T[], size: number): T[][] => Array.from({ length: Math.ceil(xs.length / size) }, (_, i) => xs.slice(i * size, (i + 1) * size));

/** percentile_cont over `sorted` (ascending): linear interpolation between the closest ranks. */
export function percentileCont(sorted: readonly number[], p: number): number | null {
  if (!sorted.length) return null;
  const rank = p * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo);
}

/** Events per scope × operation × kind in [from, to): the same branches as PostgreSQL's trafficSql (rollup tiers, minute edges, raw events). */
export function trafficSql(range: Range): Statement {
  const p = new Params(MYSQL);
  const ts = (ms: number) => p.time(new Date(ms));
  // Parameters bind in text order: each branch adds its own as it is written.
  const branches = trafficTiles(range).map(({ source, lo, hi }) => {
    switch (source) {
      case "events":
        return `SELECT e.scope, e.operation, e.kind, 1 AS n FROM idempotency_events e WHERE e.occurred_at >= ${ts(lo)} AND e.occurred_at < ${ts(hi)}`;
      case "minutes":
        return `SELECT r.scope, r.operation, r.kind, r.count AS n FROM event_rollups r WHERE r.bucket >= ${ts(lo)} AND r.bucket < ${ts(hi)}`;
      case "hours":
        return `SELECT r.scope, r.operation, r.kind, r.count AS n FROM event_rollup_tiers r
          WHERE r.grain_seconds = 3600 AND r.bucket >= ${ts(lo)} AND r.bucket < ${ts(hi)}`;
      case "unrolled":
        return `SELECT e.scope, e.operation, e.kind, 1 AS n FROM idempotency_events e
        WHERE e.id > ${watermarkSql("events")} AND e.occurred_at >= ${ts(lo)} AND e.occurred_at < ${ts(hi)}`;
    }
  });
  return {
    text: `SELECT x.scope, x.operation, x.kind, SUM(x.n) AS n FROM (\n  ${branches.join("\n  UNION ALL\n  ")}\n) x GROUP BY x.scope, x.operation, x.kind`,
    values: p.values,
  };
}

/** The newest `perScope` records of each scope created in the range: one backward range of (scope, created_at, id) per scope. */
export function keySamplesSql(scopes: readonly string[], range: Range, perScope: number): Statement {
  const p = new Params(MYSQL);
  const branch = (scope: string) =>
    `(SELECT r.scope, r.id, r.operation, r.idempotency_key AS "idempotencyKey", r.created_at AS "createdAt" FROM idempotency_records r
       WHERE r.scope = ${p.add(scope)} AND r.created_at >= ${p.time(range.from)} AND r.created_at < ${p.time(range.to)}
       ORDER BY r.created_at DESC, r.id DESC LIMIT ${p.add(perScope)})`;
  return { text: scopes.map(branch).join("\n UNION ALL\n "), values: p.values };
}

/**
 * One operation's retry sample: the range cut into RETRY_SLICES equal slices, and per slice
 * and retry kind the newest `perSlice` events — one backward range of (operation, kind,
 * occurred_at) each. Rows: { slice, id, recordId, kind, occurredAt }.
 */
export function retrySampleSql(operation: string, range: Range, perSlice: number): Statement {
  const p = new Params(MYSQL);
  const from = range.from.getTime();
  const step = (range.to.getTime() - from) / RETRY_SLICES;
  const branches: string[] = [];
  for (let i = 0; i < RETRY_SLICES; i++) {
    const lo = new Date(from + i * step);
    const hi = i === RETRY_SLICES - 1 ? range.to : new Date(from + (i + 1) * step);
    for (const kind of ["replayed", "in_progress", "conflict"]) {
      branches.push(`(SELECT ${i} AS slice, e.id, e.record_id AS "recordId", e.kind, e.occurred_at AS "occurredAt" FROM idempotency_events e
         WHERE e.operation = ${p.add(operation)} AND e.kind = '${kind}' AND e.occurred_at >= ${p.time(lo)} AND e.occurred_at < ${p.time(hi)}
         ORDER BY e.occurred_at DESC LIMIT ${p.add(perSlice)})`);
    }
  }
  return { text: branches.join("\n UNION ALL\n "), values: p.values };
}

/** The records of `ids` by primary key (the sampled retries' first requests and expiries). */
export function recordsByIdSql(ids: readonly bigint[]): Statement {
  const p = new Params(MYSQL);
  return {
    text: `SELECT r.id, r.scope, r.idempotency_key AS "idempotencyKey", r.created_at AS "createdAt", r.expires_at AS "expiresAt"
             FROM idempotency_records r WHERE r.id IN (${p.list(ids)})`,
    values: p.values,
  };
}

/** Per operation of `operations`, the expiry (seconds) of its 100 records that expire last: one backward range of (operation, expires_at) each. */
export function newestExpiriesSql(operations: readonly string[]): Statement {
  const p = new Params(MYSQL);
  const branch = (operation: string) =>
    `(SELECT r.operation, TIMESTAMPDIFF(MICROSECOND, r.created_at, r.expires_at) / 1000000 AS ttl FROM idempotency_records r
       WHERE r.operation = ${p.add(operation)} ORDER BY r.expires_at DESC LIMIT 100)`;
  return { text: operations.map(branch).join("\n UNION ALL\n "), values: p.values };
}

/** The operations that have records (MySQL's loose index scan of (operation, expires_at)). */
export const RECORD_OPERATIONS_SQL = `SELECT r.operation FROM idempotency_records r GROUP BY r.operation ORDER BY r.operation`;

/** Records per operation, from the record census. */
export const CENSUS_BY_OPERATION_SQL = `SELECT c.operation, SUM(c.count) AS records FROM record_census c GROUP BY c.operation`;

type SampledEvent = { slice: number; id: bigint; recordId: bigint; kind: string; occurredAt: Date };
type SampledRecord = { id: bigint; scope: string; idempotencyKey: string; createdAt: Date; expiresAt: Date };

/** What an operation's retry sample says (PostgreSQL computes the same in retryWindowsSql). */
export function summariseRetries(
  operation: string,
  events: readonly SampledEvent[],
  records: ReadonlyMap<string, SampledRecord>,
  perSlice: number,
  lateLimit: number,
): RetryWindowRow {
  // Per slice, the newest perSlice of its three kinds' ranges; "sampled" when any slice was full.
  const bySlice = new Map<number, SampledEvent[]>();
  for (const e of events) bySlice.set(Number(e.slice), [...(bySlice.get(Number(e.slice)) ?? []), e]);
  const sample: SampledEvent[] = [];
  let sampled = false;
  for (const list of bySlice.values()) {
    const kept = [...list].sort((a, b) => b.occurredAt.getTime() - a.occurredAt.getTime()).slice(0, perSlice);
    if (kept.length >= perSlice) sampled = true;
    sample.push(...kept);
  }
  const lastRetry = new Map<string, { at: number; createdAt: number }>();
  const late: LateRetryRow[] = [];
  let purged = 0;
  for (const e of sample) {
    const r = records.get(String(e.recordId));
    if (!r) {
      purged++;
      continue;
    }
    const key = String(e.recordId);
    const at = e.occurredAt.getTime();
    const seen = lastRetry.get(key);
    if (!seen || at > seen.at) lastRetry.set(key, { at, createdAt: r.createdAt.getTime() });
    if ((e.kind === "replayed" || e.kind === "in_progress") && at > r.expiresAt.getTime()) {
      late.push({
        eventId: BigInt(e.id),
        recordId: BigInt(e.recordId),
        scope: r.scope,
        operation,
        idempotencyKey: r.idempotencyKey,
        kind: e.kind,
        occurredAt: e.occurredAt,
        createdAt: r.createdAt,
        expiresAt: r.expiresAt,
      });
    }
  }
  const windows = [...lastRetry.values()].map((w) => (w.at - w.createdAt) / 1000).sort((a, b) => a - b);
  late.sort((a, b) => b.occurredAt.getTime() - a.occurredAt.getTime() || (b.eventId > a.eventId ? 1 : b.eventId < a.eventId ? -1 : 0));
  return {
    operation,
    events: sample.length,
    sampled,
    keys: windows.length,
    purged,
    p50Seconds: percentileCont(windows, 0.5),
    p95Seconds: percentileCont(windows, 0.95),
    p99Seconds: percentileCont(windows, 0.99),
    maxSeconds: windows.length ? windows[windows.length - 1] : null,
    lateCount: late.length,
    late: late.slice(0, lateLimit),
  };
}

export function mysqlInsightsStore(ex: SqlExecutor): InsightsStore {
  const q = <T>(st: Statement) => ex.query<T>(st.text, st.values);
  return {
    async traffic(range) {
      const rows = await q<{ scope: string; operation: string; kind: string; n: bigint | string }>(trafficSql(range));
      return rows.map((r): TrafficRow => ({ scope: r.scope, operation: r.operation, kind: r.kind, n: Number(r.n) }));
    },
    async keySamples(scopes, range, perScope) {
      const out: KeySampleRow[] = [];
      for (const part of chunks(scopes, BRANCHES_PER_STATEMENT)) {
        const rows = await q<KeySampleRow>(keySamplesSql(part, range, perScope));
        out.push(...rows.map((r) => ({ ...r, id: BigInt(r.id) })));
      }
      return out;
    },
    async retryWindows(range, perOperation, lateLimit) {
      const perSlice = Math.ceil(perOperation / RETRY_SLICES);
      const operations = (await q<{ operation: string }>({ text: KNOWN_OPERATIONS_SQL, values: [] })).map((r) => r.operation);
      const out: RetryWindowRow[] = [];
      for (const operation of operations) {
        const events = await q<SampledEvent>(retrySampleSql(operation, range, perSlice));
        if (!events.length) continue;
        const ids = [...new Set(events.map((e) => String(e.recordId)))].map((id) => BigInt(id));
        const records = new Map<string, SampledRecord>();
        for (const part of chunks(ids, IDS_PER_STATEMENT)) {
          for (const r of await q<SampledRecord>(recordsByIdSql(part))) records.set(String(r.id), r);
        }
        out.push(summariseRetries(operation, events, records, perSlice, lateLimit));
      }
      return out;
    },
    async expiryByOperation() {
      const operations = (await q<{ operation: string }>({ text: RECORD_OPERATIONS_SQL, values: [] })).map((r) => r.operation);
      const census = new Map(
        (await q<{ operation: string; records: bigint | string | number }>({ text: CENSUS_BY_OPERATION_SQL, values: [] })).map((r) => [
          r.operation,
          Number(r.records),
        ]),
      );
      const ttls = new Map<string, number[]>();
      for (const part of chunks(operations, BRANCHES_PER_STATEMENT)) {
        for (const r of await q<{ operation: string; ttl: number | string }>(newestExpiriesSql(part))) {
          ttls.set(r.operation, [...(ttls.get(r.operation) ?? []), Number(r.ttl)]);
        }
      }
      return operations.map((operation): ExpiryRow => ({
        operation,
        ttlSeconds: percentileCont(
          [...(ttls.get(operation) ?? [])].sort((a, b) => a - b),
          0.5,
        ),
        records: census.get(operation) ?? 0,
      }));
    },
    activeByOperation: (thresholds: StuckThresholds, now: Date, windowSeconds: number) =>
      activeNowAndBefore(ex, (at) => activeByOperationSql({}, thresholds, at), now, windowSeconds),
  };
}
