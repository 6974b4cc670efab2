import { RECORD_STATUSES, type RecordStatus } from "../kernel/vocabulary";
import type { ExpiryInterval } from "./census-store";

/** One number of a scope's pass: its row name and which of the scope's records it counts. */
export type ScopeCount = { name: string } & ({ status: RecordStatus } | { interval: ExpiryInterval });

/**
 * What the overview counts with a scope (there is no census per scope), per operation in one
 * pass over the scope's index entries: each record interval ('all', 'expired', the forecast
 * days) and each unsettled status (completed = all − these, as without a scope). One row each
 * of { name, operation, n } where n > 0, the census's shape.
 */
export function scopeCounts(intervals: readonly ExpiryInterval[]): ScopeCount[] {
  return [
    ...intervals.map((interval) => ({ name: interval.name, interval })),
    ...RECORD_STATUSES.filter((s) => s !== "completed").map((status) => ({ name: `status:${status}`, status })),
  ];
}

/** A scope count's condition on a record `r` (null: every record); `time` binds an instant in the dialect's spelling. */
export function scopeCountWhere(c: ScopeCount, time: (d: Date) => string): string | null {
  // The status is the vocabulary's word, CHECK-constrained: written as a constant, like the status counts.
  if ("status" in c) return `r.status = '${c.status}'`;
  const { from, to } = c.interval;
  return [...(from ? [`r.expires_at >= ${time(from)}`] : []), ...(to ? [`r.expires_at < ${time(to)}`] : [])].join(" AND ") || null;
}
