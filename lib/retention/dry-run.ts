import { inTransaction, SNAPSHOT, type SqlExecutor } from "../db/sql";
import { EVENT_PROTECTIONS, eventEligibleSql, eventUnprotectedSql, eventWindowSql, RECORD_PROTECTIONS, recordEligibleSql, recordUnprotectedSql, recordWindowSql, type EventProtection, type RecordProtection } from "./eligibility";
import type { PolicyRule } from "./rules";
import { Params } from "../db/params";

/**
 * Dry run: what a purge as of `asOf` under `rules` would delete, per policy — the
 * eligible records and events, what is past the policy's window but protected, by
 * reason (a row may be kept for several reasons and then counts under each), and a
 * few sample records. All of it in one read-only snapshot, with the conditions of
 * lib/retention/eligibility.ts, so a run started with the same as_of and policies
 * deletes exactly these numbers when nothing changed in between.
 */


export interface SampleRecord {
  id: bigint;
  scope: string;
  operation: string;
  status: string;
  expiresAt: Date;
}

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

type CountRow = Record<string, bigint>;

async function policyCounts(db: SqlExecutor, rules: readonly PolicyRule[], rule: PolicyRule, asOf: Date, samples: number): Promise<DryRunPolicy> {
  const rp = new Params();
  const rec = await db.query<CountRow>(
    `SELECT count(*)::bigint AS past, count(*) FILTER (WHERE ${recordUnprotectedSql("r")})::bigint AS eligible,
            ${RECORD_PROTECTIONS.map((x) => `count(*) FILTER (WHERE ${x.sql("r")})::bigint AS "${x.reason}"`).join(", ")}
       FROM idempotency_records r WHERE ${recordWindowSql(rules, asOf, rp, "r", rule)}`,
    rp.values,
  );
  const ep = new Params();
  const ev = await db.query<CountRow>(
    `SELECT count(*)::bigint AS past, count(*) FILTER (WHERE ${eventUnprotectedSql("e")})::bigint AS eligible,
            ${EVENT_PROTECTIONS.map((x) => `count(*) FILTER (WHERE ${x.sql("e")})::bigint AS "${x.reason}"`).join(", ")}
       FROM idempotency_events e WHERE ${eventWindowSql(rules, asOf, ep, "e", rule)}`,
    ep.values,
  );
  const sp = new Params();
  const sampleRows =
    samples > 0
      ? await db.query<SampleRecord>(
          `SELECT r.id, r.scope, r.operation, r.status, r.expires_at AS "expiresAt" FROM idempotency_records r
            WHERE ${recordEligibleSql(rules, asOf, sp, "r", rule)} ORDER BY r.id LIMIT ${Math.floor(samples)}`,
          sp.values,
        )
      : [];
  const n = (row: CountRow, k: string) => Number(row[k] ?? 0n);
  return {
    policy: rule,
    records: {
      eligible: n(rec[0], "eligible"),
      pastWindow: n(rec[0], "past"),
      protected: Object.fromEntries(RECORD_PROTECTIONS.map((x) => [x.reason, n(rec[0], x.reason)])) as Record<RecordProtection, number>,
    },
    events: {
      eligible: n(ev[0], "eligible"),
      pastWindow: n(ev[0], "past"),
      protected: Object.fromEntries(EVENT_PROTECTIONS.map((x) => [x.reason, n(ev[0], x.reason)])) as Record<EventProtection, number>,
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
  return withSession((s) => inTransaction(s, () => dryRun(s, rules, asOf, opts), SNAPSHOT));
}

/** Eligible totals (what a run started now with these rules estimates; the dry run's totals). */
export async function countEligible(db: SqlExecutor, rules: readonly PolicyRule[], asOf: Date): Promise<{ records: number; events: number }> {
  const rp = new Params();
  const [r] = await db.query<{ n: bigint }>(`SELECT count(*)::bigint AS n FROM idempotency_records r WHERE ${recordEligibleSql(rules, asOf, rp)}`, rp.values);
  const ep = new Params();
  const [e] = await db.query<{ n: bigint }>(`SELECT count(*)::bigint AS n FROM idempotency_events e WHERE ${eventEligibleSql(rules, asOf, ep)}`, ep.values);
  return { records: Number(r.n), events: Number(e.n) };
}
