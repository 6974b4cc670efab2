"use client";

import { usePathname } from "next/navigation";
import { useEffect, useRef } from "react";

export interface NavItem {
  href: string;
  label: string;
}
export type NavEntry = NavItem | { group: string; items: NavItem[] };

/**
 * The main navigation; the server decides which links a user may see. Daily
 * screens are top-level links; the rest sit in small menus (<details>: keyboard
 * and screen-reader friendly without script), so the bar fits a laptop screen.
 * A menu closes on Escape, on a click elsewhere and after navigating.
 */
export function NavLinks({ entries }: { entries: NavEntry[] }) {
  const pathname = usePathname();
  const current = (href: string) => (href === "/" ? pathname === "/" : pathname === href || pathname.startsWith(`${href}/`));
  const navRef = useRef<HTMLElement>(null);

  useEffect(() => {
    const nav = navRef.current;
    if (!nav) return;
    const closeAll = (except?: Node | null) =>
      nav.querySelectorAll("details[open]").forEach((d) => {
        if (!except || !d.contains(except)) d.removeAttribute("open");
      });
    const onClick = (e: MouseEvent) => closeAll(e.target as Node);
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== "Escape") return;
      const open = nav.querySelector("details[open]");
      if (!open) return;
      open.removeAttribute("open");
      open.querySelector("summary")?.focus();
    };
    document.addEventListener("click", onClick);
    document.addEventListener("keydown", onKey);
    closeAll();
    return () => {
      document.removeEventListener("click", onClick);
      document.removeEventListener("keydown", onKey);
    };
  }, [pathname]);

  return (
    <nav aria-label="Main" ref={navRef}>
      {entries.map((e) =>
        "group" in e ? (
          <details key={e.group} className="nav-menu">
            <summary aria-current={e.items.some((i) => current(i.href)) ? "page" : undefined}>{e.group}</summary>
            <div className="nav-menu-items">
              {e.items.map((l) => (
                <a key={l.href} href={l.href} aria-current={current(l.href) ? "page" : undefined}>
                  {l.label}
                </a>
              ))}
            </div>
          </details>
        ) : (
          <a key={e.href} href={e.href} aria-current={current(e.href) ? "page" : undefined}>
            {e.label}
          </a>
        ),
      )}
    </nav>
  );
}
