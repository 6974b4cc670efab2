import { z } from "zod";
import { idSchema } from "../kernel/input";
import { reasonSchema } from "../kernel/input";
import { can, type Principal } from "../auth/permissions";
import type { SqlExecutor } from "../db/sql";
import { pageOf } from "../db/paging";
import { NotFoundError } from "../kernel/errors";
import { cursorParam, type Page } from "../db/paging";
import { intParam, optional } from "../kernel/input";
import { compensationStore } from "./store";
import { COMPENSATION_KINDS, COMPENSATION_STATES, type CompensationKind, type CompensationState } from "./vocabulary";

export { COMPENSATION_KINDS, COMPENSATION_STATES, OUTCOME_UNKNOWN_PREFIX, type CompensationKind, type CompensationState } from "./vocabulary";

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

/** The audit trail's target table for every compensation action. */
export const COMPENSATIONS_TABLE = "compensations";

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
  /**
   * Counts against the record's amount: everything except rejected ones and failed ones
   * the provider definitely refused or that never reached it (a failure whose outcome is
   * unknown, last_error OUTCOME_UNKNOWN_PREFIX…, still claims: the provider may have executed it).
   */
  claimsAmount: boolean;
  /**
   * An approved compensation never started, or an attempt still `executing`, older
   * than the lease: the process running it most likely died; a retry may take over.
   */
  stale: boolean;
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
  .union([
    z.number().int("must be a whole number of minor units").safe(),
    z
      .string()
      .trim()
      .regex(/^\d{1,18}$/, "must be a whole number of minor units"),
  ])
  .transform((v) => BigInt(v))
  .refine((v) => v > 0n, "must be greater than 0");

export const requestBodySchema = z
  .object({
    recordId: idSchema,
    kind: z.enum(COMPENSATION_KINDS),
    amountMinor: amountSchema,
    /** Optional: the record's currency is used; any other is refused. */
    currency: z
      .string()
      .trim()
      .toUpperCase()
      .regex(/^[A-Z]{3}$/, "must be an ISO 4217 code such as EUR")
      .optional(),
    reason: reasonSchema,
    /** The suspected duplicate this compensation undoes (duplicate-charge hand-over). */
    relatedRecordId: idSchema.nullish(),
  })
  .strict();
export type RequestBody = z.output<typeof requestBodySchema>;

export const decisionBodySchema = z.object({ reason: reasonSchema }).strict();

export async function listCompensations(sql: SqlExecutor, query: Partial<ListQuery> & { leaseSeconds: number }): Promise<Page<CompensationRow>> {
  const limit = query.limit ?? 50;
  const rows = await compensationStore(sql).page({ state: query.state, recordId: query.recordId, cursor: query.cursor, limit }, query.leaseSeconds);
  return pageOf(rows, limit, (r) => ({ t: r.cursorTime, id: r.id }));
}

export async function getCompensation(sql: SqlExecutor, id: bigint, leaseSeconds: number): Promise<CompensationRow> {
  const row = await compensationStore(sql).get(id, leaseSeconds);
  if (!row) throw new NotFoundError(`There is no compensation ${id}.`);
  return row;
}

/** Every compensation of one record, oldest first (record detail). */
export async function compensationsOfRecord(sql: SqlExecutor, recordId: bigint, leaseSeconds: number): Promise<CompensationRow[]> {
  return compensationStore(sql).ofRecord(recordId, leaseSeconds);
}
