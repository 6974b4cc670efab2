import { z } from "zod";
import type { SqlExecutor } from "../db/sql";
import { operationSchema, scopeSchema } from "../idempotency/schemas";
import { loadRules } from "../retention/rules";
import { optional } from "../kernel/input";
import { statsStore } from "./store";

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
 * Index use: expires_at (a range per question). The statements: store.ts and
 * store.postgres.ts (expirySql).
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

export async function expiryStats(sql: SqlExecutor, q: ExpiryQuery & { now?: Date } = {}): Promise<ExpiryStats> {
  const now = q.now ?? new Date();
  const rules = await loadRules(sql);
  const store = statsStore(sql);
  const f = { operation: q.operation, scope: q.scope };
  const [hours, days, expired] = await Promise.all([store.expiringPerHour(f, now), store.expiringPerDay(f, now), store.expiredGroups(f, now, rules)]);
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
