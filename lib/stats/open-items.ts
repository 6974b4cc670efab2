import type { Statement } from "../db/params";

/** Which side a scope's open reconciliation items are counted from (the stores' openReconciliationSql). */
export type OpenItemsFrom = "items" | "records";

/**
 * The scope's open reconciliation items from the cheaper side: a probe of the items per record
 * of the scope while the scope's records (its `all` totals, read in the same snapshot) are fewer
 * than `itemCost` × the open items in all — a small tenant beside a large backlog — else the
 * items' side (`open`). `itemCost` is what the items' side costs per open item against a
 * records-side probe, per dialect: both stores' items sides find each item's record among the
 * processing and pending records read once from the unsettled index (PostgreSQL hashes them,
 * MySQL materializes them with a key) — about one probe's cost each: 1. (MySQL's looked each
 * item's record up in the big table until 2026-12-05: 2.4× a probe with a buffer pool the size
 * of the data, far more with 128 MB, so 4.) Both sides count exactly the same items. Without a
 * scope there is one statement.
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
