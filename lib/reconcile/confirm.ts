/**
 * The text a bulk check must be confirmed with ("check 37 records"). No imports:
 * the API (lib/reconcile/bulk.ts) and the queue screen's dialog share it.
 */
export function confirmationText(count: number): string {
  return `check ${count} record${count === 1 ? "" : "s"}`;
}

/** Records one bulk call may check. */
export const BULK_LIMIT = 100;
