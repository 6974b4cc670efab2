import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { getPreferences, preferencesSchema, setPreferences } from "@/lib/preferences";

/** GET /api/v1/me/preferences — the caller's display preferences ({timeZone}). */
export const GET = apiRoute({ access: "signed_in", summary: "Your display preferences (time zone)" }, async ({ principal, db }) =>
  jsonResponse(await getPreferences(db.prisma, principal.userId)),
);

/**
 * PUT /api/v1/me/preferences {timeZone} — sets the time zone every time is shown in (IANA
 * name; "UTC" is the default). Personal, like saved views: no reason, no audit entry.
 */
export const PUT = apiRoute(
  { access: "signed_in", summary: "Set your time zone", body: preferencesSchema, action: "preferences.update" },
  async ({ body, principal, db }) => jsonResponse(await setPreferences(db.prisma, principal, body)),
);

const refuse = methodNotAllowed(["GET", "PUT"]);
export { refuse as POST, refuse as PATCH, refuse as DELETE };
