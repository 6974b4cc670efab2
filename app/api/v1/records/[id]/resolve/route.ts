import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { idParamsSchema } from "@/lib/kernel/input";
import { RESOLVE_ACTION, resolveBodySchema, resolveRecord } from "@/lib/records/resolve";

/**
 * POST /api/v1/records/{id}/resolve  Idempotency-Key: <key>
 * { outcome: "completed" | "failed", providerReference (completed), reason, expectedVersion }
 * Resolves a pending (or stuck processing) record by hand, against the version the
 * operator saw: 200 with the record; 409 with its current state when it changed or
 * may not be resolved; 404 when it does not exist.
 */
export const POST = apiRoute(
  {
    access: "records.resolve",
    action: RESOLVE_ACTION,
    idempotent: true,
    summary: "Resolve a pending or stuck record by hand (completed with a provider reference, or failed)",
    params: idParamsSchema,
    body: resolveBodySchema,
  },
  async ({ params, body, principal, db, meta }) => jsonResponse(await resolveRecord(db, principal, params.id, body, meta)),
);

const refuse = methodNotAllowed(["POST"]);
export { refuse as GET, refuse as PUT, refuse as PATCH, refuse as DELETE };
