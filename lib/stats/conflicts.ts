import { REQUEST_KINDS } from "../kernel/vocabulary";
import { z } from "zod";
import type { SqlExecutor } from "../db/sql";
import { operationSchema, scopeSchema } from "../idempotency/schemas";
import { inSnapshot } from "./overview";
import { countEvents } from "./rollups";
import { statsStore } from "./store";
import { cursorParam, encodeCursor, type KeysetPosition } from "../db/paging";
import { intParam, isoTime, optional, resolveRange } from "../kernel/input";

/**
 * Conflicts: a key reused with a different payload (a changed intent under an old key,
 * or a client bug). From idempotency_events kind = 'conflict', whose detail holds the
 * stored (expectedPayloadHash) and the received (receivedPayloadHash) hash.
 *
 * - groups: by operation and scope in [from, to): conflicts, distinct keys, first/last;
 * - rates: per operation, conflicts ÷ requests, where requests are the begin() calls
 *   (reserved + replayed + conflict + in_progress events) counted exactly from the
 *   rollups (lib/stats/rollups.ts countEvents);
 * - trend: per hour or day (UTC) and operation, zero-filled;
 * - events: the drill-down, newest first, keyset-paginated: key, record, both hashes, when.
 *
 * Index use: (operation, kind, occurred_at) — one range per operation. The operations
 * are found with a loose index scan over the same index (a recursive CTE that jumps
 * from one operation to the next: one probe each), so no query reads non-conflict events.
 * The statements: store.ts and store.postgres.ts (conflictRowsSql).
 */

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
export const MAX_HOURLY_SPAN_MS = 31 * DAY_MS;
export const MAX_DAILY_SPAN_MS = 400 * DAY_MS;

export const conflictsQuerySchema = z
  .object({
    from: optional(isoTime),
    to: optional(isoTime),
    operation: optional(operationSchema),
    scope: optional(scopeSchema),
    /** Trend granularity: hour or day (default: hour up to 2 days, else day). */
    bucket: optional(z.enum(["hour", "day"])),
    /** Drill-down page size (1 … 200, default 50) and cursor. */
    limit: optional(intParam(1, 200)),
    cursor: optional(cursorParam),
  })
  .strict()
  .transform((v, ctx) => {
    const range = resolveRange(v, { defaultSpanMs: DAY_MS, maxSpanMs: MAX_DAILY_SPAN_MS });
    if (typeof range === "string") {
      ctx.addIssue({ code: "custom", message: range, path: ["from"] });
      return z.NEVER;
    }
    const span = range.to.getTime() - range.from.getTime();
    const bucket = v.bucket ?? (span <= 2 * DAY_MS ? "hour" : "day");
    if (bucket === "hour" && span > MAX_HOURLY_SPAN_MS) {
      ctx.addIssue({ code: "custom", message: "hourly buckets cover at most 31 days; use bucket=day", path: ["bucket"] });
      return z.NEVER;
    }
    return { ...range, operation: v.operation, scope: v.scope, bucket, limit: v.limit ?? 50, cursor: v.cursor };
  });

export type ConflictsQuery = z.output<typeof conflictsQuerySchema>;
export interface ConflictsInput {
  from: Date;
  to: Date;
  operation?: string;
  scope?: string;
  bucket?: "hour" | "day";
  limit?: number;
  cursor?: KeysetPosition;
}

export interface ConflictGroup {
  operation: string;
  scope: string;
  conflicts: number;
  keys: number;
  firstAt: Date;
  lastAt: Date;
}

export interface ConflictRate {
  operation: string;
  conflicts: number;
  requests: number;
  /** conflicts ÷ requests; null without requests. */
  rate: number | null;
}

export interface ConflictEvent {
  id: bigint;
  occurredAt: Date;
  operation: string;
  scope: string;
  idempotencyKey: string;
  recordId: bigint | null;
  expectedPayloadHash: string | null;
  receivedPayloadHash: string | null;
}

