"use client";

import { usePathname } from "next/navigation";

/** The main navigation; the server decides which links a user may see. */
export function NavLinks({ links }: { links: { href: string; label: string }[] }) {
  const pathname = usePathname();
  const current = (href: string) => (href === "/" ? pathname === "/" : pathname === href || pathname.startsWith(`${href}/`));
  return (
    <nav aria-label="Main">
      {links.map((l) => (
        <a key={l.href} href={l.href} aria-current={current(l.href) ? "page" : undefined}>
          {l.label}
        </a>
      ))}
    </nav>
  );
}
