"use client";

import type { RecordActionProps } from "./types";

/** Placeholder slot (filled by the operator-actions work). */
export function LegalHoldPanel(_props: RecordActionProps) {
  return null;
}