export interface ConflictStats {
  from: Date;
  to: Date;
  bucket: "hour" | "day";
  total: number;
  groups: ConflictGroup[];
  rates: ConflictRate[];
  trend: { bucket: Date; counts: Record<string, number>; total: number }[];
  events: { items: ConflictEvent[]; nextCursor: string | null; limit: number };
}

/**
 * The conflicts screen. With `snapshot` (a database server; the route passes it as the overview
 * does) its reads share one read-only snapshot under the read side's planner settings
 * (overview.ts inSnapshot), so the totals, rates and events agree; without it (the embedded
 * PGlite, the CSV export's pages) they are read one after another.
 */
export async function conflictStats(session: SqlExecutor, input: ConflictsInput, opts: { snapshot?: boolean } = {}): Promise<ConflictStats> {
  const span = input.to.getTime() - input.from.getTime();
  const bucket = input.bucket ?? (span <= 2 * DAY_MS ? "hour" : "day");
  const limit = input.limit ?? 50;

  const store = statsStore(session);
  const { groups, trendRows, pageRows, counts } = await inSnapshot(session, opts.snapshot ?? false, async () => ({
    groups: await store.conflictGroups(input),
    trendRows: await store.conflictTrend(input, bucket),
    // Drill-down: newest first; each operation's range read in index order, then merged.
    pageRows: await store.conflictPage(input, limit),
    // Requests per operation, exact, from the rollups (+ the raw events they do not cover yet).
    counts: await countEvents(session, { from: input.from, to: input.to, operation: input.operation, scope: input.scope }),
  }));
  const perOp = new Map<string, { conflicts: number; requests: number }>();
  for (const c of counts) {
    if (!(REQUEST_KINDS as readonly string[]).includes(c.kind)) continue;
    const o = perOp.get(c.operation) ?? { conflicts: 0, requests: 0 };
    o.requests += c.count;
    if (c.kind === "conflict") o.conflicts += c.count;
    perOp.set(c.operation, o);
  }

  const more = pageRows.length > limit;
  const items = (more ? pageRows.slice(0, limit) : pageRows).map(({ cursorTime: _c, ...e }) => e);
  const last: KeysetPosition | null = more ? { t: pageRows[limit - 1].cursorTime, id: pageRows[limit - 1].id } : null;

  return {
    from: input.from,
    to: input.to,
    bucket,
    total: groups.reduce((s, g) => s + Number(g.conflicts), 0),
    groups: groups.map((g) => ({ ...g, conflicts: Number(g.conflicts), keys: Number(g.keys) })),
    rates: [...perOp.entries()]
      .map(([operation, o]) => ({ operation, ...o, rate: o.requests ? o.conflicts / o.requests : null }))
      .sort((a, b) => a.operation.localeCompare(b.operation)),
    trend: fillTrend(trendRows, input.from, input.to, bucket),
    events: { items, nextCursor: last ? encodeCursor(last) : null, limit },
  };
}

/** UTC bucket starts covering [from, to), every bucket present (zeros included). */
export function bucketStarts(from: Date, to: Date, bucket: "hour" | "day"): Date[] {
  const step = bucket === "hour" ? HOUR_MS : DAY_MS;
  const first = Math.floor(from.getTime() / step) * step;
  const out: Date[] = [];
  for (let t = first; t < to.getTime(); t += step) out.push(new Date(t));
  return out;
}

function fillTrend(rows: { b: Date; operation: string; n: bigint }[], from: Date, to: Date, bucket: "hour" | "day") {
  const byBucket = new Map<number, Record<string, number>>();
  for (const r of rows) {
    const m = byBucket.get(r.b.getTime()) ?? {};
    m[r.operation] = (m[r.operation] ?? 0) + Number(r.n);
    byBucket.set(r.b.getTime(), m);
  }
  return bucketStarts(from, to, bucket).map((b) => {
    const counts = byBucket.get(b.getTime()) ?? {};
    return { bucket: b, counts, total: Object.values(counts).reduce((s, n) => s + n, 0) };
  });
}
