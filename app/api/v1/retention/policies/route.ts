import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { createPolicy, createPolicyBodySchema, listPolicies } from "@/lib/retention/policies";

/**
 * GET  /api/v1/retention/policies — every retention policy (the default, operation null, first).
 * POST /api/v1/retention/policies — { operation (null = default), keepRecordsDays, keepEventsDays,
 *      enabled?, reason } → 201; 409 when that operation (or the default) has one already.
 */
export const GET = apiRoute({ access: "stats.read", summary: "List retention policies" }, async ({ db }) =>
  jsonResponse({ policies: await listPolicies(db.prisma) }),
);

export const POST = apiRoute(
  {
    access: "retention.manage",
    summary: "Create a retention policy (per operation, or the default)",
    body: createPolicyBodySchema,
    action: "retention.policies.create",
    idempotent: true,
  },
  async ({ db, principal, body, meta }) => {
    const policy = await createPolicy(db.prisma, principal, body, meta);
    return jsonResponse({ policy }, { status: 201, headers: { location: `/api/v1/retention/policies/${policy.id}` } });
  },
);

const refuse = methodNotAllowed(["GET", "POST"]);
export { refuse as PUT, refuse as PATCH, refuse as DELETE };
