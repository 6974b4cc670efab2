import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { listCompensationViews, listQuerySchema, requestBodySchema, requestCompensation } from "@/lib/compensations";

/**
 * GET /api/v1/compensations?state=&recordId=&limit=&cursor=
 * Compensations, newest request first, keyset-paginated; each says what the caller may do with it.
 */
export const GET = apiRoute(
  { access: "records.read", summary: "List compensations (filter by state or record)", query: listQuerySchema, reads: "replica" },
  async ({ query, principal, read }) => jsonResponse(await listCompensationViews({ database: read, principal }, query)),
);

/**
 * POST /api/v1/compensations  { recordId, kind: refund|void|cancel, amountMinor, currency?, reason, relatedRecordId? }
 * Requests a compensation of a completed record's charge; someone else must approve it.
 * 409 when the record is not completed, has no charge, or the amount exceeds what is left;
 * 422 for another currency or an unknown related record.
 */
export const POST = apiRoute(
  {
    access: "compensations.request",
    summary: "Request a refund, void or cancel of a completed record's charge (four-eyes)",
    action: "compensations.request",
    idempotent: true,
    body: requestBodySchema,
  },
  async ({ body, principal, db, meta }) => {
    const created = await requestCompensation({ database: db, principal, request: meta }, body);
    return jsonResponse(created, { status: 201, headers: { location: `/api/v1/compensations/${created.id}` } });
  },
);

const refuse = methodNotAllowed(["GET", "POST"]);
export { refuse as PUT, refuse as PATCH, refuse as DELETE };
