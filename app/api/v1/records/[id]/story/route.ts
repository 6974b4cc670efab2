import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { can } from "@/lib/auth/permissions";
import { recordStory } from "@/lib/insights/story";
import { idParamsSchema } from "@/lib/kernel/input";
import { getPreferences } from "@/lib/preferences";

/**
 * GET /api/v1/records/{id}/story — what happened to the record, in plain sentences from its
 * timeline (ready to paste into a support reply): times in the reader's time zone, free text
 * masked, quotes from the stored response only with records.read_body.
 */
export const GET = apiRoute(
  { access: "records.read", summary: "The story of a record's intent in plain sentences", params: idParamsSchema },
  async ({ params, principal, db }) => {
    const { timeZone } = await getPreferences(db.prisma, principal.userId);
    const bodyAccess = can(principal, "records.read_body") ? "masked" : "none";
    return jsonResponse(await recordStory(db.sql, params.id, { bodyAccess, timeZone }));
  },
);

const refuse = methodNotAllowed(["GET"]);
export { refuse as POST, refuse as PUT, refuse as PATCH, refuse as DELETE };
