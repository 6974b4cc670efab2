import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { describeThresholds } from "@/lib/records/config";
import { queueQuerySchema, stuckAndPending } from "@/lib/records/queue";

/**
 * GET /api/v1/queue?kind=stuck|pending|reconciliation|all&operation=&scope=&status=&provider=&sort=age_desc|age_asc&limit=&cursor=
 * Stuck (processing past its operation's threshold), pending, and open reconciliation items.
 */
export const GET = apiRoute(
  { access: "records.read", summary: "Stuck processing, pending records and open reconciliation items", query: queueQuerySchema, reads: "replica" },
  async ({ query, read }) => {
    const result = await stuckAndPending(read.sql, query);
    return jsonResponse({ ...result, thresholds: describeThresholds(result.thresholds) });
  },
);

const refuse = methodNotAllowed(["GET"]);
export { refuse as POST, refuse as PUT, refuse as PATCH, refuse as DELETE };
