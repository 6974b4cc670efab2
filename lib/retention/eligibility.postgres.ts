import type { Params } from "../db/params";
import { OPEN_RECONCILIATION_STATES } from "../kernel/vocabulary";
import type { EventProtection, RecordProtection } from "./eligibility";
import { cutoff, PROTECTING_COMPENSATION_STATES, type PolicyRule } from "./rules";

/**
 * THE purge eligibility condition (eligibility.ts) in PostgreSQL: the fragments every
 * purge statement builds on (purge-store.postgres.ts; lib/stats' purge candidates; the
 * bench's raw DELETE).
 *
 * The window is a disjunction with one clause per enabled policy — `operation = $op AND
 * expires_at < $cutoff` for an operation's own policy (index idempotency_records_
 * operation_expires_at_idx), `operation <> ALL($own) AND expires_at < $cutoff` for the
 * default (index idempotency_records_expires_at_idx) — so each clause is an index range.
 */

const list = (xs: readonly string[]) => xs.map((x) => `'${x}'`).join(", ");

/** Each protection of a record aliased `r`, true when it applies (never NULL); in RECORD_PROTECTIONS' order. */
export const RECORD_PROTECTION_SQL: Record<RecordProtection, (r: string) => string> = {
  unfinished: (r) => `${r}.status NOT IN ('completed', 'failed')`,
  legal_hold: (r) => `${r}.legal_hold`,
  scope_hold: (r) => `${r}.scope IN (SELECT h.scope FROM legal_holds h WHERE h.lifted_at IS NULL)`,
  reconciliation: (r) => `EXISTS (SELECT 1 FROM reconciliation_items i WHERE i.record_id = ${r}.id AND i.state IN (${list(OPEN_RECONCILIATION_STATES)}))`,
  compensation: (r) =>
    `(EXISTS (SELECT 1 FROM compensations c WHERE c.record_id = ${r}.id AND c.state IN (${list(PROTECTING_COMPENSATION_STATES)}))` +
    ` OR ${r}.id IN (SELECT c.related_record_id FROM compensations c WHERE c.related_record_id IS NOT NULL AND c.state IN (${list(PROTECTING_COMPENSATION_STATES)})))`,
  // Services name their outbox states as they like: anything but sent/failed is not dispatched yet.
  outbox: (r) => `EXISTS (SELECT 1 FROM outbox_messages o WHERE o.record_id = ${r}.id AND o.status NOT IN ('sent', 'failed'))`,
};

const ROLLUP_WATERMARK = `rollup_watermark('events')`;

/** Each protection of an event aliased `e`; in EVENT_PROTECTIONS' order. */
export const EVENT_PROTECTION_SQL: Record<EventProtection, (e: string) => string> = {
  not_rolled_up: (e) => `(${e}.id > ${ROLLUP_WATERMARK} OR ${e}.id IN (SELECT g.event_id FROM rollup_gaps g))`,
  scope_hold: (e) => `${e}.scope IN (SELECT h.scope FROM legal_holds h WHERE h.lifted_at IS NULL)`,
  legal_hold: (e) => `(${e}.record_id IS NOT NULL AND ${e}.record_id IN (SELECT x.id FROM idempotency_records x WHERE x.legal_hold))`,
};

/** The protections with their SQL, in order. */
export const recordProtections = () => Object.entries(RECORD_PROTECTION_SQL) as [RecordProtection, (r: string) => string][];
export const eventProtections = () => Object.entries(EVENT_PROTECTION_SQL) as [EventProtection, (e: string) => string][];

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

function window(
  rules: readonly PolicyRule[],
  p: Params,
  col: { operation: string; time: string },
  days: (r: PolicyRule) => number,
  asOf: Date,
  only?: PolicyRule,
): string {
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
  return recordProtections()
    .map(([, sql]) => `NOT (${sql(r)})`)
    .join(" AND ");
}

export function eventUnprotectedSql(e = "e"): string {
  return eventProtections()
    .map(([, sql]) => `NOT (${sql(e)})`)
    .join(" AND ");
}

/** THE record eligibility condition. */
export function recordEligibleSql(rules: readonly PolicyRule[], asOf: Date, p: Params, r = "r", only?: PolicyRule): string {
  return `${recordWindowSql(rules, asOf, p, r, only)} AND ${recordUnprotectedSql(r)}`;
}

/** THE event eligibility condition. */
export function eventEligibleSql(rules: readonly PolicyRule[], asOf: Date, p: Params, e = "e", only?: PolicyRule): string {
  return `${eventWindowSql(rules, asOf, p, e, only)} AND ${eventUnprotectedSql(e)}`;
}
