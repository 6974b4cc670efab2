import { paramList, type Statement } from "../db/params";
import type { SqlExecutor } from "../db/sql";
import type { StuckThresholds } from "../records/config";
import { activeByOperationSql } from "../stats/store.postgres";
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
 * Events per scope × operation × kind in [from, to): the hour tier of the rollups for the
 * whole hours, the minute tier for the whole minutes at both edges, raw events for the
 * partial minutes at both ends (an occurred_at range under a minute) and for the events the
 * rollups do not hold yet (above the watermark). Gaps (late commits below the watermark) are
 * left to the next refresh.
 */
export function trafficSql(range: Range): Statement {
  const p = paramList();
  const ts = (ms: number) => `${p.add(new Date(ms))}::timestamptz`;
  const branches = trafficTiles(range).map(({ source, lo, hi }) => {
    switch (source) {
      case "events":
        return `SELECT e.scope, e.operation, e.kind, 1::bigint AS n FROM idempotency_events e WHERE e.occurred_at >= ${ts(lo)} AND e.occurred_at < ${ts(hi)}`;
      case "minutes":
        return `SELECT r.scope, r.operation, r.kind, r.count AS n FROM event_rollups r WHERE r.bucket >= ${ts(lo)} AND r.bucket < ${ts(hi)}`;
      case "hours":
        return `SELECT r.scope, r.operation, r.kind, r.count AS n FROM event_rollup_tiers r
          WHERE r.grain_seconds = 3600 AND r.bucket >= ${ts(lo)} AND r.bucket < ${ts(hi)}`;
      case "unrolled":
        return `SELECT e.scope, e.operation, e.kind, 1::bigint AS n FROM idempotency_events e
        WHERE e.id > rollup_watermark('events')
          AND e.occurred_at >= ${ts(lo)} AND e.occurred_at < ${ts(hi)}`;
    }
  });
  return {
    text: `SELECT scope, operation, kind, sum(n)::bigint AS n FROM (\n  ${branches.join("\n  UNION ALL\n  ")}\n) x GROUP BY 1, 2, 3`,
    values: p.values,
  };
}

/** The newest `perScope` records of each scope created in the range: one backward range of (scope, created_at, id) per scope. */
export function keySamplesSql(scopes: readonly string[], range: Range, perScope: number): Statement {
  const p = paramList();
  return {
    text: `SELECT s.scope, r.id, r.operation, r.idempotency_key AS "idempotencyKey", r.created_at AS "createdAt"
             FROM unnest(${p.texts(scopes)}) AS s(scope)
            CROSS JOIN LATERAL (
              SELECT r.id, r.operation, r.idempotency_key, r.created_at FROM idempotency_records r
               WHERE r.scope = s.scope AND r.created_at >= ${p.time(range.from)} AND r.created_at < ${p.time(range.to)}
               ORDER BY r.created_at DESC, r.id DESC LIMIT ${p.add(perScope)}
            ) r`,
    values: p.values,
  };
}

/**
 * The retry sample and what it says, per operation, in one statement. The operations come
 * from a loose index scan of (operation, kind, occurred_at); the range is cut into
 * RETRY_SLICES equal slices, and per operation and slice the newest ceil(perOperation /
 * RETRY_SLICES) retry events are read backwards from that index, one range per kind (OFFSET 0
 * keeps each an index range), merged, and joined to their record by primary key. A key's retry
 * window is its last sampled retry − its record's created_at (its first request). Late
 * retries: same-payload ones (replayed, in_progress) after the record's expires_at.
 */
