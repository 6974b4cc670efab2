import { z } from "zod";
import type { SqlExecutor } from "../db/sql";
import { operationSchema, scopeSchema } from "../idempotency/schemas";
import type { RecordSummary } from "./row";
import { durationParam, intParam, isoTime, optional, resolveRange } from "../kernel/input";
import { duplicatesStore, type DuplicateProbe } from "./duplicates-store";
import { DEFAULT_WINDOW_SECONDS, DUPLICATE_BASES, MAX_PAIRS, MAX_WINDOW_SECONDS, MIN_WINDOW_SECONDS, type DuplicateBasis } from "./vocabulary";

/**
 * Duplicate-charge investigation: the double charges an idempotency key cannot catch
 * because the client sent a NEW key for the same intent (a fresh key per click).
 * Two records are suspected duplicates when they share scope and operation, have
 * different keys, were created within `window` of each other, and either
 * - carry the same payload_hash (the same request, byte for byte after normalisation), or
 * - carry the same amount_minor, currency and resource_id (the same money for the same thing).
 *
 * A pair is found when its EARLIER record was created in [from, to). Pairs sharing a
 * record form one cluster (three clicks → one cluster of three).
 *
 * Every statement is an index range or probe, never a read of the whole table: the
 * statements, and the indexes they use, are in duplicates-store.postgres.ts.
 */

const DAY_MS = 86_400_000;
export const MAX_CLUSTERS = 500;

export const duplicatesQuerySchema = z
  .object({
    from: optional(isoTime),
    to: optional(isoTime),
    /** How far apart two records may be created (default 10m; 1m … 24h). */
    window: optional(durationParam(MIN_WINDOW_SECONDS, MAX_WINDOW_SECONDS)),
    scope: optional(scopeSchema),
    operation: optional(operationSchema),
    /** Which rule (default both). */
    basis: optional(z.enum([...DUPLICATE_BASES, "both"])),
    limit: optional(intParam(1, MAX_CLUSTERS)),
  })
  .strict()
  .transform((v, ctx) => {
    // No range given: every record still held (the keys' whole lifetime), resolved by findDuplicates.
    if (v.from === undefined && v.to === undefined) return { ...rest(v), from: undefined, to: undefined };
    // A range: at most 31 days across all customers; any length for one scope (its index bounds the work).
    const range = resolveRange(v, { defaultSpanMs: DAY_MS, maxSpanMs: v.scope ? Number.MAX_SAFE_INTEGER : 31 * DAY_MS });
    if (typeof range === "string") {
      ctx.addIssue({ code: "custom", message: range, path: ["from"] });
      return z.NEVER;
    }
    return { ...rest(v), ...range };
  });

function rest(v: { window?: number; scope?: string; operation?: string; basis?: DuplicateBasis | "both"; limit?: number }) {
  return {
    windowSeconds: v.window ?? DEFAULT_WINDOW_SECONDS,
    scope: v.scope,
    operation: v.operation,
    bases: v.basis === undefined || v.basis === "both" ? [...DUPLICATE_BASES] : [v.basis],
    limit: v.limit ?? 100,
  };
}

export type DuplicatesQuery = z.output<typeof duplicatesQuerySchema>;
export interface DuplicatesInput {
  /** Both absent: every record still held (from the oldest one, of the scope when given, until now). */
  from?: Date;
  to?: Date;
  windowSeconds?: number;
  scope?: string;
  operation?: string;
  bases?: DuplicateBasis[];
  limit?: number;
}

export interface DuplicatePair {
  first: bigint;
  second: bigint;
  basis: DuplicateBasis[];
  secondsApart: number;
}

