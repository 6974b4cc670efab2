import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { listHoldsQuerySchema, listScopeHolds, scopeHoldBodySchema, setScopeHold } from "@/lib/retention/legal-holds";

/**
 * GET  /api/v1/legal-holds?state=active|lifted|all&scope= — scope-wide legal holds, newest first.
 * POST /api/v1/legal-holds — { scope, reason } → 201: none of the scope's records or events is
 *      purged while the hold is active. 409 when the scope already has an active hold.
 */
export const GET = apiRoute({ access: "stats.read", summary: "List scope legal holds", query: listHoldsQuerySchema }, async ({ db, query }) =>
  jsonResponse({ holds: await listScopeHolds(db.prisma, query) }),
);

export const POST = apiRoute(
  { access: "legal_holds.manage", summary: "Put a whole scope under a legal hold", body: scopeHoldBodySchema, action: "legal_holds.set", idempotent: true },
  async ({ db, principal, body, meta }) => jsonResponse({ hold: await setScopeHold(db.prisma, principal, body, meta) }, { status: 201 }),
);

const refuse = methodNotAllowed(["GET", "POST"]);
export { refuse as PUT, refuse as PATCH, refuse as DELETE };
