import { z } from "zod";
import type { SqlExecutor } from "../db/sql";
import type { PrismaClient } from "../generated/prisma/client";
import { operationSchema } from "../idempotency/schemas";
import { intParam, isoTime, optional, resolveRange } from "../kernel/input";
import { listPolicies } from "../retention/policies";
import { insightsConfig, RETRY_SLICES } from "./config";
import { insightsStore, type LateRetryRow, type Range, type RetryWindowRow } from "./store";

/**
 * The retention advisor: per operation, how long after a key's first request its client
 * still comes back — the retry window, first request (the record's created_at) to its last
 * replay, in-progress rejection or conflict — as p50 / p95 / p99 / max over the period, beside
 * the expiry the writers set and the console's retention policy. Flags:
 * - retries after expiry: same-payload retries (replayed, in_progress) that arrived after the
 *   record's expires_at. The record was still held, so it was replayed; once it is purged the
 *   service reserves a new record for the same intent — a double charge waiting to happen;
 * - kept far longer than any retry: the expiry is at least INSIGHTS_STORAGE_FACTOR times the
 *   longest retry window observed (storage for nothing).
 * A proposal per operation pre-fills the retention form; saving it stays an admin's audited
 * action (lib/retention/policies.ts).
 *
 * Sampling, stated in every answer: per operation at most `sample` retry events, the newest of
 * each of 24 equal slices of the period (index ranges of (operation, kind, occurred_at)), each
 * joined to its record by primary key. Expiry: the median of each operation's 100 records that
 * expire last.
 */

const DAY_MS = 86_400_000;
export const MAX_SPAN_MS = 31 * DAY_MS;
/** Late retries listed per operation at most (the count covers the whole sample). */
export const LATE_LIST_LIMIT = 50;
/** Fewer retried keys than this: no storage verdict (too little to tell). */
export const STORAGE_MIN_KEYS = 20;

export const retentionQuerySchema = z
  .object({
    from: optional(isoTime),
    to: optional(isoTime),
    operation: optional(operationSchema),
    /** Retry events sampled per operation (default INSIGHTS_RETRY_SAMPLE, 6000). */
    sample: optional(intParam(100, 1_000_000)),
  })
  .strict()
  .transform((v, ctx) => {
    const range = resolveRange(v, { defaultSpanMs: 30 * DAY_MS, maxSpanMs: MAX_SPAN_MS });
    if (typeof range === "string") {
      ctx.addIssue({ code: "custom", message: range, path: ["from"] });
      return z.NEVER;
    }
    return { ...range, operation: v.operation, sample: v.sample };
  });

export type RetentionFlag = { kind: "retries_after_expiry"; count: number; text: string } | { kind: "kept_too_long"; factor: number; text: string };

export interface RetentionProposal {
  operation: string;
  keepRecordsDays: number;
  keepEventsDays: number;
  /** What the writers should set as expiry (their TTL), seconds. */
  serviceTtlSeconds: number | null;
  why: string;
}

export interface OperationAdvice {
  operation: string;
  retries: { events: number; keys: number; purged: number; sampled: boolean };
  window: { p50Seconds: number | null; p95Seconds: number | null; p99Seconds: number | null; maxSeconds: number | null };
  expiry: { ttlSeconds: number | null; records: number };
  policy: { source: "operation" | "default" | "none"; keepRecordsDays: number | null; keepEventsDays: number | null; enabled: boolean };
  flags: RetentionFlag[];
  lateRetries: { count: number; items: (LateRetryRow & { lateBySeconds: number })[] };
  proposal: RetentionProposal;
}

export interface RetentionAdvice {
  from: Date;
  to: Date;
  sampling: { perOperation: number; storageFactor: number; note: string };
  operations: OperationAdvice[];
}

const DEFAULT_EVENTS_DAYS = 30;
const ceilDays = (seconds: number) => Math.max(1, Math.ceil(seconds / 86400));
/** Round a duration up to a whole hour (under a day) or a whole day. */
export function roundUpDuration(seconds: number): number {
  return seconds <= 86400 ? Math.max(3600, Math.ceil(seconds / 3600) * 3600) : Math.ceil(seconds / 86400) * 86400;
}

