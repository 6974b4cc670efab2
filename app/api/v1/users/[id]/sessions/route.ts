import { actorOf } from "@/lib/audit";
import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { idParamsSchema } from "@/lib/kernel/input";
import { listLiveSessions, revokeSessionsBodySchema, signOutEverywhere } from "@/lib/auth/sessions";

/** GET /api/v1/users/{id}/sessions — the user's live browser sessions (where from, since when, last seen). */
export const GET = apiRoute({ access: "users.manage", summary: "A user's active sessions", params: idParamsSchema }, async ({ params, db }) =>
  jsonResponse({ sessions: await listLiveSessions(db.prisma, params.id) }),
);

/** DELETE /api/v1/users/{id}/sessions {reason} — "sign out everywhere": ends all of the user's sessions at once (audited). */
export const DELETE = apiRoute(
  {
    access: "users.manage",
    summary: "Sign a user out everywhere (end all their sessions)",
    params: idParamsSchema,
    body: revokeSessionsBodySchema,
    action: "users.sessions_revoke",
  },
  async ({ params, db, principal, body, meta }) =>
    jsonResponse(await signOutEverywhere(db.prisma, actorOf(principal), { userId: params.id, reason: body.reason }, meta)),
);

const refuse = methodNotAllowed(["GET", "DELETE"]);
export { refuse as POST, refuse as PUT, refuse as PATCH };
