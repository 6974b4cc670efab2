import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { idParamsSchema } from "@/lib/kernel/input";
import { can } from "@/lib/auth/permissions";
import { detailQuerySchema, recordDetail } from "@/lib/records/detail";

/**
 * GET /api/v1/records/{id}?window=10m
 * Every field, timeline, reconciliation, outbox, audit trail, suspected duplicates.
 * The stored response: absent without records.read_body, masked with it; unmasked only
 * through POST /api/v1/records/{id}/reveal (audited).
 */
export const GET = apiRoute(
  {
    access: "records.read",
    summary: "One record with events, reconciliation, outbox, audit, duplicates and its stored response (masked)",
    params: idParamsSchema,
    query: detailQuerySchema,
    reads: "replica",
  },
  async ({ params, query, principal, read }) => {
    const bodyAccess = can(principal, "records.read_body") ? "masked" : "none";
    return jsonResponse(await recordDetail(read.sql, params.id, { bodyAccess, windowSeconds: query.window }));
  },
);

const refuse = methodNotAllowed(["GET"]);
export { refuse as POST, refuse as PUT, refuse as PATCH, refuse as DELETE };
