import { z } from "zod";
import { idSchema } from "../kernel/input";
import { reasonSchema } from "../api/schemas";
import { can, type Principal } from "../auth/permissions";
import type { SqlExecutor } from "../db/sql";
import { pageOf } from "../records/search";
import { NotFoundError } from "../kernel/errors";
import { cursorParam, cursorTimeSql, type Page } from "../db/paging";
import { intParam, optional } from "../kernel/input";
import { paramList } from "../db/params";

/**
 * Compensations (refund / void / cancel of a completed record's charge): what a row
 * is, how it is read, and what a given viewer may do with it. The changes
 * themselves are in ./actions.ts.
 *
 * Life cycle (CHECK-constrained in the migration 20261130050000_operator_actions):
 *
 *   requested ──approve──▶ approved ──▶ executing ──▶ executed
 *       │                                  │  ▲
 *       └──reject──▶ rejected              ▼  │ retry
 *                                        failed
 *
 * `executing` and `approved` left behind by a crashed process (older than the lease,
 * see config.ts) may be retried too. Every attempt sends the same
 * provider_idempotency_key, so the provider executes the compensation at most once.
 */

export const COMPENSATION_KINDS = ["refund", "void", "cancel"] as const;
export type CompensationKind = (typeof COMPENSATION_KINDS)[number];
export const COMPENSATION_STATES = ["requested", "approved", "rejected", "executing", "executed", "failed"] as const;
export type CompensationState = (typeof COMPENSATION_STATES)[number];

/** The audit trail's target table for every compensation action. */
export const COMPENSATIONS_TABLE = "compensations";

/**
 * last_error of a failed attempt whose outcome at the provider is unknown (timeout,
 * lost answer, 5xx) starts with this. Such a compensation still claims its amount
 * (the provider may have executed it), unlike one the provider refused.
 */
export const OUTCOME_UNKNOWN_PREFIX = "outcome unknown";

/**
 * Whether a compensation counts against the record's amount: everything except
 * rejected ones and failed ones the provider definitely refused (or that never
 * reached it). SQL over the table aliased `c`.
 */
export const CLAIMS_SQL = (c = "c") =>
  `(${c}.state IN ('requested', 'approved', 'executing', 'executed') OR (${c}.state = 'failed' AND ${c}.last_error LIKE '${OUTCOME_UNKNOWN_PREFIX}%'))`;

export interface CompensationRow {
  id: bigint;
  /** null once the record was purged (scope/operation/idempotencyKey keep what it was). */
  recordId: bigint | null;
  scope: string;
  operation: string;
  idempotencyKey: string;
  relatedRecordId: bigint | null;
  kind: CompensationKind;
  amountMinor: bigint;
  currency: string;
  provider: string;
  providerReference: string;
  providerIdempotencyKey: string;
  state: CompensationState;
  reason: string;
  requestedBy: bigint;
  requestedByLabel: string;
  requestedAt: Date;
  decidedBy: bigint | null;
  decidedByLabel: string | null;
  decidedAt: Date | null;
  decisionReason: string | null;
  attempts: number;
  lastAttemptAt: Date | null;
  lastError: string | null;
  providerCompensationId: string | null;
  executedAt: Date | null;
  version: number;
  createdAt: Date;
  updatedAt: Date;
  /** Counts against the record's amount (see CLAIMS_SQL). */
  claimsAmount: boolean;
  /**
   * An approved compensation never started, or an attempt still `executing`, older
   * than the lease: the process running it most likely died; a retry may take over.
   */
  stale: boolean;
}

/** SELECT list of CompensationRow for the table aliased `c`; $lease is the lease in seconds. */
export function compensationColumns(lease: string, c = "c"): string {
  return `${c}.id, ${c}.record_id AS "recordId", ${c}.scope, ${c}.operation, ${c}.idempotency_key AS "idempotencyKey",
    ${c}.related_record_id AS "relatedRecordId", ${c}.kind, ${c}.amount_minor AS "amountMinor", ${c}.currency, ${c}.provider,
    ${c}.provider_reference AS "providerReference", ${c}.provider_idempotency_key AS "providerIdempotencyKey", ${c}.state, ${c}.reason,
    ${c}.requested_by AS "requestedBy", ${c}.requested_by_label AS "requestedByLabel", ${c}.requested_at AS "requestedAt",
    ${c}.decided_by AS "decidedBy", ${c}.decided_by_label AS "decidedByLabel", ${c}.decided_at AS "decidedAt",
    ${c}.decision_reason AS "decisionReason", ${c}.attempts, ${c}.last_attempt_at AS "lastAttemptAt", ${c}.last_error AS "lastError",
    ${c}.provider_compensation_id AS "providerCompensationId", ${c}.executed_at AS "executedAt", ${c}.version,
    ${c}.created_at AS "createdAt", ${c}.updated_at AS "updatedAt", ${CLAIMS_SQL(c)} AS "claimsAmount",
    ((${c}.state = 'executing' AND ${c}.last_attempt_at < now() - make_interval(secs => ${lease}))
      OR (${c}.state = 'approved' AND ${c}.decided_at < now() - make_interval(secs => ${lease}))) AS "stale"`;
}

// --- What a viewer may do ------------------------------------------------------------------

export interface CompensationActions {
  approve: boolean;
  reject: boolean;
  retry: boolean;
}

