import { z } from "zod";
import { reasonSchema } from "../kernel/input";
import type { RequestMeta } from "../audit";
import { auditRefusals, requirePermission, type Actor } from "../auth/users";
import type { Database } from "../db/client";
import { operationSchema, scopeSchema } from "../idempotency/schemas";
import { BULK_LIMIT, confirmationText } from "./confirm";
import { reconcileConfigFromEnv } from "./config";
import { reconcileRecord, type ReconcileDb, type ReconcileOptions, type ReconcileOutcome } from "./core";
import { ProblemError } from "../kernel/problem";
import { reconcileStore } from "./store";

/**
 * Bulk "check with provider": up to BULK_LIMIT records per call, named by id or
 * by a filter (operation, scope, provider) over the records awaiting
 * reconciliation (pending, or with an open item), oldest first. The caller must
 * type the exact confirmation the API states — `check 37 records` — so a count
 * that changed since it was shown is caught: a missing or different `confirm`
 * is a 400 that names the expected text and the count (nothing is checked).
 * `dryRun: true` answers the same count and text without checking anything.
 * Each record is checked as an operator's single check (reconcileRecord: its
 * own claim, lookup, transaction and audit entry); lookups run a few at a time
 * (RECONCILE_CONCURRENCY). One record's refusal (404, 409) is its outcome, not
 * the call's.
 */

export const BULK_ACTION = "records.reconcile_bulk";
export { BULK_LIMIT, confirmationText };

const idString = z
  .string({ error: "must be record ids as decimal strings" })
  .regex(/^[1-9]\d{0,18}$/, "must be record ids as decimal strings")
  .transform((v) => BigInt(v));

export const bulkFilterSchema = z
  .object({
    operation: operationSchema.optional(),
    scope: scopeSchema.optional(),
    provider: z.string().trim().min(1).max(100).optional(),
  })
  .strict();

export const bulkReconcileBodySchema = z
  .object({
    recordIds: z.array(idString).min(1, "must name at least one record").max(BULK_LIMIT, `must name at most ${BULK_LIMIT} records`).optional(),
    filter: bulkFilterSchema.optional(),
    /** Must equal the text the API states, e.g. "check 37 records". */
    confirm: z.string().max(100).optional(),
    dryRun: z.boolean().optional(),
    reason: reasonSchema,
  })
  .strict()
  .superRefine((b, ctx) => {
    if ((b.recordIds === undefined) === (b.filter === undefined)) {
      ctx.addIssue({ code: "custom", path: ["recordIds"], message: "give either recordIds or filter (exactly one)" });
    }
  });

export type BulkReconcileBody = z.output<typeof bulkReconcileBodySchema>;
export type BulkFilter = z.output<typeof bulkFilterSchema>;

export class ConfirmationRequiredError extends ProblemError {
  constructor(expected: string, count: number, given: string | undefined) {
    super(
      400,
      "confirmation-required",
      "Confirmation required",
      given === undefined
        ? `Type "${expected}" in confirm to check these ${count} record${count === 1 ? "" : "s"} with the provider.`
        : `The confirmation does not match: type "${expected}" (the selection is ${count} record${count === 1 ? "" : "s"} now).`,
      { expectedConfirmation: expected, count },
    );
  }
}

export interface BulkSelection {
  recordIds: bigint[];
  /** All records the filter matches (recordIds holds the first BULK_LIMIT of them, oldest first). */
  total: number;
}

/** Records awaiting reconciliation that match the filter: pending, or with an open item; oldest change first. */
export async function selectByFilter(db: Pick<Database, "sql">, filter: BulkFilter, limit = BULK_LIMIT): Promise<BulkSelection> {
  const store = reconcileStore(db.sql);
  const [recordIds, total] = await Promise.all([store.awaitingIds(filter, limit), store.countAwaiting(filter)]);
  return { recordIds, total: Number(total) };
}

export interface BulkRecordOutcome {
  recordId: bigint;
  ok: boolean;
  outcome: ReconcileOutcome | null;
  /** Why this record was not checked: the refusal's own title, detail and (409) cause — never a generic label. */
  error: { status: number; title: string; detail: string; cause?: string } | null;
}

export interface BulkResult {
  dryRun: boolean;
  count: number;
  total: number;
  /** Matching records beyond this call's limit (filter mode): run again for them. */
  remaining: number;
  confirmation: string;
  recordIds: bigint[];
  outcomes: BulkRecordOutcome[];
  summary: Record<string, number>;
}

async function mapLimited<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

export async function reconcileBulk(db: ReconcileDb, actor: Actor, body: BulkReconcileBody, opts: ReconcileOptions = {}): Promise<BulkResult> {
  const request: RequestMeta | undefined = opts.request;
  return auditRefusals(
    db.prisma,
    actor,
    { action: BULK_ACTION, reason: body.reason, request, detail: body.filter ? { filter: body.filter } : { recordIds: body.recordIds?.map(String) } },
    async () => {
      requirePermission(actor, "records.reconcile");
      const selection: BulkSelection = body.recordIds
        ? { recordIds: [...new Set(body.recordIds.map(String))].map((s) => BigInt(s)), total: 0 }
        : await selectByFilter(db, body.filter!);
      if (body.recordIds) selection.total = selection.recordIds.length;
      const count = selection.recordIds.length;
      const confirmation = confirmationText(count);
      const base = { count, total: selection.total, remaining: Math.max(0, selection.total - count), confirmation, recordIds: selection.recordIds };
      if (body.dryRun) return { dryRun: true, ...base, outcomes: [], summary: {} };
      if (count === 0)
        throw new ProblemError(409, "nothing-to-check", "Nothing to check", "No record matches: none is pending or has an open reconciliation item.", {
          count: 0,
        });
      if (body.confirm?.trim() !== confirmation) throw new ConfirmationRequiredError(confirmation, count, body.confirm);

      const config = opts.config ?? reconcileConfigFromEnv();
      const outcomes = await mapLimited(selection.recordIds, config.concurrency, async (recordId): Promise<BulkRecordOutcome> => {
        try {
          const outcome = await reconcileRecord(db, recordId, actor, { ...opts, config, reason: body.reason });
          return { recordId, ok: true, outcome, error: null };
        } catch (err) {
          if (err instanceof ProblemError) {
            const cause = typeof err.extensions.cause === "string" ? err.extensions.cause : undefined;
            return { recordId, ok: false, outcome: null, error: { status: err.status, title: err.title, detail: err.message, ...(cause ? { cause } : {}) } };
          }
          console.error(`bulk reconcile: record ${recordId}:`, err);
          return { recordId, ok: false, outcome: null, error: { status: 500, title: "Internal error", detail: "The check failed; it has been logged." } };
        }
      });
      const summary: Record<string, number> = {};
      for (const o of outcomes) {
        const k = o.outcome ? o.outcome.action : o.error?.status === 409 && o.error.cause ? "nothing_to_check" : "refused";
        summary[k] = (summary[k] ?? 0) + 1;
      }
      return { dryRun: false, ...base, outcomes, summary };
    },
  );
}
