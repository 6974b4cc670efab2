import type { Statement } from "../db/params";
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

/** Which side a scope's open reconciliation items are counted from (the stores' openReconciliationSql). */
export type OpenItemsFrom = "items" | "records";

/**
 * What a probe of the record per open item costs against a probe of the items per record of a
 * scope: the first is a random read of the big records table (its primary key; on InnoDB the row
 * itself), the second a range of a scope index with a probe of the small items table's record_id
 * index. Measured (docs/scale.md, 2026-12-05): PostgreSQL 5M records, 7.3 against 0.57 µs (13×);
 * MariaDB 1M, 2.4 against ~1 µs with a buffer pool the size of the data, far more with 128 MB.
 * Four is the low side of that.
 */
export const RECORD_PROBE_COST = 4;

/**
 * The scope's open reconciliation items from the cheaper side: a probe of the items per record
 * of the scope while the scope's records (its `all` totals, read in the same snapshot) are fewer
 * than RECORD_PROBE_COST × the open items in all — a small tenant beside a large backlog — else
 * a probe of the record per open item. Both count exactly the same items. Without a scope there
 * is one statement (`open`).
 */
export async function countOpenItems(
  sql: { open: Statement; openUnfiltered?: Statement; openFromRecords?: Statement },
  totals: readonly { name: string; n: bigint | number }[],
  query: <T>(s: Statement) => Promise<T[]>,
): Promise<{ n: bigint }[]> {
  if (!sql.openUnfiltered || !sql.openFromRecords) return query<{ n: bigint }>(sql.open);
  const scopeRecords = totals.reduce((sum, r) => (r.name === "all" ? sum + Number(r.n) : sum), 0);
  const [all] = await query<{ n: bigint }>(sql.openUnfiltered);
  return query<{ n: bigint }>(scopeRecords < RECORD_PROBE_COST * Number(all.n) ? sql.openFromRecords : sql.open);
}
