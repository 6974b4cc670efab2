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
 * The scope's open reconciliation items from the cheaper side: a probe of the items per record
 * of the scope while the scope's records (its `all` totals, read in the same snapshot) are fewer
 * than `itemCost` × the open items in all — a small tenant beside a large backlog — else the
 * items' side (`open`). `itemCost` is what the items' side costs per open item against a
 * records-side probe, per dialect: PostgreSQL's items side hashes the open items against the
 * unsettled index (about one probe's cost each: 1); MySQL's looks up each item's record, a random
 * read of the big table (2.4× a probe with a buffer pool the size of the data, far more with
 * 128 MB: 4). Both sides count exactly the same items. Without a scope there is one statement.
 */
export async function countOpenItems(
  sql: { open: Statement; openUnfiltered?: Statement; openFromRecords?: Statement },
  totals: readonly { name: string; n: bigint | number }[],
  query: <T>(s: Statement) => Promise<T[]>,
  itemCost: number,
): Promise<{ n: bigint }[]> {
  if (!sql.openUnfiltered || !sql.openFromRecords) return query<{ n: bigint }>(sql.open);
  const scopeRecords = totals.reduce((sum, r) => (r.name === "all" ? sum + Number(r.n) : sum), 0);
  const [all] = await query<{ n: bigint }>(sql.openUnfiltered);
  return query<{ n: bigint }>(scopeRecords < itemCost * Number(all.n) ? sql.openFromRecords : sql.open);
}