export interface DuplicateCluster {
  scope: string;
  operation: string;
  basis: DuplicateBasis[];
  /** Set when every record in the cluster has the same value. */
  payloadHash: string | null;
  amountMinor: bigint | null;
  currency: string | null;
  firstAt: Date;
  lastAt: Date;
  spanSeconds: number;
  /** Completed records among them: two or more is money taken twice unless refunded. */
  completed: number;
  /** Distinct provider references: the charges to look up at the provider. */
  providerReferences: string[];
  /** Oldest first, side by side. */
  records: RecordSummary[];
  pairs: DuplicatePair[];
}

export interface DuplicatesResult {
  /** The range searched (records created in [from, to)); with `lifetime`, from is the oldest record held. */
  from: Date;
  to: Date;
  /** No range was asked for: every record still held was searched (the keys' whole lifetime). */
  lifetime: boolean;
  windowSeconds: number;
  bases: DuplicateBasis[];
  clusters: DuplicateCluster[];
  /** More clusters (or pairs) exist than were returned: narrow the range or filters. */
  truncated: boolean;
}

/**
 * The range of "every record still held": from the oldest record (of the scope, when given)
 * to now, or just past the newest record when a writer's clock runs ahead. Both ends come
 * from the ends of (created_at, id) or (scope, created_at, id): two index probes.
 */
export async function lifetimeRange(sql: SqlExecutor, scope: string | undefined, now = new Date()): Promise<{ from: Date; to: Date }> {
  const row = await duplicatesStore(sql).createdRange(scope);
  const newest = row?.newest ? new Date(row.newest).getTime() + 1 : 0;
  const to = new Date(Math.max(now.getTime(), newest));
  const from = row?.oldest ? new Date(row.oldest) : now;
  return { from: from < to ? from : new Date(to.getTime() - 1), to };
}

export async function findDuplicates(sql: SqlExecutor, input: DuplicatesInput): Promise<DuplicatesResult> {
  const windowSeconds = input.windowSeconds ?? DEFAULT_WINDOW_SECONDS;
  const bases = input.bases ?? [...DUPLICATE_BASES];
  const limit = Math.min(input.limit ?? 100, MAX_CLUSTERS);
  const lifetime = input.from === undefined && input.to === undefined;
  const { from, to } = lifetime
    ? await lifetimeRange(sql, input.scope)
    : { from: input.from ?? new Date((input.to ?? new Date()).getTime() - DAY_MS), to: input.to ?? new Date() };
  const store = duplicatesStore(sql);
  const raw = await store.pairs({ ...input, from, to, windowSeconds, bases });
  let truncated = raw.length > MAX_PAIRS;
  const rows = raw.slice(0, MAX_PAIRS);

  // One pair per (first, second), with every basis that found it.
  const pairs = new Map<string, DuplicatePair>();
  for (const r of rows) {
    const k = `${r.first}:${r.second}`;
    const pair = pairs.get(k) ?? { first: r.first, second: r.second, basis: [], secondsApart: Math.round(r.secondsApart) };
    if (!pair.basis.includes(r.basis)) pair.basis.push(r.basis);
    pairs.set(k, pair);
  }

  // Clusters: connected components of the pairs (union-find on ids).
  const parent = new Map<bigint, bigint>();
  const find = (x: bigint): bigint => {
    let root = x;
    while (parent.get(root)! !== root) root = parent.get(root)!;
    parent.set(x, root);
    return root;
  };
  for (const pair of pairs.values()) {
    for (const id of [pair.first, pair.second]) if (!parent.has(id)) parent.set(id, id);
    const [ra, rb] = [find(pair.first), find(pair.second)];
    if (ra !== rb) parent.set(ra, rb);
  }
  const ids = [...parent.keys()];
  const records = ids.length ? await store.records(ids) : [];
  const byId = new Map(records.map((r) => [r.id, r]));

  const groups = new Map<bigint, { records: RecordSummary[]; pairs: DuplicatePair[] }>();
  for (const pair of pairs.values()) {
    const root = find(pair.first);
    const g = groups.get(root) ?? { records: [], pairs: [] };
    g.pairs.push(pair);
    groups.set(root, g);
  }
  for (const id of ids) {
    const r = byId.get(id);
    if (r) groups.get(find(id))!.records.push(r); // a record purged meanwhile is simply absent
  }

  let clusters = [...groups.values()].filter((g) => g.records.length >= 2).map((g) => clusterOf(g.records, g.pairs));
  clusters.sort((a, b) => b.lastAt.getTime() - a.lastAt.getTime());
  if (clusters.length > limit) {
    clusters = clusters.slice(0, limit);
    truncated = true;
  }
  return { from, to, lifetime, windowSeconds, bases, clusters, truncated };
}

