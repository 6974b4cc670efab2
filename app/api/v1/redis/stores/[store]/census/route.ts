import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { storeNamed, storeParamsSchema } from "@/lib/redis/config";
import { censusQuerySchema, storeCensus } from "@/lib/redis/views";

/**
 * GET /api/v1/redis/stores/{store}/census?refresh=true
 * The store's latest census (counts only); refresh=true takes a new one first (SCAN of
 * the whole pattern: seconds for a million keys). 503 when Redis is unreachable.
 */
export const GET = apiRoute(
  {
    access: "stats.read",
    summary: "Census of one Redis key store (counts by state and status, TTLs, wedged, flags)",
    params: storeParamsSchema,
    query: censusQuerySchema,
  },
  async ({ params, query }) => jsonResponse(await storeCensus(storeNamed(params.store), query.refresh)),
);

const refuse = methodNotAllowed(["GET"]);
export { refuse as POST, refuse as PUT, refuse as PATCH, refuse as DELETE };
