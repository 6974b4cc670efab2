import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { storeNamed, storeParamsSchema } from "@/lib/redis/config";
import { RELEASE_ACTION, releaseBodySchema, releaseKey } from "@/lib/redis/release";

/**
 * POST /api/v1/redis/stores/{store}/release  Idempotency-Key: <key>
 * { key, reason } — deletes a wedged processing key (compare-and-delete in one Lua
 * script) so the client's retry can run. 409 with what it holds now when it completed
 * meanwhile, is not wedged yet or is not a record; 404 when it is gone.
 */
export const POST = apiRoute(
  {
    access: "records.resolve",
    action: RELEASE_ACTION,
    idempotent: true,
    summary: "Release a wedged Redis idempotency key (deleted only if it still holds processing)",
    params: storeParamsSchema,
    body: releaseBodySchema,
  },
  async ({ params, body, principal, db, meta }) => jsonResponse(await releaseKey(db, storeNamed(params.store), principal, body, meta)),
);

const refuse = methodNotAllowed(["POST"]);
export { refuse as GET, refuse as PUT, refuse as PATCH, refuse as DELETE };
