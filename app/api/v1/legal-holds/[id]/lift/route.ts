import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { idParamsSchema } from "@/lib/kernel/input";
import { liftHoldBodySchema, liftScopeHold } from "@/lib/retention/legal-holds";

/** POST /api/v1/legal-holds/{id}/lift — { reason }. The hold row stays (who lifted it, when, why); 409 when already lifted. */
export const POST = apiRoute(
  {
    access: "legal_holds.manage",
    summary: "Lift a scope legal hold",
    params: idParamsSchema,
    body: liftHoldBodySchema,
    action: "legal_holds.lift",
    idempotent: true,
  },
  async ({ db, principal, params, body, meta }) => jsonResponse({ hold: await liftScopeHold(db.prisma, principal, params.id, body.reason, meta) }),
);

const refuse = methodNotAllowed(["POST"]);
export { refuse as GET, refuse as PUT, refuse as PATCH, refuse as DELETE };
