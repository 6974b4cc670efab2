import type { SqlExecutor } from "../db/sql";
import { retentionStore } from "./store";

/**
 * What a purge judges by: the retention policies as rules (snapshotted into
 * purge_runs.policies when a run starts), the day arithmetic of their windows, and the
 * compensation states that keep a record. Kept free of heavy imports so read-side
 * code (lib/stats/expiry.ts) can load them.
 */
export interface PolicyRule {
  id: string;
  /** null = the default policy. */
  operation: string | null;
  keepRecordsDays: number;
  keepEventsDays: number;
  enabled: boolean;
}

const DAY_MS = 86_400_000;

/**
 * Where a window of `days` ends as of `asOf`. Days are 24 h: the cutoffs are computed here
 * as as_of − days × 86 400 s (no calendar or time-zone arithmetic in SQL), so every caller
 * and the tests agree to the microsecond.
 */
export function cutoff(asOf: Date, days: number): Date {
  return new Date(asOf.getTime() - days * DAY_MS);
}

/**
 * Where the record window of `operation`'s policy ends as of `asOf` (its own policy if it has one,
 * else the default; null when that policy is disabled or there is none): the window clause of
 * eligibility.postgres.ts / eligibility.mysql.ts for one operation, for code that counts from the
 * census (lib/stats/expiry.ts).
 */
export function recordCutoff(rules: readonly PolicyRule[], operation: string, asOf: Date): Date | null {
  const rule = rules.find((r) => r.operation === operation) ?? rules.find((r) => r.operation === null);
  return rule?.enabled ? cutoff(asOf, rule.keepRecordsDays) : null;
}

/** A compensation in one of these states keeps its record (and the duplicate it undoes). */
export const PROTECTING_COMPENSATION_STATES = ["requested", "approved", "executing", "failed"] as const;

/** The current rules straight from SQL (for code that has only a raw SQL executor). */
export async function loadRules(sql: SqlExecutor): Promise<PolicyRule[]> {
  const rows = await retentionStore(sql).policyRules();
  return rows.map((r) => ({ id: String(r.id), operation: r.operation, keepRecordsDays: r.rec, keepEventsDays: r.ev, enabled: r.enabled }));
}
