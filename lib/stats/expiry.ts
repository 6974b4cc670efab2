import { z } from "zod";
import type { ReadDatabase } from "../db/client";
import { isServerMode } from "../db/config";
import type { SqlExecutor } from "../db/sql";
import { operationSchema, scopeSchema } from "../idempotency/schemas";
import { cutoff, loadRules, recordCutoff, type PolicyRule } from "../retention/rules";
import { optional } from "../kernel/input";
import { countRecordsByExpiry, type ExpiryInterval } from "./census";
import { inSnapshot } from "./overview";
import { expiryBuckets, statsStore, type ExpiredRow } from "./store";

/**
 * Expiry: when records stop protecting their intent (expires_at), and what has expired
 * but is still there.
 * - next 24 h by UTC hour and next 30 days by UTC day: the first bucket from `asOf` to the next
 *   hour (midnight), the last from the hour (midnight) before `asOf` + 24 h (30 days) to it — 25
 *   buckets off the hour, 24 on it; 31 and 30 for the days — adding up to "expiring in the next
 *   24 h / 30 days" exactly. Their bounds are the census's hours, so without a scope only the
 *   first and last bucket read records (expiryBuckets);
 * - expired but not purged, by operation and status, with how many a retention purge
 *   would remove as of now under the current policies (THE eligibility condition of
 *   lib/retention/eligibility.ts: past the policy's window, completed/failed, no legal
 *   hold on the record or its scope, no open reconciliation item, no compensation in
 *   progress, no unsent outbox message; read-only here) and the oldest expiry.
 * Without a scope, the histograms and the expired groups come from the record census
 * (expiringFromCensus, expiredGroupsFromCensus; ADR 0017); with one, plain counts of the
 * scope's records. Index use: expires_at (a range per question). The statements: store.ts,
 * store.postgres.ts and store.mysql.ts (expirySql).
 */

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

/** An expired group as the page shows it, from its statement's row. */
export const expiredGroup = (g: Omit<ExpiredRow, "pastWindow">): ExpiredGroup => ({
  operation: g.operation,
  status: g.status,
  count: Number(g.n),
  legalHold: Number(g.held),
  openReconciliation: Number(g.open),
  purgeable: Number(g.purgeable),
  oldestExpiresAt: g.oldest,
});

function histogram(rows: { i: number; n: bigint }[], now: Date, per: "hour" | "day"): ExpiryBucket[] {
  const counts = new Map(rows.map((r) => [Number(r.i), Number(r.n)]));
  return expiryBuckets(now, per).map((b, i) => ({ ...b, count: counts.get(i) ?? 0 }));
}

/**
 * The Expiry page's numbers. The histograms and the expired groups are read at once on separate
 * connections; the expired groups' statements from the census (which subtract one another's
 * counts) in one snapshot, on a database server — on PostgreSQL on two sessions sharing it when
 * the pool has a second free (ADR 0018).
 */
export async function expiryStats(
  read: Pick<ReadDatabase, "mode" | "sql" | "withSession" | "withSpareSession">,
  q: ExpiryQuery & { now?: Date } = {},
): Promise<ExpiryStats> {
  const now = q.now ?? new Date();
  const rules = await loadRules(read.sql);
  const store = statsStore(read.sql);
  const f = { operation: q.operation, scope: q.scope };
  const [hours, days, expired] = await Promise.all([
    q.scope === undefined ? expiringFromCensus(read.sql, q.operation, now, "hour") : store.expiringPerHour(f, now),
    q.scope === undefined ? expiringFromCensus(read.sql, q.operation, now, "day") : store.expiringPerDay(f, now),
    q.scope === undefined
      ? read.withSession((s) =>
          inSnapshot(s, isServerMode(read.mode), (other) => expiredGroupsFromCensus(s, q.operation, now, rules, other), read.withSpareSession),
        )
      : store.expiredGroups(f, now, rules),
  ]);
  const next24h = histogram(hours, now, "hour");
  const next30d = histogram(days, now, "day");
  const groups = expired.map(expiredGroup);
  return {
    asOf: now,
    next24h,
    next30d,
    expiringNext24h: next24h.reduce((s, b) => s + b.count, 0),
    expiringNext30d: next30d.reduce((s, b) => s + b.count, 0),
    expired: { total: groups.reduce((s, g) => s + g.count, 0), purgeable: groups.reduce((s, g) => s + g.purgeable, 0), groups },
  };
}

/**
 * Records expiring per bucket of the next 24 hours or 30 days without a scope, from the record
 * census (ADR 0017): whole hours from the census, the partial hours of the first and the last
 * bucket from the records.
 */
