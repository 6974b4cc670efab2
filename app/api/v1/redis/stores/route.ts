import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { storesSummary } from "@/lib/redis/views";

/**
 * GET /api/v1/redis/stores
 * The Redis key stores (REDIS_URL / REDIS_STORES) with their latest census: keys by
 * state and stored HTTP status, wedged count, TTL histogram, flags, and when it was taken.
 */
export const GET = apiRoute({ access: "stats.read", summary: "Redis key stores and their latest census (counts)" }, async () =>
  jsonResponse(await storesSummary()),
);

const refuse = methodNotAllowed(["GET"]);
export { refuse as POST, refuse as PUT, refuse as PATCH, refuse as DELETE };
