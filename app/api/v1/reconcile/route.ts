import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { BULK_ACTION, bulkReconcileBodySchema, reconcileBulk } from "@/lib/reconcile/bulk";

/**
 * POST /api/v1/reconcile  Idempotency-Key: <key>
 * { recordIds: ["1", …] (1–100) | filter: { operation?, scope?, provider? }, confirm, dryRun?, reason }
 * Bulk "check with provider", at most 100 records per call. `confirm` must be the
 * exact text the API states ("check 37 records"): otherwise 400 with
 * expectedConfirmation and count, and nothing is checked. dryRun: true answers the
 * count and the text only. 200: one outcome per record.
 */
export const POST = apiRoute(
  {
    access: "records.reconcile",
    action: BULK_ACTION,
    idempotent: true,
    summary: "Check up to 100 records with their providers (typed confirmation)",
    body: bulkReconcileBodySchema,
  },
  async ({ body, principal, db, meta }) => jsonResponse(await reconcileBulk(db, principal, body, { request: meta })),
);

const refuse = methodNotAllowed(["POST"]);
export { refuse as GET, refuse as PUT, refuse as PATCH, refuse as DELETE };