export function retryWindowsSql(range: Range, perOperation: number, lateLimit: number): Statement {
  const p = paramList();
  const from = p.time(range.from);
  const step = p.add((range.to.getTime() - range.from.getTime()) / 1000 / RETRY_SLICES);
  const to = p.time(range.to);
  const n = p.add(Math.ceil(perOperation / RETRY_SLICES));
  const kind = (k: string) => `(SELECT e.id, e.record_id, e.kind, e.occurred_at FROM idempotency_events e
              WHERE e.operation = o.operation AND e.kind = '${k}' AND e.occurred_at >= sl.lo AND e.occurred_at < sl.hi
              ORDER BY e.occurred_at DESC LIMIT ${n})`;
  return {
    text: `WITH RECURSIVE o AS (
         SELECT min(operation) AS operation FROM idempotency_events
         UNION ALL
         SELECT (SELECT min(e.operation) FROM idempotency_events e WHERE e.operation > o.operation) FROM o WHERE o.operation IS NOT NULL
       ), sl AS (
         SELECT ${from} + make_interval(secs => i * ${step}::float8) AS lo,
                CASE WHEN i = ${RETRY_SLICES - 1} THEN ${to} ELSE ${from} + make_interval(secs => (i + 1) * ${step}::float8) END AS hi
           FROM generate_series(0, ${RETRY_SLICES - 1}) AS i
       ), s AS MATERIALIZED (
         SELECT o.operation, x.id, x.record_id, x.kind, x.occurred_at, x.total
           FROM o CROSS JOIN sl CROSS JOIN LATERAL (
             SELECT u.*, count(*) OVER () AS total FROM (
               SELECT * FROM (${kind("replayed")} UNION ALL ${kind("in_progress")} UNION ALL ${kind("conflict")}) k
                ORDER BY k.occurred_at DESC LIMIT ${n}
             ) u
           ) x
          WHERE o.operation IS NOT NULL
       ), j AS MATERIALIZED (
         SELECT s.*, r.scope, r.idempotency_key, r.created_at, r.expires_at
           FROM s LEFT JOIN LATERAL (SELECT r.scope, r.idempotency_key, r.created_at, r.expires_at FROM idempotency_records r WHERE r.id = s.record_id OFFSET 0) r ON true
       ), w AS (
         SELECT operation, record_id, extract(epoch FROM max(occurred_at) - min(created_at))::float8 AS w
           FROM j WHERE created_at IS NOT NULL GROUP BY operation, record_id
       ), agg AS (
         SELECT operation, count(*)::bigint AS keys,
                percentile_cont(0.5) WITHIN GROUP (ORDER BY w) AS p50, percentile_cont(0.95) WITHIN GROUP (ORDER BY w) AS p95,
                percentile_cont(0.99) WITHIN GROUP (ORDER BY w) AS p99, max(w) AS max
           FROM w GROUP BY operation
       ), late AS (
         SELECT j.*, row_number() OVER (PARTITION BY j.operation ORDER BY j.occurred_at DESC, j.id DESC) AS rn, count(*) OVER (PARTITION BY j.operation) AS late_count
           FROM j WHERE j.kind IN ('replayed', 'in_progress') AND j.occurred_at > j.expires_at
       )
       SELECT c.operation, c.events, c.sampled, COALESCE(a.keys, 0)::bigint AS keys, c.purged, a.p50, a.p95, a.p99, a.max,
              COALESCE((SELECT max(l.late_count) FROM late l WHERE l.operation = c.operation), 0)::bigint AS "lateCount",
              COALESCE((SELECT json_agg(json_build_object('eventId', l.id::text, 'recordId', l.record_id::text, 'scope', l.scope, 'operation', l.operation,
                                                'idempotencyKey', l.idempotency_key, 'kind', l.kind, 'occurredAt', l.occurred_at,
                                                'createdAt', l.created_at, 'expiresAt', l.expires_at) ORDER BY l.occurred_at DESC, l.id DESC)
                          FROM late l WHERE l.operation = c.operation AND l.rn <= ${p.add(lateLimit)}), '[]'::json) AS late
         FROM (SELECT operation, count(*)::bigint AS events, bool_or(total >= ${n}) AS sampled,
                      count(*) FILTER (WHERE created_at IS NULL)::bigint AS purged
                 FROM j GROUP BY operation) c
         LEFT JOIN agg a ON a.operation = c.operation
        ORDER BY c.operation`,
    values: p.values,
  };
}

