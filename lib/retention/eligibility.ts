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