function same<T>(values: T[]): T | null {
  return values.every((v) => v === values[0]) ? values[0] : null;
}

function clusterOf(records: RecordSummary[], pairs: DuplicatePair[]): DuplicateCluster {
  records.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : 1));
  const firstAt = records[0].createdAt;
  const lastAt = records[records.length - 1].createdAt;
  const amounts = records.map((r) => r.amountMinor);
  const amount = amounts.every((a) => a !== null && a === amounts[0]) ? amounts[0] : null;
  return {
    scope: records[0].scope,
    operation: records[0].operation,
    basis: DUPLICATE_BASES.filter((b) => pairs.some((p) => p.basis.includes(b))),
    payloadHash: same(records.map((r) => r.payloadHash)),
    amountMinor: amount,
    currency: same(records.map((r) => r.currency)),
    firstAt,
    lastAt,
    spanSeconds: Math.round((lastAt.getTime() - firstAt.getTime()) / 1000),
    completed: records.filter((r) => r.status === "completed").length,
    providerReferences: [...new Set(records.map((r) => r.providerReference).filter((x): x is string => x !== null))],
    records,
    pairs: pairs.sort((a, b) => (a.first === b.first ? (a.second < b.second ? -1 : 1) : a.first < b.first ? -1 : 1)),
  };
}

export interface SuspectedDuplicate extends RecordSummary {
  basis: DuplicateBasis[];
  /** Positive: created after the record in question. */
  secondsApart: number;
  /**
   * The cluster member it pairs with when that is not the record in question (a third
   * click minutes after the second); absent for the record's direct partners.
   */
  via?: bigint;
}

/** At most this many records of one record's cluster are read (a cluster is a handful of clicks). */
export const MAX_CLUSTER_RECORDS = 50;

/**
 * The suspected duplicates of one record (record detail): its whole cluster under the
 * duplicates screen's rules — its partners within ±window, their partners, and so on —
 * so the record page always lists what /duplicates groups with it, however the clicks
 * were spread. Each hop is the same two index probes; at most MAX_CLUSTER_RECORDS.
 */
export async function duplicatesOfRecord(sql: SqlExecutor, record: DuplicateProbe, windowSeconds = DEFAULT_WINDOW_SECONDS): Promise<SuspectedDuplicate[]> {
  const store = duplicatesStore(sql);
  const out = new Map<bigint, SuspectedDuplicate>();
  const seen = new Set<bigint>([record.id]);
  let frontier: DuplicateProbe[] = [record];
  while (frontier.length && out.size < MAX_CLUSTER_RECORDS) {
    const next: DuplicateProbe[] = [];
    for (const member of frontier) {
      for (const { basis, ...r } of await store.partners(member, windowSeconds)) {
        if (r.id === record.id) continue;
        const d = out.get(r.id) ?? {
          ...r,
          basis: [],
          secondsApart: Math.round((r.createdAt.getTime() - record.createdAt.getTime()) / 1000),
          ...(member.id === record.id ? {} : { via: member.id }),
        };
        if ((member.id === record.id || d.via === member.id) && !d.basis.includes(basis)) d.basis.push(basis);
        out.set(r.id, d);
        if (!seen.has(r.id)) {
          seen.add(r.id);
          next.push(r);
        }
      }
    }
    frontier = next;
  }
  return [...out.values()].sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime()).slice(0, MAX_CLUSTER_RECORDS);
}
