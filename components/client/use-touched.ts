"use client";

import { useState } from "react";

/**
 * Validation shows once a field was touched (changed or left), not before anything is
 * typed: `invalid("amount", !ok)` for aria-invalid, `touch("amount")` on change and blur.
 */
export function useTouched() {
  const [touched, setTouched] = useState<ReadonlySet<string>>(new Set());
  const touch = (name: string) => setTouched((t) => (t.has(name) ? t : new Set(t).add(name)));
  return {
    touch,
    invalid: (name: string, bad: boolean) => touched.has(name) && bad,
    /** Props for an input: marks it touched when left. */
    onBlur: (name: string) => () => touch(name),
  };
}
