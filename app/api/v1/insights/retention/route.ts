import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { retentionAdvice, retentionQuerySchema } from "@/lib/insights/retention";

/**
 * GET /api/v1/insights/retention?from=&to=&operation=&sample=
 * Per operation: the observed retry window (p50/p95/p99/max), the writers' expiry, the retention
 * policy, flags (retries after expiry — listed —, keys kept far longer than any retry) and a
 * proposed policy. Sampled: the newest `sample` retry events per operation (stated in the answer).
 */
export const GET = apiRoute(
  {
    access: "stats.read",
    summary: "Retention advisor: retry windows per operation beside expiry and policy, with flags and a proposal",
    query: retentionQuerySchema,
  },
  async ({ query, db }) => jsonResponse(await retentionAdvice(db, query)),
);

const refuse = methodNotAllowed(["GET"]);
export { refuse as POST, refuse as PUT, refuse as PATCH, refuse as DELETE };