/**
 * Per operation (a loose index scan of (operation, expires_at)): the median expiry its
 * writers set, from its 100 records that expire last (the newest, unless an expiry was
 * moved), and its record count from the census.
 */
export const EXPIRY_BY_OPERATION_SQL = `WITH RECURSIVE o AS (
    SELECT min(operation) AS operation FROM idempotency_records
    UNION ALL
    SELECT (SELECT min(r.operation) FROM idempotency_records r WHERE r.operation > o.operation) FROM o WHERE o.operation IS NOT NULL
  )
  SELECT o.operation, t.ttl,
         COALESCE((SELECT sum(c.count) FROM record_census c WHERE c.operation = o.operation), 0)::bigint AS records
    FROM o CROSS JOIN LATERAL (
      SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM x.expires_at - x.created_at)) AS ttl
        FROM (SELECT r.expires_at, r.created_at FROM idempotency_records r WHERE r.operation = o.operation ORDER BY r.expires_at DESC LIMIT 100) x
    ) t
   WHERE o.operation IS NOT NULL
   ORDER BY o.operation`;

export function postgresInsightsStore(ex: SqlExecutor): InsightsStore {
  return {
    async traffic(range) {
      const st = trafficSql(range);
      const rows = await ex.query<{ scope: string; operation: string; kind: string; n: bigint }>(st.text, st.values);
      return rows.map((r): TrafficRow => ({ scope: r.scope, operation: r.operation, kind: r.kind, n: Number(r.n) }));
    },
    async keySamples(scopes, range, perScope) {
      if (!scopes.length) return [];
      const st = keySamplesSql(scopes, range, perScope);
      return ex.query<KeySampleRow>(st.text, st.values);
    },
    async retryWindows(range, perOperation, lateLimit) {
      const st = retryWindowsSql(range, perOperation, lateLimit);
      const rows = await ex.query<{
        operation: string;
        events: bigint;
        sampled: boolean;
        keys: bigint;
        purged: bigint;
        p50: number | null;
        p95: number | null;
        p99: number | null;
        max: number | null;
        lateCount: bigint;
        late: {
          eventId: string;
          recordId: string;
          scope: string;
          operation: string;
          idempotencyKey: string;
          kind: string;
          occurredAt: string;
          createdAt: string;
          expiresAt: string;
        }[];
      }>(st.text, st.values);
      const num = (v: number | null) => (v === null ? null : Number(v));
      return rows.map((r): RetryWindowRow => ({
        operation: r.operation,
        events: Number(r.events),
        sampled: Boolean(r.sampled),
        keys: Number(r.keys),
        purged: Number(r.purged),
        p50Seconds: num(r.p50),
        p95Seconds: num(r.p95),
        p99Seconds: num(r.p99),
        maxSeconds: num(r.max),
        lateCount: Number(r.lateCount),
        late: (typeof r.late === "string" ? (JSON.parse(r.late) as typeof r.late) : r.late).map((l): LateRetryRow => ({
          ...l,
          eventId: BigInt(l.eventId),
          recordId: BigInt(l.recordId),
          occurredAt: new Date(l.occurredAt),
          createdAt: new Date(l.createdAt),
          expiresAt: new Date(l.expiresAt),
        })),
      }));
    },
    async expiryByOperation() {
      const rows = await ex.query<{ operation: string; ttl: number | null; records: bigint }>(EXPIRY_BY_OPERATION_SQL);
      return rows.map((r): ExpiryRow => ({ operation: r.operation, ttlSeconds: r.ttl === null ? null : Number(r.ttl), records: Number(r.records) }));
    },
    activeByOperation: (thresholds: StuckThresholds, now: Date, windowSeconds: number) =>
      activeNowAndBefore(ex, (at) => activeByOperationSql({}, thresholds, at), now, windowSeconds),
  };
}
