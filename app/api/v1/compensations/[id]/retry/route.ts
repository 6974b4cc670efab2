import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { idParamsSchema } from "@/lib/kernel/input";
import { decisionBodySchema, retryCompensation, RETRY_PERMISSION } from "@/lib/compensations";

/**
 * POST /api/v1/compensations/{id}/retry  { reason }
 * Sends a failed compensation again (or one a crashed process left executing past its lease),
 * with the same provider idempotency key: the provider executes it at most once.
 * Needs compensations.approve (the approved decision is re-sent unchanged); 409 from other states.
 */
export const POST = apiRoute(
  {
    access: RETRY_PERMISSION,
    summary: "Retry a failed compensation (same provider idempotency key)",
    action: "compensations.retry",
    idempotent: true,
    params: idParamsSchema,
    body: decisionBodySchema,
  },
  async ({ params, body, principal, db, meta }) => jsonResponse(await retryCompensation({ database: db, principal, request: meta }, params.id, body.reason)),
);

const refuse = methodNotAllowed(["POST"]);
export { refuse as GET, refuse as PUT, refuse as PATCH, refuse as DELETE };
