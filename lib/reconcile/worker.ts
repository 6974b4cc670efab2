import type { Database } from "../db/client";

/** Background reconciler (stub until the reconcile work lands). */
export function startReconciler(_getDb: () => Promise<Database>): { stop(): Promise<void> } | null {
  return null;
}
