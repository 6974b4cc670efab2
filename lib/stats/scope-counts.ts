import type { RecordStatus } from "../kernel/vocabulary";
import type { ExpiryInterval } from "./census-store";

/**
 * The statuses the overview counts beside the records' totals: failed alone (without a scope the
 * census counts them, ADR 0016; with one, the scope's pass below). Completed = all − processing −
 * pending − failed; processing and pending (with stuck, the oldest, by operation) are the active
 * statement's (store.*.ts activeByOperationSql: ranges of the unsettled index, with every
 * filter), so the pass does not read them a second time.
 */
export const COUNTED_STATUSES = ["failed"] as const satisfies readonly RecordStatus[];

/**
 * What the overview counts with a scope (there is no census per scope), per operation in one
 * pass over the scope's index entries: each record interval ('all', 'expired', the forecast
 * days) and the failed records (COUNTED_STATUSES). Rows of
 * { name, operation, n } where n > 0, the census's shape.
 *
 * The pass counts, per operation, every record, the records below each distinct bound of the
 * intervals (expires_at < b), and the failed records: its `columns`. Each number is then
 * one column, or the difference of two — [from, to) = below(to) − below(from), with below(no
 * bound) = every record, exact as expires_at is NOT NULL — taken after the grouping (a few
 * rows). So each column is one comparison, where two-sided ranges took two: MariaDB pays per
 * comparison on each of the scope's entries (1M, a 350k-record scope's pass: 174–188 → 154–156
 * ms), PostgreSQL per column (the same either way; docs/scale.md).
 */
export interface ScopePass {
  /** Each column's condition on a record `r` (null: every record), in the order of the text. */
  columns: (string | null)[];
  /** Each number: its row name, and the column it is (`plus`) less another (`minus`, or none). */
  numbers: { name: string; plus: number; minus: number | null }[];
}

/** The pass for `intervals`; `time` binds an instant in the dialect's spelling (called in column order). */
export function scopePass(intervals: readonly ExpiryInterval[], time: (d: Date) => string): ScopePass {
  const bounds = [...new Set(intervals.flatMap((i) => [i.from, i.to]).flatMap((d) => (d ? [d.getTime()] : [])))].sort((a, b) => a - b);
  const below = (d: Date | null, none: number | null) => (d ? 1 + bounds.indexOf(d.getTime()) : none);
  const statuses = COUNTED_STATUSES;
  return {
    columns: [
      null,
      ...bounds.map((b) => `r.expires_at < ${time(new Date(b))}`),
      // The status is the vocabulary's word, CHECK-constrained: written as a constant, like the status counts.
      ...statuses.map((s) => `r.status = '${s}'`),
    ],
    numbers: [
      ...intervals.map((i) => ({ name: i.name, plus: below(i.to, 0)!, minus: below(i.from, null) })),
      ...statuses.map((s, k) => ({ name: `status:${s}`, plus: 1 + bounds.length + k, minus: null })),
    ],
  };
}

/** A number of the pass as an expression of its grouped row `t` (columns c0, c1, …). */
export const scopeNumberSql = (n: ScopePass["numbers"][number]): string => `t.c${n.plus}${n.minus === null ? "" : ` - t.c${n.minus}`}`;
