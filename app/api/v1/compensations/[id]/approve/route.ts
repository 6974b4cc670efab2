import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { idParamsSchema } from "@/lib/kernel/input";
import { approveCompensation, decisionBodySchema } from "@/lib/compensations";

/**
 * POST /api/v1/compensations/{id}/approve  { reason }
 * Approves someone else's requested compensation (403 for the requester, 409 unless requested)
 * and executes it through the provider; the answer carries the outcome (executed or failed).
 */
export const POST = apiRoute(
  {
    access: "compensations.approve",
    summary: "Approve someone else's compensation and execute it",
    action: "compensations.approve",
    idempotent: true,
    params: idParamsSchema,
    body: decisionBodySchema,
  },
  async ({ params, body, principal, db, meta }) => jsonResponse(await approveCompensation({ database: db, principal, request: meta }, params.id, body.reason)),
);

const refuse = methodNotAllowed(["POST"]);
export { refuse as GET, refuse as PUT, refuse as PATCH, refuse as DELETE };
