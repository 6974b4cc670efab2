/**
 * The text a bulk release must be confirmed with ("release 12 keys"). No imports: the
 * API (lib/redis/release.ts) and the Redis screen's dialog share it.
 */
export function releaseConfirmation(count: number): string {
  return `release ${count} key${count === 1 ? "" : "s"}`;
}

/** Keys one bulk release may delete. */
export const BULK_RELEASE_LIMIT = 100;
