import type { ReactNode } from "react";

/**
 * A scrolling box of its own: a wide table or a long stored body scrolls inside it, never the
 * page. Focusable and labelled, so a keyboard user can scroll it too (arrow keys once focused).
 * `as="pre"` for preformatted text (a stored body, a Redis value) that keeps its own spacing.
 */
export function ScrollBox({
  label,
  className = "table-wrap",
  children,
  busy,
  as: Tag = "div",
  testId,
}: {
  label: string;
  className?: string;
  children: ReactNode;
  busy?: boolean;
  as?: "div" | "pre";
  testId?: string;
}) {
  return (
    <Tag className={className} tabIndex={0} role="region" aria-label={label} aria-busy={busy || undefined} data-testid={testId}>
      {children}
    </Tag>
  );
}
