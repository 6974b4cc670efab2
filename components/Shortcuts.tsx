"use client";

import { useRouter } from "next/navigation";
import { useEffect, useRef, useState } from "react";

export interface GoTo {
  key: string;
  href: string;
  label: string;
}

/** Keys that work inside lists and tables (components/queue/read-ui.tsx onRowKeyDown, Tabs). */
const IN_LISTS: [string, string][] = [
  ["↓ / j, ↑ / k", "next / previous row of a list"],
  ["Home, End", "first / last row"],
  ["Enter", "open the row's record"],
  ["Space / x", "select a queue row"],
  ["← / →", "previous / next tab"],
  ["Esc", "close a menu or dialog"],
];

const typing = (t: EventTarget | null) => t instanceof HTMLElement && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName));

/**
 * Keyboard shortcuts for the whole console: "?" lists them, "/" puts the cursor in the
 * page's first search or filter field, "g" then a letter opens a screen the user may see.
 * Never while typing in a field.
 */
export function Shortcuts({ goTo }: { goTo: GoTo[] }) {
  const router = useRouter();
  const dialog = useRef<HTMLDialogElement>(null);
  const [open, setOpen] = useState(false);

  useEffect(() => {
    let pendingG = 0;
    const onKey = (e: KeyboardEvent) => {
      if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || typing(e.target)) return;
      if (e.key === "?") {
        e.preventDefault();
        setOpen(true);
        return;
      }
      if (e.key === "/") {
        const field = document.querySelector<HTMLElement>(
          'main input[type="search"], main input[type="text"]:not([disabled]), main input:not([type]):not([disabled])',
        );
        if (field) {
          e.preventDefault();
          field.focus();
        }
        return;
      }
      if (e.key === "g") {
        pendingG = Date.now();
        return;
      }
      if (pendingG && Date.now() - pendingG < 1500) {
        pendingG = 0;
        const target = goTo.find((g) => g.key === e.key);
        if (target) {
          e.preventDefault();
          router.push(target.href);
        }
      }
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, [goTo, router]);

  useEffect(() => {
    const d = dialog.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);

  return (
    <>
      <button
        type="button"
        className="shortcuts-button"
        aria-keyshortcuts="?"
        title="Keyboard shortcuts (?)"
        onClick={() => setOpen(true)}
        data-testid="shortcuts-button"
      >
        <span aria-hidden>?</span>
        <span className="visually-hidden">Keyboard shortcuts</span>
      </button>
      <dialog ref={dialog} className="shortcuts-dialog" aria-labelledby="shortcuts-title" data-testid="shortcuts" onClose={() => setOpen(false)}>
        <h2 id="shortcuts-title">Keyboard shortcuts</h2>
        <table className="data-table shortcuts-table">
          <tbody>
            <tr>
              <th scope="row">
                <kbd>?</kbd>
              </th>
              <td>this list</td>
            </tr>
            <tr>
              <th scope="row">
                <kbd>/</kbd>
              </th>
              <td>the page&apos;s search or first filter field</td>
            </tr>
            {goTo.map((g) => (
              <tr key={g.key}>
                <th scope="row">
                  <kbd>g</kbd> <kbd>{g.key}</kbd>
                </th>
                <td>{g.label}</td>
              </tr>
            ))}
            {IN_LISTS.map(([k, what]) => (
              <tr key={k}>
                <th scope="row">
                  <kbd>{k}</kbd>
                </th>
                <td>{what}</td>
              </tr>
            ))}
          </tbody>
        </table>
        <p className="subtle">Tab and Shift+Tab reach every button and link; the focused one is outlined.</p>
        <form method="dialog">
          <button type="submit" className="primary" autoFocus>
            Close
          </button>
        </form>
      </dialog>
    </>
  );
}
