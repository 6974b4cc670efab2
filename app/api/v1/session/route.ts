import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { clearedSessionCookies } from "@/lib/auth/session";
import { endBrowserSession } from "@/lib/auth/sign-in";
import { InvalidInputError } from "@/lib/kernel/errors";

/** GET /api/v1/session — who is calling: the user, their roles, and the session or token in use. */
export const GET = apiRoute({ access: "signed_in", summary: "The caller: user, roles, and the session or token in use" }, async ({ principal }) =>
  jsonResponse({
    userId: principal.userId.toString(),
    email: principal.email,
    roles: principal.roles,
    via: principal.kind === "token" ? { token: principal.tokenId!.toString() } : { session: principal.sessionId?.toString() ?? null },
  }),
);

/**
 * DELETE /api/v1/session — sign out: ends this browser session in the database (a
 * copy of the cookie is refused from now on), audited as auth.sign_out, deletes the
 * cookie, and answers { redirectTo }: the identity provider's logout page for a
 * single sign-on session (RP-initiated logout), else /login. An API token is not a
 * session: revoke it with DELETE /api/v1/tokens/{id}.
 */
export const DELETE = apiRoute(
  { access: "signed_in", summary: "Sign out: end this browser session (and the identity provider's)", action: "auth.sign_out" },
  async ({ request, principal, db, meta }) => {
    if (principal.kind !== "user") throw new InvalidInputError("An API token has no session to end; revoke the token with DELETE /api/v1/tokens/{id}.");
    const result = await endBrowserSession(db.prisma, request, meta);
    const response = jsonResponse(result);
    for (const cookie of clearedSessionCookies(request)) response.headers.append("set-cookie", cookie);
    return response;
  },
);

const refuse = methodNotAllowed(["GET", "DELETE"]);
export { refuse as POST, refuse as PUT, refuse as PATCH };