export interface CompensationView extends CompensationRow {
  /** The viewer asked for it: someone else must decide. */
  requestedByYou: boolean;
  /** What the viewer may do now (the API decides again on every call). */
  actions: CompensationActions;
  /** Why an action the viewer might expect is not offered (shown next to the buttons). */
  note: string | null;
}

/**
 * Retry needs compensations.approve: it re-sends a decision someone else already
 * approved (same amount, same provider idempotency key), so whoever may approve may
 * push it through — the requester too, when they also hold the approver role,
 * since the four-eyes decision is already made and a retry changes nothing in it.
 */
export const RETRY_PERMISSION = "compensations.approve" as const;

export function viewOf(row: CompensationRow, viewer: Pick<Principal, "userId" | "permissions"> | null): CompensationView {
  const requestedByYou = viewer !== null && row.requestedBy === viewer.userId;
  const mayApprove = can(viewer, "compensations.approve");
  const decidable = row.state === "requested";
  const retryable = row.state === "failed" || row.stale;
  const actions = {
    approve: decidable && mayApprove && !requestedByYou,
    reject: decidable && mayApprove && !requestedByYou,
    retry: retryable && can(viewer, RETRY_PERMISSION),
  };
  let note: string | null = null;
  if (decidable && requestedByYou) note = "You requested this compensation: someone else must approve or reject it (four eyes).";
  else if (decidable && !mayApprove) note = "Waiting for approval by someone holding compensations.approve.";
  else if (retryable && !actions.retry) note = `A retry needs the permission ${RETRY_PERMISSION}.`;
  else if (row.state === "executing" && !row.stale) note = "The provider is being asked right now.";
  return { ...row, requestedByYou, actions, note };
}

// --- Reading ------------------------------------------------------------------------------

export const listQuerySchema = z
  .object({
    state: optional(z.enum(COMPENSATION_STATES)),
    recordId: optional(idSchema),
    limit: optional(intParam(1, 200)).transform((v) => v ?? 50),
    cursor: optional(cursorParam),
  })
  .strict();
export type ListQuery = z.output<typeof listQuerySchema>;

/** Positive amounts in minor units, as a JSON integer or a decimal string (beyond 2^53). */
const amountSchema = z
  .union([z.number().int("must be a whole number of minor units").safe(), z.string().trim().regex(/^\d{1,18}$/, "must be a whole number of minor units")])
  .transform((v) => BigInt(v))
  .refine((v) => v > 0n, "must be greater than 0");

export const requestBodySchema = z
  .object({
    recordId: idSchema,
    kind: z.enum(COMPENSATION_KINDS),
    amountMinor: amountSchema,
    /** Optional: the record's currency is used; any other is refused. */
    currency: z.string().trim().toUpperCase().regex(/^[A-Z]{3}$/, "must be an ISO 4217 code such as EUR").optional(),
    reason: reasonSchema,
    /** The suspected duplicate this compensation undoes (duplicate-charge hand-over). */
    relatedRecordId: idSchema.nullish(),
  })
  .strict();
export type RequestBody = z.output<typeof requestBodySchema>;

export const decisionBodySchema = z.object({ reason: reasonSchema }).strict();

export async function listCompensations(sql: SqlExecutor, query: Partial<ListQuery> & { leaseSeconds: number }): Promise<Page<CompensationRow>> {
  const limit = query.limit ?? 50;
  const p = paramList();
  const lease = p.add(query.leaseSeconds);
  const where: string[] = [];
  if (query.state) where.push(`c.state = ${p.add(query.state)}`);
  if (query.recordId !== undefined) where.push(`c.record_id = ${p.add(query.recordId)}::bigint`);
  if (query.cursor) where.push(`(c.requested_at, c.id) < (${p.add(query.cursor.t)}::timestamptz, ${p.add(query.cursor.id)}::bigint)`);
  const take = p.add(limit + 1);
  // (state, requested_at) serves the state filter in page order; record_id the record's few.
  const rows = await sql.query<CompensationRow & { cursorTime: string }>(
    `SELECT ${compensationColumns(lease)}, ${cursorTimeSql("c.requested_at")} AS "cursorTime"
       FROM compensations c ${where.length ? `WHERE ${where.join(" AND ")}` : ""}
      ORDER BY c.requested_at DESC, c.id DESC LIMIT ${take}`,
    p.values,
  );
  return pageOf(rows, limit, (r) => ({ t: r.cursorTime, id: r.id }));
}

export async function getCompensation(sql: SqlExecutor, id: bigint, leaseSeconds: number): Promise<CompensationRow> {
  const [row] = await sql.query<CompensationRow>(`SELECT ${compensationColumns("$2")} FROM compensations c WHERE c.id = $1`, [id, leaseSeconds]);
  if (!row) throw new NotFoundError(`There is no compensation ${id}.`);
  return row;
}

/** Every compensation of one record, oldest first (record detail). */
export async function compensationsOfRecord(sql: SqlExecutor, recordId: bigint, leaseSeconds: number): Promise<CompensationRow[]> {
  return sql.query<CompensationRow>(
    `SELECT ${compensationColumns("$2")} FROM compensations c WHERE c.record_id = $1 ORDER BY c.requested_at, c.id`,
    [recordId, leaseSeconds],
  );
}
