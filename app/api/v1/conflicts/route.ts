import { isServerMode } from "@/lib/db/config";
import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { conflictsQuerySchema, conflictStats } from "@/lib/stats/conflicts";

/**
 * GET /api/v1/conflicts?from=&to=&operation=&scope=&bucket=hour|day&limit=&cursor=
 * Key reuse with a different payload: by operation and scope, rate per operation, trend,
 * and the events (stored and received payload hash) newest first.
 */
export const GET = apiRoute(
  { access: "stats.read", summary: "Key reuse with a different payload, grouped, with trend and drill-down", query: conflictsQuerySchema, reads: "replica" },
  async ({ query, read }) => jsonResponse(await read.withSession((session) => conflictStats(session, query, { snapshot: isServerMode(read.mode) }))),
);

const refuse = methodNotAllowed(["GET"]);
export { refuse as POST, refuse as PUT, refuse as PATCH, refuse as DELETE };
