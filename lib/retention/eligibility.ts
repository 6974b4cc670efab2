import { Params } from "../db/params";
import { OPEN_RECONCILIATION_STATES } from "../kernel/vocabulary";
import type { PolicyRule } from "./rules";

/**
 * THE purge eligibility definition, in SQL. Everything that asks "may this row be
 * purged?" builds its condition here: the dry run, the purge worker's batches (which
 * re-check it under row locks), the expiry screen's "purge candidates", the bench's
 * raw DELETE. Tests compare it against an independent, hand-written computation.
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
 * Days are 24 h: the cutoffs are computed here as as_of − days × 86 400 s (no calendar
 * or time-zone arithmetic in SQL), so every caller and the tests agree to the microsecond.
 *
 * The window is a disjunction with one clause per enabled policy — `operation = $op AND
 * expires_at < $cutoff` for an operation's own policy (index idempotency_records_
 * operation_expires_at_idx), `operation <> ALL($own) AND expires_at < $cutoff` for the
 * default (index idempotency_records_expires_at_idx) — so each clause is an index range.
 */

const DAY_MS = 86_400_000;

export function cutoff(asOf: Date, days: number): Date {
  return new Date(asOf.getTime() - days * DAY_MS);
}

export const PROTECTING_COMPENSATION_STATES = ["requested", "approved", "executing", "failed"] as const;

const list = (xs: readonly string[]) => xs.map((x) => `'${x}'`).join(", ");

export type RecordProtection = "unfinished" | "legal_hold" | "scope_hold" | "reconciliation" | "compensation" | "outbox";
export type EventProtection = "not_rolled_up" | "scope_hold" | "legal_hold";

/** Why a record past its window is kept; each is true when the protection applies (never NULL). */
export const RECORD_PROTECTIONS: { reason: RecordProtection; label: string; sql: (r: string) => string }[] = [
  { reason: "unfinished", label: "still processing or pending", sql: (r) => `${r}.status NOT IN ('completed', 'failed')` },
  { reason: "legal_hold", label: "legal hold on the record", sql: (r) => `${r}.legal_hold` },
  {
    reason: "scope_hold",
    label: "legal hold on its scope",
    sql: (r) => `${r}.scope IN (SELECT h.scope FROM legal_holds h WHERE h.lifted_at IS NULL)`,
  },
  {
    reason: "reconciliation",
    label: "open reconciliation item",
    sql: (r) =>
      `EXISTS (SELECT 1 FROM reconciliation_items i WHERE i.record_id = ${r}.id AND i.state IN (${list(OPEN_RECONCILIATION_STATES)}))`,
  },
  {
    reason: "compensation",
    label: "compensation in progress",
    sql: (r) =>
      `(EXISTS (SELECT 1 FROM compensations c WHERE c.record_id = ${r}.id AND c.state IN (${list(PROTECTING_COMPENSATION_STATES)}))` +
      ` OR ${r}.id IN (SELECT c.related_record_id FROM compensations c WHERE c.related_record_id IS NOT NULL AND c.state IN (${list(PROTECTING_COMPENSATION_STATES)})))`,
  },
  {
    reason: "outbox",
    label: "outbox message not sent yet",
    // Services name their outbox states as they like: anything but sent/failed is not dispatched yet.
    sql: (r) => `EXISTS (SELECT 1 FROM outbox_messages o WHERE o.record_id = ${r}.id AND o.status NOT IN ('sent', 'failed'))`,
  },
];

const ROLLUP_WATERMARK = `COALESCE((SELECT s.watermark FROM rollup_state s WHERE s.name = 'events'), 0)`;

