import type { SqlExecutor } from "../db/sql";
import { demoStore, type BulkBatchCounts } from "./store";

/**
 * Volume data for the shared tables, generated set-based in SQL (INSERT … SELECT
 * FROM generate_series) so millions of rows take seconds to minutes, not hours.
 *
 * Every value is derived by hashing (seed, series index) with md5/sha256, never
 * random(): the same seed and index always give the same row, on Postgres and on
 * PGlite alike. Keys are `bulk-<seed>-<index>`, so they never collide with the demo
 * traffic's keys (UUIDs and provider event ids) and a second run with the same
 * seed inserts nothing (ON CONFLICT DO NOTHING; pass `startIndex` to add more).
 *
 * What a batch writes, in ONE statement (records, their events and the
 * reconciliation items of pending records; lib/demo/store.postgres.ts):
 * - records: ~93.5 % completed, ~6 % failed, ~0.5 % pending (payments/refunds, each
 *   with an open reconciliation item), ~0.2 % stuck in processing (updated_at at
 *   least 2 h old); TTL per operation, so many are expired; ~0.05 % are a second
 *   submission of the previous index's purchase under another key, 20–240 s later
 *   (same scope, operation, payload hash and amount: a double charge);
 * - exactly `eventsPerRecord` events per record: reserved, then the outcome
 *   (completed | failed | pending; in_progress for processing), then replayed /
 *   conflict (with expected and received hashes in `detail`) for finished records
 *   and in_progress rejections for unfinished ones.
 */

/** Relative traffic by UTC hour of day: quiet nights, a lunch peak and an evening peak. */
export const HOURLY_WEIGHTS = [
  0.25, 0.18, 0.12, 0.1, 0.1, 0.14, 0.3, 0.5, 0.7, 0.85, 0.95, 1.0, 1.0, 0.95, 0.9, 0.85, 0.85, 0.9, 0.95, 1.0, 0.95, 0.8, 0.6, 0.4,
];

/** How long each operation's record protects its intent (seconds). */
export const TTL_SECONDS: Record<string, number> = {
  create_order: 86400, // 24 h
  capture_payment: 30 * 86400, // 30 days
  refund_payment: 14 * 86400, // 14 days
  issue_invoice: 7 * 86400, // 7 days
  accept_webhook: 3 * 86400, // 3 days
};

export interface BulkProgress {
  batch: number;
  batches: number;
  /** Cumulative totals so far. */
  records: number;
  events: number;
  elapsedMs: number;
}

export interface BulkOptions {
  records: number;
  /** Events per record, exactly (default 3; at least 1). */
  eventsPerRecord?: number;
  seed?: number;
  /** Spread created_at over the last `days` days (default 30). */
  days?: number;
  /** Records per statement (default 100 000). */
  batchSize?: number;
  /** First series index (default 0): lets a second run with the same seed add more rows. */
  startIndex?: number;
  now?: Date;
  /** Batches running at once on a pooled executor (default 1). */
  concurrency?: number;
  onProgress?: (p: BulkProgress) => void;
}

export interface BulkResult {
  seed: number;
  requested: number;
  records: number;
  /** Indexes whose key already existed (a re-run): nothing written for them. */
  skipped: number;
  events: number;
  reconciliationItems: number;
  byStatus: { completed: number; failed: number; pending: number; processing: number };
  eventsByKind: { reserved: number; completed: number; failed: number; pending: number; replayed: number; conflict: number; in_progress: number };
  doubleSubmits: number;
  elapsedMs: number;
  recordsPerSecond: number;
  eventsPerSecond: number;
}

/** 1000 buckets → UTC hour, distributed like HOURLY_WEIGHTS (the inverse CDF as a lookup table). */
function hourTable(): number[] {
  const total = HOURLY_WEIGHTS.reduce((a, b) => a + b, 0);
  const table: number[] = [];
  let cum = 0;
  let h = 0;
  for (let k = 0; k < 1000; k++) {
    const target = ((k + 0.5) / 1000) * total;
    while (cum + HOURLY_WEIGHTS[h] < target && h < 23) cum += HOURLY_WEIGHTS[h++];
    table.push(h);
  }
  return table;
}