async function expiringFromCensus(sql: SqlExecutor, operation: string | undefined, now: Date, per: "hour" | "day"): Promise<{ i: number; n: bigint }[]> {
  const buckets: ExpiryInterval[] = expiryBuckets(now, per).map((b, i) => ({ name: String(i), from: b.start, to: b.end }));
  const perBucket = new Map<number, bigint>();
  for (const c of await countRecordsByExpiry(sql, buckets, { operation, now }))
    perBucket.set(Number(c.name), (perBucket.get(Number(c.name)) ?? 0n) + BigInt(c.count));
  return [...perBucket].map(([i, n]) => ({ i, n }));
}

/**
 * The expired groups without a scope, from the record census (ADR 0017) instead of every expired
 * record — the same rows as the plain statement (expiredGroups, part "all"), which the tests
 * compare them with:
 * - all and failed records per operation expired at `now` and past each policy's window: the
 *   census, corrected for touched records, plus the partial hours at the edges;
 * - processing and pending: read (the unsettled-status index), with their holds, items, window;
 * - completed = all − failed − processing − pending; of the completed and failed, held and with
 *   an open item from the records a protection may keep (their ids from the protections' side),
 *   and purgeable = past the window − those of them past it that a protection keeps;
 * - the oldest expiry of each: an ordered range of (operation, expires_at) up to the first one.
 * Cost: the census's rows, the unsettled records, the protected ones — not the expired backlog.
 * `sql` must be one session in one snapshot for the counts to agree under concurrent writers
 * (expiryStats); `alongside`, a second session in that snapshot (inSnapshot), reads the unsettled
 * records meanwhile.
 */
export async function expiredGroupsFromCensus(
  sql: SqlExecutor,
  operation: string | undefined,
  now: Date,
  rules: readonly PolicyRule[],
  alongside: SqlExecutor | null = null,
): Promise<ExpiredRow[]> {
  const store = statsStore(sql);
  const cutoffs = [...new Set(rules.flatMap((r) => (r.enabled ? [cutoff(now, r.keepRecordsDays).getTime()] : [])))];
  const windowName = (ms: number) => `window:${ms}`;
  const intervals: ExpiryInterval[] = [null, ...cutoffs].flatMap((ms) => {
    const [name, to] = ms === null ? ["expired", now] : [windowName(ms), new Date(Math.min(ms, now.getTime()))];
    return [
      { name, from: null, to },
      { name: `${name}:failed`, from: null, to, failed: true },
    ];
  });
  const f = { operation, scope: undefined };
  const [census, unsettled, kept] = await Promise.all([
    countRecordsByExpiry(sql, intervals, { operation, now }),
    statsStore(alongside ?? sql).expiredGroups(f, now, rules, "unsettled"),
    store.expiredGroups(f, now, rules, "protected"),
  ]);
  const counted = new Map(census.map((c) => [`${c.name}|${c.operation}`, c.count]));
  const count = (name: string, op: string) => counted.get(`${name}|${op}`) ?? 0;
  const find = (rows: ExpiredRow[], op: string, status: string) => rows.find((r) => r.operation === op && r.status === status);
  const operations = [...new Set(census.filter((c) => c.name === "expired").map((c) => c.operation))].sort();
  const settled: ExpiredRow[] = [];
  for (const op of operations) {
    const ends = recordCutoff(rules, op, now);
    const window = ends === null ? null : windowName(ends.getTime());
    const unsettledOf = unsettled.filter((r) => r.operation === op);
    const sum = (pick: (r: ExpiredRow) => bigint) => unsettledOf.reduce((n, r) => n + BigInt(pick(r)), 0n);
    const failed = BigInt(count("expired:failed", op));
    const failedPast = window === null ? 0n : BigInt(count(`${window}:failed`, op));
    const byStatus = {
      completed: {
        n: BigInt(count("expired", op)) - failed - sum((r) => r.n),
        past: window === null ? 0n : BigInt(count(window, op)) - failedPast - sum((r) => r.pastWindow),
      },
      failed: { n: failed, past: failedPast },
    };
    for (const status of ["completed", "failed"] as const) {
      const { n, past } = byStatus[status];
      if (n <= 0n) continue;
      const k = find(kept, op, status);
      const purgeable = window === null ? 0n : past - BigInt(k?.pastWindow ?? 0n) + BigInt(k?.purgeable ?? 0n);
      settled.push({ operation: op, status, n, held: BigInt(k?.held ?? 0n), open: BigInt(k?.open ?? 0n), purgeable, pastWindow: past, oldest: now });
    }
  }
  const oldest = settled.length ? await store.oldestExpired(settled, now) : [];
  for (const g of settled) g.oldest = oldest.find((o) => o.operation === g.operation && o.status === g.status)?.oldest ?? g.oldest;
  const order = (a: ExpiredRow, b: ExpiredRow) =>
    a.operation < b.operation ? -1 : a.operation > b.operation ? 1 : a.status < b.status ? -1 : a.status > b.status ? 1 : 0;
  return [...settled, ...unsettled].sort(order);
}
