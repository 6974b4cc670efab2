import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { keyQuality, keyQualityQuerySchema } from "@/lib/insights/key-quality";

/**
 * GET /api/v1/insights/key-quality?from=&to=&scope=&operation=&sample=
 * Per scope and operation: keys that are short, counter-like, timestamp-like, low in entropy,
 * reused with another payload or across operations — each with evidence and a fix for the client.
 * Sampled: the newest `sample` records per scope (stated in the answer).
 */
export const GET = apiRoute(
  { access: "stats.read", summary: "Key quality per scope and operation, with evidence and a fix for the client", query: keyQualityQuerySchema },
  async ({ query, db }) => jsonResponse(await keyQuality(db.sql, query)),
);

const refuse = methodNotAllowed(["GET"]);
export { refuse as POST, refuse as PUT, refuse as PATCH, refuse as DELETE };
