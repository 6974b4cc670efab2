import type { Metadata, Viewport } from "next";
import { cookies } from "next/headers";
import type { ReactNode } from "react";
import { AlertsBanner } from "@/components/insights/AlertsBanner";
import { NavLinks, type NavEntry } from "@/components/NavLinks";
import { QueryProvider } from "@/components/QueryProvider";
import { Shortcuts, type GoTo } from "@/components/Shortcuts";
import { SignOutButton } from "@/components/SignOutButton";
import { ThemeSwitch } from "@/components/ThemeSwitch";
import { THEME_COOKIE, themeOf } from "@/components/theme";
import { TopBarMenu } from "@/components/TopBar";
import { currentPrincipal } from "@/components/server/page-auth";
import { TimeZoneProvider } from "@/components/time/When";
import { can, type Access, type Principal } from "@/lib/auth/permissions";
import { db } from "@/lib/db";
import { getPreferences, UTC } from "@/lib/preferences";
import "./globals.css";

export const metadata: Metadata = {
  title: "Idempotency Console",
  description: "Inspect and resolve idempotency records, duplicate charges and pending payments.",
};

export const viewport: Viewport = { width: "device-width", initialScale: 1 };

/** Every top-level page and the permission it needs; the bar shows only what the user may open. `key`: its "g <key>" shortcut. */
type NavSpec = { href: string; label: string; access: Access; key?: string };
/** Top-level links, then menus ("group"): a menu shows only the links its user may open. One line per screen. */
const NAVIGATION: (NavSpec | { group: string; items: NavSpec[] })[] = [
  { href: "/", label: "Overview", access: "stats.read", key: "o" },
  { href: "/queue", label: "Stuck & pending", access: "records.read", key: "q" },
  { href: "/records", label: "Search", access: "records.read", key: "s" },
  { href: "/duplicates", label: "Duplicates", access: "records.read", key: "d" },
  { href: "/compensations", label: "Compensations", access: "records.read", key: "c" },
  {
    group: "Insights",
    items: [
      { href: "/insights/alerts", label: "Alerts", access: "stats.read", key: "l" },
      { href: "/insights/retention", label: "Retention advisor", access: "stats.read", key: "v" },
      { href: "/insights/key-quality", label: "Key quality", access: "stats.read", key: "y" },
      { href: "/conflicts", label: "Conflicts", access: "stats.read", key: "k" },
      { href: "/expiry", label: "Expiry", access: "stats.read", key: "e" },
      { href: "/retention", label: "Retention & purges", access: "stats.read", key: "r" },
      { href: "/redis", label: "Redis keys", access: "stats.read", key: "x" },
    ],
  },
  {
    group: "Admin",
    items: [
      { href: "/audit", label: "Audit", access: "audit.read", key: "a" },
      { href: "/admin/users", label: "Users", access: "users.manage", key: "u" },
      { href: "/settings/tokens", label: "API tokens", access: "tokens.own", key: "t" },
      { href: "/api-docs", label: "API reference", access: "signed_in" },
    ],
  },
];

function navFor(principal: Principal): { entries: NavEntry[]; goTo: GoTo[] } {
  const allowed = (n: NavSpec) => can(principal, n.access);
  const goTo: GoTo[] = [];
  const link = (n: NavSpec) => {
    if (n.key) goTo.push({ key: n.key, href: n.href, label: n.label });
    return { href: n.href, label: n.label };
  };
  const entries = NAVIGATION.flatMap((n): NavEntry[] => {
    if (!("group" in n)) return allowed(n) ? [link(n)] : [];
    const items = n.items.filter(allowed).map(link);
    return items.length ? [{ group: n.group, items }] : [];
  });
  goTo.push({ key: "p", href: "/settings", label: "Settings (time zone, theme)" });
  return { entries, goTo };
}

export default async function RootLayout({ children }: { children: ReactNode }) {
  // A database outage must not take the layout down: the page itself reports it.
  let principal: Principal | null = null;
  let timeZone = UTC;
  try {
    principal = await currentPrincipal();
    if (principal) timeZone = (await getPreferences((await db()).prisma, principal.userId)).timeZone;
  } catch (err) {
    if (err && typeof err === "object" && "digest" in err) throw err; // Next's dynamic-rendering signals
  }
  const theme = themeOf((await cookies()).get(THEME_COOKIE)?.value);
  const nav = principal ? navFor(principal) : null;
  return (
    <html lang="en" data-theme={theme === "auto" ? undefined : theme}>
      <body>
        <a className="skip-link" href="#main">
          Skip to content
        </a>
        <div className="shell">
          <header className="topbar">
            <a className="brand" href="/">
              Idempotency Console
            </a>
            {nav ? <Shortcuts goTo={nav.goTo} /> : null}
            {principal && nav ? (
              <TopBarMenu>
                <NavLinks entries={nav.entries} />
                <div className="who" data-testid="signed-in-as">
                  <span className="who-email">{principal.email}</span>
                  <span className="who-roles">{principal.roles.length ? principal.roles.join(", ") : "no roles"}</span>
                  <a href="/settings" className="who-settings">
                    Settings
                  </a>
                  <ThemeSwitch initial={theme} />
                  <SignOutButton />
                </div>
              </TopBarMenu>
            ) : (
              <div className="topbar-menu-anon">
                <ThemeSwitch initial={theme} />
              </div>
            )}
          </header>
          <main id="main">
            <TimeZoneProvider timeZone={timeZone}>
              <QueryProvider>
                {principal && can(principal, "stats.read") ? <AlertsBanner /> : null}
                {children}
              </QueryProvider>
            </TimeZoneProvider>
          </main>
        </div>
      </body>
    </html>
  );
}
