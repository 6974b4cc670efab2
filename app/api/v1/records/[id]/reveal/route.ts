import { z } from "zod";
import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { idParamsSchema, reasonSchema } from "@/lib/kernel/input";
import { jsonResponse } from "@/lib/api/json";
import { revealResponse } from "@/lib/records/detail";

/**
 * POST /api/v1/records/{id}/reveal  {"reason": "..."}
 * The stored response unmasked. Changes no data, but it is an action: audited as
 * records.reveal with the reason (refusals too), before anything is returned.
 */
export const POST = apiRoute(
  {
    access: "records.reveal",
    summary: "Reveal a record's stored response unmasked (audited)",
    action: "records.reveal",
    replayWithholds: ["response"],
    params: idParamsSchema,
    body: z.object({ reason: reasonSchema }).strict(),
  },
  async ({ params, body, principal, db, meta }) => jsonResponse(await revealResponse(db, principal, params.id, body.reason, meta)),
);

const refuse = methodNotAllowed(["POST"]);
export { refuse as GET, refuse as PUT, refuse as PATCH, refuse as DELETE };