export async function bulkGenerate(sql: SqlExecutor, opts: BulkOptions): Promise<BulkResult> {
  const started = performance.now();
  const records = opts.records;
  const seed = opts.seed ?? 1;
  const days = opts.days ?? 30;
  const perRecord = opts.eventsPerRecord ?? 3;
  const batchSize = opts.batchSize ?? 100_000;
  const startIndex = opts.startIndex ?? 0;
  const now = opts.now ?? new Date();
  const concurrency = Math.max(1, opts.concurrency ?? 1);
  if (!(Number.isInteger(records) && records >= 0)) throw new Error("records must be a non-negative integer");
  if (!(Number.isInteger(perRecord) && perRecord >= 1 && perRecord <= 100)) throw new Error("eventsPerRecord must be an integer in 1..100");
  if (!(Number.isInteger(batchSize) && batchSize >= 1)) throw new Error("batchSize must be a positive integer");
  if (!(Number.isInteger(days) && days >= 1 && days <= 3650)) throw new Error("days must be an integer in 1..3650");
  if (!Number.isInteger(seed) || !(Number.isInteger(startIndex) && startIndex >= 0)) throw new Error("seed and startIndex must be integers");

  const result: BulkResult = {
    seed,
    requested: records,
    records: 0,
    skipped: 0,
    events: 0,
    reconciliationItems: 0,
    byStatus: { completed: 0, failed: 0, pending: 0, processing: 0 },
    eventsByKind: { reserved: 0, completed: 0, failed: 0, pending: 0, replayed: 0, conflict: 0, in_progress: 0 },
    doubleSubmits: 0,
    elapsedMs: 0,
    recordsPerSecond: 0,
    eventsPerSecond: 0,
  };
  const hours = hourTable();
  const store = demoStore(sql);
  const batches = Math.ceil(records / batchSize);
  let nextBatch = 0;
  let done = 0;

  const runBatch = async (b: number) => {
    const from = startIndex + b * batchSize;
    const to = Math.min(startIndex + records, from + batchSize);
    const row = await store.insertBulkBatch({
      seed,
      from,
      to,
      load: { first: startIndex, records },
      now,
      days,
      eventsPerRecord: perRecord,
      hourTable: hours,
      ttlSeconds: TTL_SECONDS,
    });
    const n = (k: keyof BulkBatchCounts) => Number(row[k]);
    result.records += n("records");
    result.skipped += to - from - n("records");
    result.byStatus.completed += n("completed");
    result.byStatus.failed += n("failed");
    result.byStatus.pending += n("pending");
    result.byStatus.processing += n("processing");
    result.events += n("events");
    result.eventsByKind.reserved += n("ev_reserved");
    result.eventsByKind.completed += n("ev_completed");
    result.eventsByKind.failed += n("ev_failed");
    result.eventsByKind.pending += n("ev_pending");
    result.eventsByKind.replayed += n("ev_replayed");
    result.eventsByKind.conflict += n("ev_conflict");
    result.eventsByKind.in_progress += n("ev_in_progress");
    result.reconciliationItems += n("items");
    if (n("records") === to - from) result.doubleSubmits += n("dups");
    opts.onProgress?.({ batch: ++done, batches, records: result.records, events: result.events, elapsedMs: Math.round(performance.now() - started) });
  };

  await Promise.all(
    Array.from({ length: Math.min(concurrency, batches) }, async () => {
      while (nextBatch < batches) await runBatch(nextBatch++);
    }),
  );

  result.elapsedMs = Math.round(performance.now() - started);
  const secs = Math.max(result.elapsedMs, 1) / 1000;
  result.recordsPerSecond = Math.round(result.records / secs);
  result.eventsPerSecond = Math.round(result.events / secs);
  return result;
}
