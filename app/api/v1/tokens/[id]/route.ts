import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { idParamsSchema } from "@/lib/kernel/input";
import { revokeApiToken, revokeTokenBodySchema } from "@/lib/auth/token-admin";

/**
 * Revoke a token (one's own; anyone's with tokens.manage): body { reason }.
 * Revoking a revoked token answers 200 with noop: true.
 */
export const DELETE = apiRoute(
  { access: "tokens.own", summary: "Revoke an API token", params: idParamsSchema, body: revokeTokenBodySchema, action: "tokens.revoke" },
  async ({ params, db, principal, body, meta }) => {
    const result = await revokeApiToken(db.prisma, principal, { tokenId: params.id, reason: body.reason }, meta);
    return jsonResponse(result);
  },
);

const refuse = methodNotAllowed(["DELETE"]);
export { refuse as GET, refuse as POST, refuse as PUT, refuse as PATCH };
