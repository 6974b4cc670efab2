import { inSnapshot, type SqlExecutor } from "../db/sql";
import { EVENT_PROTECTIONS, RECORD_PROTECTIONS, type EventProtection, type RecordProtection } from "./eligibility";
import { purgeStore, type SampleRecord } from "./purge-store";
import type { PolicyRule } from "./rules";

export type { SampleRecord } from "./purge-store";

/**
 * Dry run: what a purge as of `asOf` under `rules` would delete, per policy — the
 * eligible records and events, what is past the policy's window but protected, by
 * reason (a row may be kept for several reasons and then counts under each), and a
 * few sample records. All of it in one read-only snapshot, with the conditions of
 * lib/retention/eligibility.ts, so a run started with the same as_of and policies
 * deletes exactly these numbers when nothing changed in between.
 */

export interface DryRunPolicy {
  policy: PolicyRule;
  records: { eligible: number; pastWindow: number; protected: Record<RecordProtection, number> };
  events: { eligible: number; pastWindow: number; protected: Record<EventProtection, number> };
  samples: SampleRecord[];
}

export interface DryRun {
  asOf: Date;
  policies: DryRunPolicy[];
  totals: { records: number; events: number };
  /** The protections with their labels, for display. */
  reasons: { records: { reason: RecordProtection; label: string }[]; events: { reason: EventProtection; label: string }[] };
}

async function policyCounts(db: SqlExecutor, rules: readonly PolicyRule[], rule: PolicyRule, asOf: Date, samples: number): Promise<DryRunPolicy> {
  const store = purgeStore(db);
  const rec = await store.recordWindowCounts(rules, rule, asOf);
  const ev = await store.eventWindowCounts(rules, rule, asOf);
  const sampleRows = samples > 0 ? await store.sampleRecords(rules, rule, asOf, samples) : [];
  const n = (row: Partial<Record<string, bigint>>, k: string) => Number(row[k] ?? 0n);
  return {
    policy: rule,
    records: {
      eligible: n(rec, "eligible"),
      pastWindow: n(rec, "past"),
      protected: Object.fromEntries(RECORD_PROTECTIONS.map((x) => [x.reason, n(rec, x.reason)])) as Record<RecordProtection, number>,
    },
    events: {
      eligible: n(ev, "eligible"),
      pastWindow: n(ev, "past"),
      protected: Object.fromEntries(EVENT_PROTECTIONS.map((x) => [x.reason, n(ev, x.reason)])) as Record<EventProtection, number>,
    },
    samples: sampleRows.map((s) => ({ ...s, id: BigInt(s.id) })),
  };
}

/** The dry run over `db` (call it inside one snapshot: see dryRunInSnapshot). */
export async function dryRun(db: SqlExecutor, rules: readonly PolicyRule[], asOf: Date, opts: { samples?: number } = {}): Promise<DryRun> {
  const policies: DryRunPolicy[] = [];
  for (const rule of rules) policies.push(await policyCounts(db, rules, rule, asOf, opts.samples ?? 5));
  return {
    asOf,
    policies,
    totals: {
      records: policies.reduce((s, p) => s + p.records.eligible, 0),
      events: policies.reduce((s, p) => s + p.events.eligible, 0),
    },
    reasons: {
      records: RECORD_PROTECTIONS.map(({ reason, label }) => ({ reason, label })),
      events: EVENT_PROTECTIONS.map(({ reason, label }) => ({ reason, label })),
    },
  };
}

/** One REPEATABLE READ, read-only snapshot on its own session, so the numbers agree with each other. */
export async function dryRunInSnapshot(
  withSession: <T>(fn: (s: SqlExecutor) => Promise<T>) => Promise<T>,
  rules: readonly PolicyRule[],
  asOf: Date,
  opts: { samples?: number } = {},
): Promise<DryRun> {
  return withSession((s) => inSnapshot(s, () => dryRun(s, rules, asOf, opts)));
}

/** Eligible totals (what a run started now with these rules estimates; the dry run's totals). */
export async function countEligible(db: SqlExecutor, rules: readonly PolicyRule[], asOf: Date): Promise<{ records: number; events: number }> {
  const store = purgeStore(db);
  const records = await store.countEligibleRecords(rules, asOf);
  const events = await store.countEligibleEvents(rules, asOf);
  return { records: Number(records), events: Number(events) };
}
