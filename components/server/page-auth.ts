import { cookies, headers } from "next/headers";
import { forbidden, redirect } from "next/navigation";
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
 * Every page and the permission it needs: the pages guard with it, and each
 * page folder's forbidden.tsx names it (Next gives forbidden.tsx no props).
 */
export const PAGE_ACCESS = {
  "/": "stats.read",
  "/queue": "records.read",
  "/records": "records.read",
  "/duplicates": "records.read",
  "/compensations": "records.read",
  "/compensations/new": "compensations.request",
  "/conflicts": "stats.read",
  "/expiry": "stats.read",
  "/retention": "stats.read",
  "/redis": "stats.read",
  "/insights/alerts": "stats.read",
  "/insights/retention": "stats.read",
  "/insights/key-quality": "stats.read",
  "/audit": "audit.read",
  "/admin/users": "users.manage",
  "/settings": "signed_in",
  "/settings/tokens": "tokens.own",
  "/api-docs": "signed_in",
} as const satisfies Record<string, Access>;
export type GuardedPage = keyof typeof PAGE_ACCESS;

/**
 * Page guard: not signed in → /login (back to `path` afterwards); signed in
 * without the page's permission → forbidden(): the page folder's forbidden.tsx
 * with HTTP status 403 (next.config.js experimental.authInterrupts). The API
 * refuses regardless; this keeps the UI (and its status) honest.
 */
export async function requirePage(page: GuardedPage, path: string): Promise<{ principal: Principal }> {
  const principal = await currentPrincipal();
  if (!principal) redirect(`/login?callbackUrl=${encodeURIComponent(path)}`);
  if (!can(principal, PAGE_ACCESS[page])) forbidden();
  return { principal };
}

export async function requestOrigin(): Promise<string> {
  const h = await headers();
  return `${h.get("x-forwarded-proto") ?? "http"}://${h.get("host") ?? "localhost"}`;
}
