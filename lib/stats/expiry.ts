import { OPEN_RECONCILIATION_STATES } from "../kernel/vocabulary";
import { z } from "zod";
import type { SqlExecutor } from "../db/sql";
import { operationSchema, scopeSchema } from "../idempotency/schemas";
import { recordEligibleSql } from "../retention/eligibility";
import { loadRules, type PolicyRule } from "../retention/rules";
import { optional } from "../kernel/input";
import { paramList } from "../db/params";

/**
 * Expiry: when records stop protecting their intent (expires_at), and what has expired
 * but is still there.
 * - next 24 h by hour and next 30 days by day: buckets relative to `asOf`
 *   ([asOf + i·step, asOf + (i+1)·step)), so the hourly buckets add up to "expiring in
 *   the next 24 h" exactly;
 * - expired but not purged, by operation and status, with how many a retention purge
 *   would remove as of now under the current policies (THE eligibility condition of
 *   lib/retention/eligibility.ts: past the policy's window, completed/failed, no legal
 *   hold on the record or its scope, no open reconciliation item, no compensation in
 *   progress, no unsent outbox message; read-only here) and the oldest expiry.
 * Index use: expires_at (a range per question).
 */

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

export const expiryQuerySchema = z
  .object({
    operation: optional(operationSchema),
    scope: optional(scopeSchema),
  })
  .strict();

export type ExpiryQuery = z.output<typeof expiryQuerySchema>;

export interface ExpiryBucket {
  start: Date;
  end: Date;
  count: number;
}

export interface ExpiredGroup {
  operation: string;
  status: string;
  count: number;
  legalHold: number;
  /** With an open reconciliation item. */
  openReconciliation: number;
  /** What a retention purge would remove now under the current policies (lib/retention/eligibility.ts). */
  purgeable: number;
  oldestExpiresAt: Date;
}

export interface ExpiryStats {
  asOf: Date;
  next24h: ExpiryBucket[];
  next30d: ExpiryBucket[];
  expiringNext24h: number;
  expiringNext30d: number;
  expired: { total: number; purgeable: number; groups: ExpiredGroup[] };
}

function histogram(rows: { i: number; n: bigint }[], now: Date, stepMs: number, buckets: number): ExpiryBucket[] {
  const counts = new Map(rows.map((r) => [Number(r.i), Number(r.n)]));
  return Array.from({ length: buckets }, (_, i) => ({
    start: new Date(now.getTime() + i * stepMs),
    end: new Date(now.getTime() + (i + 1) * stepMs),
    count: counts.get(i) ?? 0,
  }));
}

/** The three queries (exported for the EXPLAIN test). */
export function expirySql(q: ExpiryQuery & { now: Date; rules?: readonly PolicyRule[] }) {
  const base = () => {
    const p = paramList();
    const now = p.add(q.now);
    const and = [
      ...(q.operation ? [` AND r.operation = ${p.add(q.operation)}`] : []),
      ...(q.scope ? [` AND r.scope = ${p.add(q.scope)}`] : []),
    ].join("");
    return { p, now, and };
  };
  const bucketed = (secs: number, span: string) => {
    const { p, now, and } = base();
    return {
      text: `SELECT floor(extract(epoch FROM r.expires_at - ${now}::timestamptz) / ${secs})::int AS i, count(*)::bigint AS n
               FROM idempotency_records r
              WHERE r.expires_at >= ${now}::timestamptz AND r.expires_at < ${now}::timestamptz + interval '${span}'${and}
              GROUP BY 1`,
      values: p.values,
    };
  };
  const expired = (() => {
    const { p, now, and } = base();
    const states = p.add([...OPEN_RECONCILIATION_STATES]);
    const eligible = recordEligibleSql(q.rules ?? [], q.now, p, "r");
    return {
      text: `SELECT r.operation, r.status, count(*)::bigint AS n,
                    count(*) FILTER (WHERE r.legal_hold)::bigint AS held,
                    count(*) FILTER (WHERE x.open)::bigint AS open,
                    count(*) FILTER (WHERE ${eligible})::bigint AS purgeable,
                    min(r.expires_at) AS oldest
               FROM idempotency_records r
               CROSS JOIN LATERAL (
                 SELECT EXISTS (SELECT 1 FROM reconciliation_items i WHERE i.record_id = r.id AND i.state = ANY (${states}::text[])) AS open
               ) x
              WHERE r.expires_at < ${now}::timestamptz${and}
              GROUP BY 1, 2 ORDER BY 1, 2`,
      values: p.values,
    };
  })();
  return { hours: bucketed(3600, "24 hours"), days: bucketed(86400, "30 days"), expired };
}

export async function expiryStats(sql: SqlExecutor, q: ExpiryQuery & { now?: Date } = {}): Promise<ExpiryStats> {
  const now = q.now ?? new Date();
  const qs = expirySql({ ...q, now, rules: await loadRules(sql) });
  const [hours, days, expired] = await Promise.all([
    sql.query<{ i: number; n: bigint }>(qs.hours.text, qs.hours.values),
    sql.query<{ i: number; n: bigint }>(qs.days.text, qs.days.values),
    sql.query<{ operation: string; status: string; n: bigint; held: bigint; open: bigint; purgeable: bigint; oldest: Date }>(
      qs.expired.text,
      qs.expired.values,
    ),
  ]);
  const next24h = histogram(hours, now, HOUR_MS, 24);
  const next30d = histogram(days, now, DAY_MS, 30);
  const groups = expired.map((g) => ({
    operation: g.operation,
    status: g.status,
    count: Number(g.n),
    legalHold: Number(g.held),
    openReconciliation: Number(g.open),
    purgeable: Number(g.purgeable),
    oldestExpiresAt: g.oldest,
  }));
  return {
    asOf: now,
    next24h,
    next30d,
    expiringNext24h: next24h.reduce((s, b) => s + b.count, 0),
    expiringNext30d: next30d.reduce((s, b) => s + b.count, 0),
    expired: { total: groups.reduce((s, g) => s + g.count, 0), purgeable: groups.reduce((s, g) => s + g.purgeable, 0), groups },
  };
}
