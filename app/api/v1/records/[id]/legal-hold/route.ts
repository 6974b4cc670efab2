import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { idParamsSchema } from "@/lib/kernel/input";
import { RECORD_HOLD_ACTION, recordHoldBodySchema, setRecordHold } from "@/lib/retention/legal-holds";

/**
 * POST /api/v1/records/{id}/legal-hold — { hold: true|false, reason, expectedVersion? }.
 * Sets or lifts the record's legal hold (a held record is never purged). Same state again:
 * 200 with noop: true. 409 when expectedVersion is given and the record has another version.
 */
export const POST = apiRoute(
  {
    access: "legal_holds.manage",
    summary: "Set or lift a record's legal hold",
    params: idParamsSchema,
    body: recordHoldBodySchema,
    action: RECORD_HOLD_ACTION,
    idempotent: true,
  },
  async ({ db, principal, params, body, meta }) => jsonResponse(await setRecordHold(db.prisma, principal, params.id, body, meta)),
);

const refuse = methodNotAllowed(["POST"]);
export { refuse as GET, refuse as PUT, refuse as PATCH, refuse as DELETE };
