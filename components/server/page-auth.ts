import { cookies, headers } from "next/headers";
import { redirect } from "next/navigation";
import { cache } from "react";
import { can, type Access, type Principal } from "@/lib/auth/permissions";
import { sessionPrincipal } from "@/lib/auth/session";
import { db } from "@/lib/db";

/** The signed-in user of the current page request, or null (looked up once per request: layout and page share it). */
export const currentPrincipal = cache(async (): Promise<Principal | null> => {
  const cookie = (await cookies()).toString();
  if (!cookie) return null;
  const database = await db();
  return sessionPrincipal(database.prisma, new Request("http://console.local/", { headers: { cookie } }));
});

/**
 * Page guard: not signed in → /login (back here afterwards); signed in without
 * the permission → the page gets `allowed: false` and renders a refusal. The
 * API refuses regardless; this only keeps the UI honest.
 */
export async function requirePage(access: Access, path: string): Promise<{ principal: Principal; allowed: boolean }> {
  const principal = await currentPrincipal();
  if (!principal) redirect(`/login?callbackUrl=${encodeURIComponent(path)}`);
  return { principal, allowed: can(principal, access) };
}

export async function requestOrigin(): Promise<string> {
  const h = await headers();
  return `${h.get("x-forwarded-proto") ?? "http"}://${h.get("host") ?? "localhost"}`;
}
