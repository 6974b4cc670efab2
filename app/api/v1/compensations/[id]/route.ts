import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { idParamsSchema } from "@/lib/kernel/input";
import { compensationView } from "@/lib/compensations";

/** GET /api/v1/compensations/{id}: one compensation and what the caller may do with it. */
export const GET = apiRoute(
  { access: "records.read", summary: "One compensation", params: idParamsSchema, reads: "replica" },
  async ({ params, principal, read }) => jsonResponse(await compensationView({ database: read, principal }, params.id)),
);

const refuse = methodNotAllowed(["GET"]);
export { refuse as POST, refuse as PUT, refuse as PATCH, refuse as DELETE };