/** The advice for one operation (no database). */
export function adviseOperation(
  w: RetryWindowRow | undefined,
  operation: string,
  expiry: { ttlSeconds: number | null; records: number },
  policy: OperationAdvice["policy"],
  storageFactor: number,
): OperationAdvice {
  const flags: RetentionFlag[] = [];
  const late = (w?.late ?? []).map((l) => ({ ...l, lateBySeconds: Math.round((l.occurredAt.getTime() - l.expiresAt.getTime()) / 1000) }));
  const lateCount = w?.lateCount ?? 0;
  const maxLate = Math.max(0, ...late.map((l) => l.lateBySeconds));
  if (lateCount > 0) {
    flags.push({
      kind: "retries_after_expiry",
      count: lateCount,
      text: `${lateCount} retr${lateCount === 1 ? "y" : "ies"} with the same payload came after the key expired (up to ${Math.ceil(maxLate / 3600)} h late): replayed only because the record was still held — once it is purged the service reserves a new record for the same intent.`,
    });
  }
  const ttl = expiry.ttlSeconds;
  const longest = w?.maxSeconds ?? null;
  if (ttl !== null && longest !== null && (w?.keys ?? 0) >= STORAGE_MIN_KEYS && lateCount === 0) {
    const factor = ttl / Math.max(longest, 1);
    if (factor >= storageFactor) {
      flags.push({
        kind: "kept_too_long",
        factor: Math.round(factor),
        text: `Keys are kept ${Math.round(factor)}× longer than the longest retry seen (expiry ${Math.round(ttl / 3600)} h, longest retry ${Math.max(1, Math.round(longest / 60))} min): storage for nothing.`,
      });
    }
  }
  const keepEventsDays = policy.keepEventsDays ?? DEFAULT_EVENTS_DAYS;
  const currentRecords = policy.keepRecordsDays;
  let keepRecordsDays = currentRecords ?? 7;
  let serviceTtlSeconds: number | null = ttl;
  const why: string[] = [];
  if (lateCount > 0) {
    keepRecordsDays = Math.max(keepRecordsDays, ceilDays(maxLate) + 1);
    serviceTtlSeconds = roundUpDuration((ttl ?? 0) + maxLate * 1.5);
    why.push(
      `keep records ${keepRecordsDays} d after expiry so late retries are still replayed, and raise the writers' expiry to ${Math.round(serviceTtlSeconds / 3600)} h`,
    );
  } else if (flags.some((f) => f.kind === "kept_too_long") && longest !== null) {
    serviceTtlSeconds = roundUpDuration(Math.max(longest * 10, (w?.p99Seconds ?? 0) * 20));
    keepRecordsDays = Math.min(keepRecordsDays, 1);
    why.push(`let the writers expire keys after ${Math.round(serviceTtlSeconds / 3600)} h (10× the longest retry) and purge a day after expiry`);
  } else {
    why.push("the current settings cover every retry seen");
  }
  return {
    operation,
    retries: { events: w?.events ?? 0, keys: w?.keys ?? 0, purged: w?.purged ?? 0, sampled: w?.sampled ?? false },
    window: { p50Seconds: w?.p50Seconds ?? null, p95Seconds: w?.p95Seconds ?? null, p99Seconds: w?.p99Seconds ?? null, maxSeconds: longest },
    expiry,
    policy,
    flags,
    lateRetries: { count: lateCount, items: late },
    proposal: { operation, keepRecordsDays, keepEventsDays, serviceTtlSeconds, why: why.join("; ") },
  };
}

export async function retentionAdvice(
  db: { sql: SqlExecutor; prisma: PrismaClient },
  input: Range & { operation?: string; sample?: number },
): Promise<RetentionAdvice> {
  const cfg = insightsConfig();
  const perOperation = input.sample ?? cfg.retrySample;
  const store = insightsStore(db.sql);
  const [windows, expiries, policies] = [
    await store.retryWindows(input, perOperation, LATE_LIST_LIMIT),
    await store.expiryByOperation(),
    await listPolicies(db.prisma),
  ];
  const byOp = new Map(windows.map((w) => [w.operation, w]));
  const expiry = new Map(expiries.map((e) => [e.operation, e]));
  const operations = [...new Set([...byOp.keys(), ...expiry.keys()])].filter((op) => !input.operation || op === input.operation).sort();
  const fallback = policies.find((p) => p.operation === null);
  return {
    from: input.from,
    to: input.to,
    sampling: {
      perOperation,
      storageFactor: cfg.storageFactor,
      note:
        `Retry windows from at most ${perOperation} retry events (replayed, in progress, conflict) per operation — the newest of each of ${RETRY_SLICES} equal slices of the range — each with its record; ` +
        `expiry: the median of each operation's 100 records that expire last.`,
    },
    operations: operations.map((op) => {
      const own = policies.find((p) => p.operation === op);
      const p = own ?? fallback;
      const policy: OperationAdvice["policy"] = p
        ? { source: own ? "operation" : "default", keepRecordsDays: p.keepRecordsDays, keepEventsDays: p.keepEventsDays, enabled: p.enabled }
        : { source: "none", keepRecordsDays: null, keepEventsDays: null, enabled: false };
      const e = expiry.get(op);
      return adviseOperation(byOp.get(op), op, { ttlSeconds: e?.ttlSeconds ?? null, records: e?.records ?? 0 }, policy, cfg.storageFactor);
    }),
  };
}
