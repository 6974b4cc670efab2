import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { idParamsSchema } from "@/lib/kernel/input";
import { deletePolicy, deletePolicyBodySchema, updatePolicy, updatePolicyBodySchema } from "@/lib/retention/policies";

/**
 * PUT    /api/v1/retention/policies/{id} — { keepRecordsDays, keepEventsDays, enabled?, reason }.
 * DELETE /api/v1/retention/policies/{id} — { reason }. Without its policy an operation falls back
 *        to the default; without a default, operations without a policy are never purged.
 * Both audited with before/after; 404 when the policy does not exist.
 */
export const PUT = apiRoute(
  {
    access: "retention.manage",
    summary: "Change a retention policy",
    params: idParamsSchema,
    body: updatePolicyBodySchema,
    action: "retention.policies.update",
    idempotent: true,
  },
  async ({ db, principal, params, body, meta }) => jsonResponse({ policy: await updatePolicy(db.prisma, principal, params.id, body, meta) }),
);

export const DELETE = apiRoute(
  {
    access: "retention.manage",
    summary: "Delete a retention policy",
    params: idParamsSchema,
    body: deletePolicyBodySchema,
    action: "retention.policies.delete",
    idempotent: true,
  },
  async ({ db, principal, params, body, meta }) => jsonResponse({ policy: await deletePolicy(db.prisma, principal, params.id, body.reason, meta) }),
);

const refuse = methodNotAllowed(["PUT", "DELETE"]);
export { refuse as GET, refuse as POST, refuse as PATCH };
