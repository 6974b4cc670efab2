import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { idParamsSchema } from "@/lib/kernel/input";
import { updateUser, updateUserBodySchema } from "@/lib/auth/users";

/**
 * Change a user's roles and/or disable/enable them: { roles?, disabled?, reason }.
 * Setting what is already set answers 200 with noop: true (and is audited as such).
 * 409 when it would remove the caller's own admin role, disable the caller, or
 * leave no active admin.
 */
export const PATCH = apiRoute(
  {
    access: "users.manage",
    summary: "Change a user's roles, disable or enable them",
    params: idParamsSchema,
    body: updateUserBodySchema,
    action: "users.update",
  },
  async ({ params, db, principal, body, meta }) => {
    const result = await updateUser(db.prisma, principal, { userId: params.id, ...body }, meta);
    return jsonResponse(result);
  },
);

const refuse = methodNotAllowed(["PATCH"]);
export { refuse as GET, refuse as POST, refuse as PUT, refuse as DELETE };
