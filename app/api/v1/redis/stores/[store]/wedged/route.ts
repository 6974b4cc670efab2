import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { storeNamed, storeParamsSchema } from "@/lib/redis/config";
import { censusQuerySchema, storeWedged } from "@/lib/redis/views";

/**
 * GET /api/v1/redis/stores/{store}/wedged?refresh=true
 * Wedged keys (processing longer than the store's wedgedAfter), oldest first, with how
 * long each keeps refusing retries; and the keys expiring soonest. From the latest census.
 */
export const GET = apiRoute(
  { access: "records.read", summary: "Wedged and soon-expiring keys of one Redis key store", params: storeParamsSchema, query: censusQuerySchema },
  async ({ params, query }) => jsonResponse(await storeWedged(storeNamed(params.store), query.refresh)),
);

const refuse = methodNotAllowed(["GET"]);
export { refuse as POST, refuse as PUT, refuse as PATCH, refuse as DELETE };
