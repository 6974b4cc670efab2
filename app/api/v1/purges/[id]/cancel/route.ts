import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { idParamsSchema } from "@/lib/kernel/input";
import { cancelPurge, cancelPurgeBodySchema } from "@/lib/retention/runs";
import { wakePurge } from "@/lib/retention/worker";

/**
 * POST /api/v1/purges/{id}/cancel — { reason }. The run stops after the batch in flight
 * (state cancelling, then cancelled with its partial counts); a run nobody works is cancelled
 * at once. Again while cancelling: noop. 409 when it has finished.
 */
export const POST = apiRoute(
  { access: "purges.run", summary: "Cancel a purge run", params: idParamsSchema, body: cancelPurgeBodySchema, action: "purges.cancel", idempotent: true },
  async ({ db, principal, params, body, meta }) => {
    const result = await cancelPurge(db.prisma, principal, params.id, body.reason, meta);
    wakePurge(params.id);
    return jsonResponse(result);
  },
);

const refuse = methodNotAllowed(["POST"]);
export { refuse as GET, refuse as PUT, refuse as PATCH, refuse as DELETE };
