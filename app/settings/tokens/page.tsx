import type { Metadata } from "next";
import { connection } from "next/server";
import { requirePage } from "@/components/server/page-auth";
import { ALL_PERMISSIONS, PERMISSIONS } from "@/lib/auth/permissions";
import { listApiTokens } from "@/lib/auth/token-admin";
import { db } from "@/lib/db";
import { TokensSettings } from "./TokensSettings";

export const metadata: Metadata = { title: "API tokens · Idempotency Console" };

/** One's own API tokens: scopes limited to one's own permissions, shown once at creation. */
export default async function TokensPage() {
  await connection();
  const { principal } = await requirePage("/settings/tokens", "/settings/tokens");
  const database = await db();
  const tokens = await listApiTokens(database.prisma, principal, { owner: "me" });
  const scopes = ALL_PERMISSIONS.filter((p) => principal.permissions.has(p)).map((p) => ({ permission: p, description: PERMISSIONS[p] }));
  return (
    <>
      <div className="toolbar">
        <div>
          <h1>API tokens</h1>
          <p className="subtle">
            For scripts and services calling the console&apos;s API (<code>Authorization: Bearer …</code>). A token can do at most what you can, only within its
            scopes, and stops working when it expires, is revoked, or your account is disabled.
          </p>
        </div>
      </div>
      <TokensSettings initialTokens={tokens} scopes={scopes} />
    </>
  );
}
