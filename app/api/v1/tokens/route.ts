import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { createApiToken, createTokenInputSchema, listApiTokens, listTokensQuerySchema } from "@/lib/auth/token-admin";

/** ?owner=me (default) | all | <userId>; anything but one's own needs tokens.manage. Never a hash. */
export const GET = apiRoute(
  { access: "tokens.own", summary: "List API tokens (own, or everyone's with tokens.manage)", query: listTokensQuerySchema },
  async ({ db, principal, query, meta }) => {
    const tokens = await listApiTokens(db.prisma, principal, { owner: query.owner as "me" | "all" | string }, meta);
    return jsonResponse({ tokens });
  },
);

/**
 * Create a token: { name, scopes, expiresInDays? (1–365, default 90), userId?, reason }.
 * 201 with the plaintext `token` — shown this once, never again.
 */
export const POST = apiRoute(
  { access: "tokens.own", summary: "Create an API token (shown once)", body: createTokenInputSchema, action: "tokens.create", replayWithholds: ["token"] },
  async ({ db, principal, body, meta }) => {
    const { token, apiToken, expiryLimited } = await createApiToken(db.prisma, principal, body, meta);
    const warning = "Store this token now: it is shown only once and cannot be retrieved again.";
    const notice = expiryLimited ? "The expiry was capped at the expiry of the token that created it." : undefined;
    return jsonResponse({ token, apiToken, warning, notice }, { status: 201 });
  },
);

const refuse = methodNotAllowed(["GET", "POST"]);
export { refuse as PUT, refuse as PATCH, refuse as DELETE };
