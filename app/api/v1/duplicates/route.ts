import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { duplicatesQuerySchema, findDuplicates } from "@/lib/records/duplicates";

/**
 * GET /api/v1/duplicates?from=&to=&window=10m&scope=&operation=&basis=payload_hash|amount_resource|both&limit=
 * Suspected double charges: same scope + operation + payload hash (or amount, currency and
 * resource) under different keys within the window, as clusters, side by side.
 */
export const GET = apiRoute(
  {
    access: "records.read",
    summary: "Suspected double charges: same intent under different keys within a window",
    query: duplicatesQuerySchema,
    reads: "replica",
  },
  async ({ query, read }) => jsonResponse(await findDuplicates(read.sql, query)),
);

const refuse = methodNotAllowed(["GET"]);
export { refuse as POST, refuse as PUT, refuse as PATCH, refuse as DELETE };
