/**
 * THE purge eligibility definition. Everything that asks "may this row be purged?"
 * builds its condition from the spelling of it in the database's dialect
 * (eligibility.postgres.ts, eligibility.mysql.ts): the dry run, the purge worker's batches (which re-check it
 * under row locks), the expiry screen's "purge candidates", the bench's raw DELETE. Tests
 * compare it against an independent, hand-written computation.
 *
 * A record is eligible when
 *   - it is past its policy's window: expires_at + keep_records_days < as_of, where the
 *     policy is its operation's own (if any) or else the default (operation NULL), and
 *     that policy is enabled; and
 *   - no protection applies (RECORD_PROTECTIONS): it is completed or failed (never
 *     processing or pending), has no record-level legal hold, its scope has no active
 *     legal hold, it has no reconciliation item in open/checking/needs_manual, no
 *     compensation (as the record compensated or as the duplicate it undoes) in
 *     requested/approved/executing/failed, and no outbox message still pending (the
 *     cascade would delete it before it was sent).
 * An event is eligible when occurred_at + keep_events_days < as_of for its operation's
 * policy, and no protection applies (EVENT_PROTECTIONS): it has been rolled up (id at or
 * below the rollup watermark and not a gap — so the overview's counts keep it), its scope
 * has no active legal hold, and its record (if any) has no legal hold.
 *
 * Days are 24 h (cutoff, rules.ts).
 */

import type { Params } from "../db/params";
import { OPEN_RECONCILIATION_STATES } from "../kernel/vocabulary";
import { PROTECTING_COMPENSATION_STATES } from "./rules";

export type RecordProtection = "unfinished" | "legal_hold" | "scope_hold" | "reconciliation" | "compensation" | "outbox";
export type EventProtection = "not_rolled_up" | "scope_hold" | "legal_hold";

/** Why a record past its window is kept, in the order the dry run reports them. */
export const RECORD_PROTECTIONS: { reason: RecordProtection; label: string }[] = [
  { reason: "unfinished", label: "still processing or pending" },
  { reason: "legal_hold", label: "legal hold on the record" },
  { reason: "scope_hold", label: "legal hold on its scope" },
  { reason: "reconciliation", label: "open reconciliation item" },
  { reason: "compensation", label: "compensation in progress" },
  { reason: "outbox", label: "outbox message not sent yet" },
];

export const EVENT_PROTECTIONS: { reason: EventProtection; label: string }[] = [
  { reason: "not_rolled_up", label: "not rolled up for the overview yet" },
  { reason: "scope_hold", label: "legal hold on its scope" },
  { reason: "legal_hold", label: "legal hold on its record" },
];

const list = (xs: readonly string[]) => xs.map((x) => `'${x}'`).join(", ");

/**
 * The record protections from their own side, for counting without reading every record: the
 * ids of the completed and failed records a protection other than "unfinished" or "scope_hold"
 * may apply to (a superset: callers still judge each record by the dialect's
 * RECORD_PROTECTION_SQL). Each branch is an index range of a small table or of a partial index:
 * records with a legal hold, open reconciliation items, protecting compensations (both sides),
 * outbox messages not sent yet (NOT IN as three ranges of the status index). Each id once, with
 * `has_open_item` (1: it has an open reconciliation item; the Expiry page counts them from here
 * rather than hashing the open items a second time). Less the processing and pending records'
 * ids, read once from the unsettled-status index and hashed (dialect.readOnce keeps both
 * databases from turning it into a probe per id): where open items are on pending records, most
 * ids go without a primary-key probe. The records of held scopes are not among them: as many as
 * a scope holds, they are read by the scope (heldScopeRecordsSql). The same SQL in both dialects.
 * Used by the Expiry page (lib/stats/expiry.ts); test/records-stats.test.ts compares it with the
 * plain count.
 */
export function protectedRecordIdsSql(p: Params): string {
  const comp = list(PROTECTING_COMPENSATION_STATES);
  const unsettled = p.dialect.readOnce(`u.id FROM idempotency_records u WHERE u.status IN ('processing', 'pending')`);
  return `SELECT k.id, MAX(k.has_open_item) AS has_open_item FROM (
       SELECT x.id, 0 AS has_open_item FROM idempotency_records x WHERE x.legal_hold
       UNION ALL SELECT i.record_id, 1 FROM reconciliation_items i WHERE i.state IN (${list(OPEN_RECONCILIATION_STATES)})
       UNION ALL SELECT c.record_id, 0 FROM compensations c WHERE c.state IN (${comp})
       UNION ALL SELECT c.related_record_id, 0 FROM compensations c WHERE c.related_record_id IS NOT NULL AND c.state IN (${comp})
       UNION ALL SELECT o.record_id, 0 FROM outbox_messages o
              WHERE (o.status < 'failed' OR (o.status > 'failed' AND o.status < 'sent') OR o.status > 'sent') AND o.record_id IS NOT NULL
     ) k LEFT JOIN (${unsettled}) u ON u.id = k.id
     WHERE u.id IS NULL GROUP BY k.id`;
}

/**
 * The records (as `r`) of the scopes under an active legal hold that `on` also matches, as a FROM
 * clause with its WHERE: an index range of the scope per hold (Dialect.joinEach). The planner
 * cannot size a held scope — none of the records or a third of them — and joined by hash it read
 * every record whatever the scope held (1M records, a hold on a 10k-record scope: the Expiry
 * page 27 → 274 ms). `columns`: those of r the caller reads — with only the scope-counts index's
 * columns the read is index-only (InnoDB's carries the primary key too).
 */
export function heldScopeRecordsSql(p: Params, on: string, columns: string): string {
  const index = "idempotency_records_scope_counts_idx"; // (scope, operation, expires_at, status)
  return `legal_holds h ${p.dialect.joinEach("idempotency_records", "r", `r.scope = h.scope AND ${on}`, columns, index)} WHERE h.lifted_at IS NULL`;
}

/** Joins to a record `r` the active hold on its scope as `hs` (hs.scope IS NULL: none; one at most, a unique index). */
export const HELD_SCOPE_OF_RECORD = `LEFT JOIN legal_holds hs ON hs.scope = r.scope AND hs.lifted_at IS NULL`;
