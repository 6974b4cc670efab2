/**
 * Retention settings read from the environment (at call time, so tests and
 * scripts can set process.env first).
 *
 * - PURGE_POLL_SECONDS (default 5; 0 = off): how often a server looks for a purge
 *   run whose worker stopped renewing its lease (a crashed process) and takes it over.
 * - PURGE_LEASE_SECONDS (default 30): how long a worker's claim on a run lasts
 *   without a batch renewing it. A run whose lease has passed is taken over by the
 *   next poll (or `npm run purge -- --resume`). The pause between batches is added.
 */

export const DEFAULT_POLL_SECONDS = 5;
export const DEFAULT_LEASE_SECONDS = 30;
export const DEFAULT_BATCH_SIZE = 1000;
export const DEFAULT_PAUSE_MS = 100;
/**
 * Records per batch at most. A MySQL batch names its candidates in its statements, and MySQL's
 * prepared statements (Prisma's, in the batch's transaction) take at most 65,535 parameters:
 * 100,000 failed there (test/retention-eligibility.test.ts). The tables' CHECK allows 100,000.
 */
export const MAX_BATCH_SIZE = 50_000;
export const MAX_PAUSE_MS = 600_000;

/**
 * An events batch deletes up to this many times the run's batch size (at most MAX_BATCH_SIZE, as
 * a records batch). Events are append-only — no writer updates an old event or waits on its
 * row — and one costs about a sixth of a record to delete (no locking first, no census:
 * PostgreSQL 2.0 vs 13.2 ms per 1,000). At the records' size the events phase spent a pause and
 * a batch's fixed cost for every 2 ms of deleting (docs/retention.md).
 */
export const EVENT_BATCH_FACTOR = 10;

export function eventBatchSize(batchSize: number): number {
  return Math.min(batchSize * EVENT_BATCH_FACTOR, MAX_BATCH_SIZE);
}

function wholeSeconds(name: string, fallback: number, min: number, env: Record<string, string | undefined>): number {
  const text = env[name]?.trim();
  if (!text) return fallback;
  if (/^\d{1,6}$/.test(text) && Number(text) >= min) return Number(text);
  console.warn(`purge: ${name}="${text}" is not a whole number of seconds ≥ ${min}; using ${fallback}`);
  return fallback;
}

export function purgePollSeconds(env: Record<string, string | undefined> = process.env): number {
  return wholeSeconds("PURGE_POLL_SECONDS", DEFAULT_POLL_SECONDS, 0, env);
}

export function purgeLeaseSeconds(env: Record<string, string | undefined> = process.env): number {
  return wholeSeconds("PURGE_LEASE_SECONDS", DEFAULT_LEASE_SECONDS, 1, env);
}