export const EVENT_PROTECTIONS: { reason: EventProtection; label: string; sql: (e: string) => string }[] = [
  {
    reason: "not_rolled_up",
    label: "not rolled up for the overview yet",
    sql: (e) => `(${e}.id > ${ROLLUP_WATERMARK} OR ${e}.id IN (SELECT g.event_id FROM rollup_gaps g))`,
  },
  { reason: "scope_hold", label: "legal hold on its scope", sql: (e) => `${e}.scope IN (SELECT h.scope FROM legal_holds h WHERE h.lifted_at IS NULL)` },
  {
    reason: "legal_hold",
    label: "legal hold on its record",
    sql: (e) => `(${e}.record_id IS NOT NULL AND ${e}.record_id IN (SELECT x.id FROM idempotency_records x WHERE x.legal_hold))`,
  },
];

/** Enabled policies whose window applies to rows (null: none). */
function windowClause(
  rule: PolicyRule,
  rules: readonly PolicyRule[],
  p: Params,
  col: { operation: string; time: string },
  days: (r: PolicyRule) => number,
  asOf: Date,
): string | null {
  if (!rule.enabled) return null;
  const before = `${col.time} < ${p.time(cutoff(asOf, days(rule)))}`;
  if (rule.operation !== null) return `(${col.operation} = ${p.add(rule.operation)} AND ${before})`;
  const own = rules.filter((x) => x.operation !== null).map((x) => x.operation!);
  return own.length ? `(${col.operation} <> ALL (${p.texts(own)}) AND ${before})` : `(${before})`;
}

function window(rules: readonly PolicyRule[], p: Params, col: { operation: string; time: string }, days: (r: PolicyRule) => number, asOf: Date, only?: PolicyRule): string {
  const clauses = (only ? [only] : rules).map((r) => windowClause(r, rules, p, col, days, asOf)).filter((c): c is string => c !== null);
  return clauses.length ? `(${clauses.join(" OR ")})` : "false";
}

/** Records past their policy's window (any status), optionally of one policy only. */
export function recordWindowSql(rules: readonly PolicyRule[], asOf: Date, p: Params, r = "r", only?: PolicyRule): string {
  return window(rules, p, { operation: `${r}.operation`, time: `${r}.expires_at` }, (x) => x.keepRecordsDays, asOf, only);
}

export function eventWindowSql(rules: readonly PolicyRule[], asOf: Date, p: Params, e = "e", only?: PolicyRule): string {
  return window(rules, p, { operation: `${e}.operation`, time: `${e}.occurred_at` }, (x) => x.keepEventsDays, asOf, only);
}

/** No protection applies to the record aliased `r`. */
export function recordUnprotectedSql(r = "r"): string {
  return RECORD_PROTECTIONS.map((x) => `NOT (${x.sql(r)})`).join(" AND ");
}

export function eventUnprotectedSql(e = "e"): string {
  return EVENT_PROTECTIONS.map((x) => `NOT (${x.sql(e)})`).join(" AND ");
}

/** THE record eligibility condition. */
export function recordEligibleSql(rules: readonly PolicyRule[], asOf: Date, p: Params, r = "r", only?: PolicyRule): string {
  return `${recordWindowSql(rules, asOf, p, r, only)} AND ${recordUnprotectedSql(r)}`;
}

/** THE event eligibility condition. */
export function eventEligibleSql(rules: readonly PolicyRule[], asOf: Date, p: Params, e = "e", only?: PolicyRule): string {
  return `${eventWindowSql(rules, asOf, p, e, only)} AND ${eventUnprotectedSql(e)}`;
}

/** Every eligible record id, ascending (for tests and small tables). */
export function eligibleRecordIdsSql(rules: readonly PolicyRule[], asOf: Date): { text: string; values: unknown[] } {
  const p = new Params();
  return { text: `SELECT r.id FROM idempotency_records r WHERE ${recordEligibleSql(rules, asOf, p)} ORDER BY r.id`, values: p.values };
}

export function eligibleEventIdsSql(rules: readonly PolicyRule[], asOf: Date): { text: string; values: unknown[] } {
  const p = new Params();
  return { text: `SELECT e.id FROM idempotency_events e WHERE ${eventEligibleSql(rules, asOf, p)} ORDER BY e.id`, values: p.values };
}
