import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { idParamsSchema } from "@/lib/kernel/input";
import { deleteView } from "@/lib/views/saved-views";

/** DELETE /api/v1/views/{id} — deletes one of the caller's own saved views (someone else's: 404). */
export const DELETE = apiRoute(
  { access: "signed_in", summary: "Delete one of your saved views", params: idParamsSchema, action: "views.delete" },
  async ({ params, principal, db }) => jsonResponse(await deleteView(db.prisma, principal, params.id)),
);

const refuse = methodNotAllowed(["DELETE"]);
export { refuse as GET, refuse as POST, refuse as PUT, refuse as PATCH };
