"use client";

import type { RecordActionProps } from "./types";

/** Placeholder slot (filled by the operator-actions work). */
export function CompensationPanel(_props: RecordActionProps) {
  return null;
}
