import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { overviewQuerySchema, readOverview } from "@/lib/stats/overview";

/**
 * GET /api/v1/stats/overview?from=&to=&operation=&scope=
 * Records by status; requests, replays, conflicts and their rates per operation (exact, from
 * the event rollups); stuck, pending, open reconciliation, expiry; the chart series; `asOf`
 * and the rollup lag; off a replica, its lag (`replica`). Defaults: the last 24 h; at most 400 days.
 */
export const GET = apiRoute(
  { access: "stats.read", summary: "Overview counts, rates and series for a time range", query: overviewQuerySchema, reads: "replica" },
  async ({ query, read }) => jsonResponse(await readOverview(read, query)),
);

const refuse = methodNotAllowed(["GET"]);
export { refuse as POST, refuse as PUT, refuse as PATCH, refuse as DELETE };
