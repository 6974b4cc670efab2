import { z } from "zod";
import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { idParamsSchema, reasonSchema } from "@/lib/kernel/input";
import { RECONCILE_ACTION, reconcileRecord } from "@/lib/reconcile/core";

/**
 * POST /api/v1/records/{id}/reconcile  Idempotency-Key: <key>  { reason }
 * Asks the provider about the record's open reconciliation item and resolves
 * accordingly: 200 with the outcome (completed, failed, rescheduled, needs_manual,
 * confirmed, superseded); 409 when there is nothing to check or a check is running.
 */
export const POST = apiRoute(
  {
    access: "records.reconcile",
    action: RECONCILE_ACTION,
    idempotent: true,
    summary: "Check a record with its provider and resolve it accordingly",
    params: idParamsSchema,
    body: z.object({ reason: reasonSchema }).strict(),
  },
  async ({ params, body, principal, db, meta }) => jsonResponse(await reconcileRecord(db, params.id, principal, { reason: body.reason, request: meta })),
);

const refuse = methodNotAllowed(["POST"]);
export { refuse as GET, refuse as PUT, refuse as PATCH, refuse as DELETE };
