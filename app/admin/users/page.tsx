import type { Metadata } from "next";
import { connection } from "next/server";
import { requirePage } from "@/components/server/page-auth";
import { listUsers } from "@/lib/auth/users";
import { db } from "@/lib/db";
import { UsersAdmin } from "./UsersAdmin";

export const metadata: Metadata = { title: "Users · Idempotency Console" };

/** Admins: invite users, change roles, disable/enable (every change audited with its reason). */
export default async function UsersPage() {
  await connection();
  const { principal } = await requirePage("/admin/users", "/admin/users");
  const database = await db();
  const users = await listUsers(database.prisma, principal);
  return (
    <>
      <div className="toolbar">
        <div>
          <h1>Users</h1>
          <p className="subtle">
            Roles decide what each person may see and do. Every change asks for a reason and lands in the audit log. You cannot remove your own admin role or
            disable yourself, and the last active admin stays an admin.
          </p>
        </div>
      </div>
      <UsersAdmin initialUsers={users} currentUserId={principal.userId.toString()} />
    </>
  );
}
