import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { createUser, createUserInputSchema, listUsers } from "@/lib/auth/users";

/** Every console user (never a password hash). */
export const GET = apiRoute({ access: "users.manage", summary: "List console users" }, async ({ db, principal }) => {
  const users = await listUsers(db.prisma, principal);
  return jsonResponse({ users });
});

/**
 * Invite a user: { email, name?, password?, roles, reason }. Without a password
 * the user signs in with SSO (or gets one later). 409 when the email exists.
 */
export const POST = apiRoute(
  { access: "users.manage", summary: "Invite a console user", body: createUserInputSchema, action: "users.create" },
  async ({ db, principal, body, meta }) => {
    const user = await createUser(db.prisma, principal, body, meta);
    return jsonResponse({ user }, { status: 201 });
  },
);

const refuse = methodNotAllowed(["GET", "POST"]);
export { refuse as PUT, refuse as PATCH, refuse as DELETE };
