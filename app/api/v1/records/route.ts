import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { searchQuerySchema, searchRecords } from "@/lib/records/search";

/**
 * GET /api/v1/records?q=&field=&match=exact|prefix&status=&operation=&limit=&cursor=
 * Search by key, scope, provider reference/request id, correlation id or resource id;
 * newest first, keyset-paginated. No response bodies here (see /api/v1/records/{id}).
 */
export const GET = apiRoute(
  {
    access: "records.read",
    summary: "Search records by key, scope, provider reference/request id, correlation or resource id",
    query: searchQuerySchema,
    reads: "replica",
  },
  async ({ query, read }) => jsonResponse(await searchRecords(read.sql, query)),
);

const refuse = methodNotAllowed(["GET"]);
export { refuse as POST, refuse as PUT, refuse as PATCH, refuse as DELETE };
