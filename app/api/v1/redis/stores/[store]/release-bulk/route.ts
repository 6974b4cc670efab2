import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { storeNamed, storeParamsSchema } from "@/lib/redis/config";
import { BULK_RELEASE_ACTION, bulkReleaseBodySchema, releaseBulk } from "@/lib/redis/release";

/**
 * POST /api/v1/redis/stores/{store}/release-bulk  Idempotency-Key: <key>
 * { keys: [...] (1–100) | wedged: true, confirm: "release N keys", dryRun?, reason }
 * Releases each key as the single release does (each audited); a missing or different
 * confirm is a 400 naming the expected text; dryRun answers the selection only.
 */
export const POST = apiRoute(
  {
    access: "records.resolve",
    action: BULK_RELEASE_ACTION,
    idempotent: true,
    summary: "Release up to 100 wedged Redis keys (typed confirmation)",
    params: storeParamsSchema,
    body: bulkReleaseBodySchema,
  },
  async ({ params, body, principal, db, meta }) => jsonResponse(await releaseBulk(db, storeNamed(params.store), principal, body, meta)),
);

const refuse = methodNotAllowed(["POST"]);
export { refuse as GET, refuse as PUT, refuse as PATCH, refuse as DELETE };
