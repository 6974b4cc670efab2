import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { alertsQuerySchema, listAlerts, rememberedAlerts } from "@/lib/insights/alerts";

/**
 * GET /api/v1/insights/alerts — the alerts firing now (conflict spikes, stuck growth, oldest
 * pending, retries after expiry, new key-quality findings), with their thresholds and what the
 * console remembers of each (since when, acknowledged by whom and why).
 * ?source=remembered: as the server's evaluator last left them, without computing (the banner).
 */
export const GET = apiRoute(
  { access: "stats.read", summary: "Alerts firing now, with thresholds and acknowledgements", query: alertsQuerySchema },
  async ({ db, query }) => jsonResponse(query.source === "remembered" ? await rememberedAlerts(db) : await listAlerts(db)),
);

const refuse = methodNotAllowed(["GET"]);
export { refuse as POST, refuse as PUT, refuse as PATCH, refuse as DELETE };
