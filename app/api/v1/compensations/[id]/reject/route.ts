import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { idParamsSchema } from "@/lib/kernel/input";
import { decisionBodySchema, rejectCompensation } from "@/lib/compensations";

/** POST /api/v1/compensations/{id}/reject  { reason }: 403 for the requester, 409 unless requested. */
export const POST = apiRoute(
  {
    access: "compensations.approve",
    summary: "Reject someone else's compensation",
    action: "compensations.reject",
    idempotent: true,
    params: idParamsSchema,
    body: decisionBodySchema,
  },
  async ({ params, body, principal, db, meta }) => jsonResponse(await rejectCompensation({ database: db, principal, request: meta }, params.id, body.reason)),
);

const refuse = methodNotAllowed(["POST"]);
export { refuse as GET, refuse as PUT, refuse as PATCH, refuse as DELETE };
