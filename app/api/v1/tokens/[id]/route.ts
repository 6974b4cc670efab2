import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { revokeApiToken, revokeTokenBodySchema } from "@/lib/auth/token-admin";
import { idFromPath } from "@/lib/auth/users";

/**
 * Revoke a token (one's own; anyone's with tokens.manage): body { reason }.
 * Revoking a revoked token answers 200 with noop: true.
 */
export const DELETE = apiRoute(
  { access: "tokens.own", body: revokeTokenBodySchema, action: "tokens.revoke" },
  async ({ request, db, principal, body, meta }) => {
    const tokenId = idFromPath(request, "token");
    const result = await revokeApiToken(db.prisma, principal!, { tokenId, reason: body.reason }, meta);
    return jsonResponse(result);
  },
);

const refuse = methodNotAllowed(["DELETE"]);
export { refuse as GET, refuse as POST, refuse as PUT, refuse as PATCH };
