import type { ReactNode } from "react";

/**
 * A table's own scrolling box: a wide table scrolls inside it, never the page. Focusable
 * and labelled, so a keyboard user can scroll it too (arrow keys once focused).
 */
export function ScrollBox({ label, className = "table-wrap", children, busy }: { label: string; className?: string; children: ReactNode; busy?: boolean }) {
  return (
    <div className={className} tabIndex={0} role="region" aria-label={label} aria-busy={busy || undefined}>
      {children}
    </div>
  );
}
