import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { storeNamed, storeParamsSchema } from "@/lib/redis/config";
import { keyLookupQuerySchema, lookupKeys } from "@/lib/redis/lookup";

/**
 * GET /api/v1/redis/stores/{store}/keys?key=… | ?prefix=…&limit=
 * Key lookup: state, TTL, age, wedged, fingerprint and the stored response (withheld
 * without records.read_body, masked with it). Keys outside the store's pattern, or that
 * are not records of its format, are never shown as records.
 */
export const GET = apiRoute(
  { access: "records.read", summary: "Look up Redis idempotency keys (exact or prefix)", params: storeParamsSchema, query: keyLookupQuerySchema },
  async ({ params, query, principal }) => jsonResponse(await lookupKeys(storeNamed(params.store), query, principal)),
);

const refuse = methodNotAllowed(["GET"]);
export { refuse as POST, refuse as PUT, refuse as PATCH, refuse as DELETE };
