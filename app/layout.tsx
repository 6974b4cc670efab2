import type { Metadata } from "next";
import type { ReactNode } from "react";
import { NavLinks, type NavEntry } from "@/components/NavLinks";
import { QueryProvider } from "@/components/QueryProvider";
import { SignOutButton } from "@/components/SignOutButton";
import { currentPrincipal } from "@/components/server/page-auth";
import { can, type Access, type Principal } from "@/lib/auth/permissions";
import "./globals.css";

export const metadata: Metadata = {
  title: "Idempotency Console",
  description: "Inspect and resolve idempotency records, duplicate charges and pending payments.",
};

/** Every top-level page and the permission it needs; the bar shows only what the user may open. */
type NavSpec = { href: string; label: string; access: Access };
/** Top-level links, then menus ("group"): a menu shows only the links its user may open. */
const NAVIGATION: (NavSpec | { group: string; items: NavSpec[] })[] = [
  { href: "/", label: "Overview", access: "stats.read" },
  { href: "/queue", label: "Stuck & pending", access: "records.read" },
  { href: "/records", label: "Search", access: "records.read" },
  { href: "/duplicates", label: "Duplicates", access: "records.read" },
  { href: "/compensations", label: "Compensations", access: "records.read" },
  {
    group: "Insights",
    items: [
      { href: "/conflicts", label: "Conflicts", access: "stats.read" },
      { href: "/expiry", label: "Expiry", access: "stats.read" },
      { href: "/retention", label: "Retention & purges", access: "stats.read" },
      { href: "/redis", label: "Redis keys", access: "stats.read" },
    ],
  },
  {
    group: "Admin",
    items: [
      { href: "/audit", label: "Audit", access: "audit.read" },
      { href: "/admin/users", label: "Users", access: "users.manage" },
      { href: "/settings/tokens", label: "API tokens", access: "tokens.own" },
      { href: "/api-docs", label: "API reference", access: "signed_in" },
    ],
  },
];

function navFor(principal: Principal): NavEntry[] {
  const allowed = (n: NavSpec) => can(principal, n.access);
  return NAVIGATION.flatMap((n): NavEntry[] => {
    if (!("group" in n)) return allowed(n) ? [{ href: n.href, label: n.label }] : [];
    const items = n.items.filter(allowed).map(({ href, label }) => ({ href, label }));
    return items.length ? [{ group: n.group, items }] : [];
  });
}

export default async function RootLayout({ children }: { children: ReactNode }) {
  // A database outage must not take the layout down: the page itself reports it.
  let principal: Principal | null = null;
  try {
    principal = await currentPrincipal();
  } catch (err) {
    if (err && typeof err === "object" && "digest" in err) throw err; // Next's dynamic-rendering signals
    principal = null;
  }
  const entries = principal ? navFor(principal) : [];
  return (
    <html lang="en">
      <body>
        <div className="shell">
          <header className="topbar">
            <span className="brand">Idempotency Console</span>
            {principal && <NavLinks entries={entries} />}
            {principal && (
              <div className="who" data-testid="signed-in-as">
                <span className="who-email">{principal.email}</span>
                <span className="who-roles">{principal.roles.length ? principal.roles.join(", ") : "no roles"}</span>
                <SignOutButton />
              </div>
            )}
          </header>
          <main>
            <QueryProvider>{children}</QueryProvider>
          </main>
        </div>
      </body>
    </html>
  );
}
