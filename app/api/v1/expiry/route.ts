import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { expiryQuerySchema, expiryStats } from "@/lib/stats/expiry";

/**
 * GET /api/v1/expiry?operation=&scope=
 * expires_at histogram (next 24 h by hour, next 30 days by day) and expired-not-purged
 * by operation and status, with what a retention purge could remove.
 */
export const GET = apiRoute(
  { access: "stats.read", summary: "Expiry histogram, expired-not-purged and retention preview", query: expiryQuerySchema, reads: "replica" },
  async ({ query, read }) => jsonResponse(await expiryStats(read, query)),
);

const refuse = methodNotAllowed(["GET"]);
export { refuse as POST, refuse as PUT, refuse as PATCH, refuse as DELETE };
