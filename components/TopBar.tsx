"use client";

import { usePathname } from "next/navigation";
import { useEffect, useRef, useState, type ReactNode } from "react";

/**
 * The top bar's collapsible part: on a laptop screen the navigation and the user's
 * corner sit in one row; below 1100 px they fold behind a "Menu" button (a disclosure:
 * Escape or navigating closes it, focus returns to the button).
 */
export function TopBarMenu({ children }: { children: ReactNode }) {
  const [open, setOpen] = useState(false);
  const pathname = usePathname();
  const button = useRef<HTMLButtonElement>(null);
  useEffect(() => setOpen(false), [pathname]);
  useEffect(() => {
    if (!open) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== "Escape" || document.querySelector("details.nav-menu[open]")) return;
      setOpen(false);
      button.current?.focus();
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, [open]);
  return (
    <>
      <button
        ref={button}
        type="button"
        className="menu-toggle"
        aria-expanded={open}
        aria-controls="topbar-menu"
        data-testid="menu-toggle"
        onClick={() => setOpen((o) => !o)}
      >
        <span aria-hidden className="menu-icon" />
        Menu
      </button>
      <div id="topbar-menu" className="topbar-menu" data-open={open ? "true" : "false"}>
        {children}
      </div>
    </>
  );
}
