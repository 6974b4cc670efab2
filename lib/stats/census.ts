import type { SqlExecutor } from "../db/sql";
import { censusStore, type AppliedChanges, type CensusCountOptions, type CensusDriftRow, type DepartureRow, type ExpiryInterval } from "./census-store";
import { rollupStore } from "./rollup-store";

export type { AppliedChanges, ExpiryInterval };

/**
 * The record census: how many records there are per operation and expiry hour, and how
 * many of them are failed (record_census), kept by the rollup refresher and the purge — no
 * trigger on the services' tables (ADR 0007, 0008, 0016). Its statements: census-store.ts
 * (the interface), census-store.postgres.ts and census-store.mysql.ts.
 *
 * Each counted record is a member (record_census_members: record id → the operation and
 * expiry hour it is counted under, and whether it is failed), and record_census is the
 * members counted per (operation, hour): the two change together, in the same statements,
 * under the refresher's lock. Knowing where each record is counted is what lets the console follow
 * writers that do not keep to the letter of the protocol:
 *
 * - The records a refresh looks at ("touched"): the records of the events it rolls up
 *   (any kind, late commits included through the gaps), the records above the record
 *   high-water mark (rollup_state 'records'; new records, found by primary key whether
 *   or not they have a `reserved` event), and the records that became failed lately (failed,
 *   updated_at within GAP_GRACE of the last refresh: a failure whose event commits apart from
 *   its status, in either order, is counted at every moment). For each, the store's apply
 *   makes the member equal to the record as it is now: new → counted; expires_at moved
 *   (sliding expiry on a replay, a fix by hand followed by an event) → moved to its new hour;
 *   failed or no longer failed → so counted; gone (deleted outside the console) → taken out.
 *   Cost: primary-key probes per new event, new record and recent failure — never a pass
 *   over the table.
 * - Readers (countByExpiry) add the same correction for the records touched since the
 *   last refresh — +1 where the record is now, −1 where its member is — so every count is
 *   exact at any moment, in one statement, and agrees with a plain count over the records
 *   (a scope's Expiry page; test/records-stats.test.ts) for everything that comes with an event
 *   or a new record — from the moment the event commits: a writer that moves expires_at and
 *   writes its event in a later transaction leaves a few milliseconds in which a snapshot counts
 *   the record at its old hour (test/exactness-race.test.ts leaves such snapshots out of its
 *   moment-by-moment comparison; its final one includes every move). Without a scope the Expiry
 *   page counts from the census too (ADR 0017).
 * - What comes with none of those (a DELETE or an UPDATE of expires_at by hand and no event
 *   after it, a status set to failed without an event or updated_at) is found by the sweep — every refresh re-checks the next CENSUS_SWEEP_RECORDS
 *   records by primary key, round the table — and by verifyRecordCensus (O(records), daily
 *   or on demand). What it finds is repaired record by record and reported as a departure.
 * - Departures from the protocol that the refresh, the sweep or the check saw are kept in
 *   census_departures (kind, how many records, when last) and shown on the overview.
 * - The console's purge deletes records and, in the same transaction under the refresher's
 *   lock, their members and counts (`asCensusWriter`, CensusStore.takeOutPurged).
 *
 * Reading an interval of expires_at (countByExpiry): the census's whole hours + the
 * correction for touched records in those hours, and at each edge off the hour the records
 * of one side of it within its hour, added or taken off (census-store.ts censusCover: after
 * `now` the side after the edge, else the shorter; index ranges of (operation, expires_at),
 * less than an hour each). Without a scope
 * the overview's record totals, expired-not-purged, expiring and forecast read a few thousand
 * census rows instead of every record.
 */

/** How many records each refresh re-checks by primary key (CENSUS_SWEEP_RECORDS). */
export const DEFAULT_SWEEP_RECORDS = 5_000;

/** What a departure from the protocol looks like to the census (census_departures.kind). */
export const DEPARTURE_KINDS = {
  expires_moved: "expires_at (or the operation) changed after the record was counted",
  deleted_outside: "deleted by something other than the console's purge",
  found_uncounted: "found by the sweep or the check without any event or new-record sighting (committed late, inserted by hand)",
  failed_unseen: "became failed, or stopped being failed, without an event or an updated_at the refresh could see",
} as const;
export type DepartureKind = keyof typeof DEPARTURE_KINDS;

export interface CensusCount {
  name: string;
  operation: string;
  count: number;
}

/**
 * Exact record counts per interval of expires_at and per operation, in one statement (one
 * snapshot); with `failed`, the failed records per operation too (name 'status:failed').
 */
export async function countRecordsByExpiry(session: SqlExecutor, intervals: readonly ExpiryInterval[], f: CensusCountOptions = {}): Promise<CensusCount[]> {
  const rows = await censusStore(session).countByExpiry(intervals, f);
  return rows.map((r) => ({ name: r.name, operation: r.operation, count: Number(r.n) }));
}

// ---------------------------------------------------------------------------
// Writing: only under the refresher's lock, with its writer flag (lib/stats/rollups.ts).

/** Adds what a refresh, the sweep or a check saw writers do outside the protocol to census_departures. */
export async function recordDepartures(session: SqlExecutor, seen: Partial<Record<DepartureKind, number>>): Promise<void> {
  const rows = Object.entries(seen).filter(([, n]) => n && n > 0);
  if (!rows.length) return;
  await censusStore(session).addDepartures(rows.map(([kind, n]) => ({ kind: kind as DepartureKind, n: n! })));
}

export interface Departure {
  kind: DepartureKind;
  description: string;
  records: number;
  firstSeenAt: Date;
  lastSeenAt: Date;
}

export const departureRows = (rows: DepartureRow[]): Departure[] =>
  rows
    .filter((r): r is typeof r & { kind: DepartureKind } => r.kind in DEPARTURE_KINDS)
    .map((r) => ({ kind: r.kind, description: DEPARTURE_KINDS[r.kind], records: Number(r.records), firstSeenAt: r.firstSeenAt, lastSeenAt: r.lastSeenAt }));

/**
 * Runs `fn` — a purge batch's DELETE of records, which takes them out of the census
 * (CensusStore.takeOutPurged; on PostgreSQL in the DELETE's own statement) — as the census's
 * writer, in the batch's transaction (`tx`: txExecutor) under the refresher's lock for that
 * transaction. So a refresh or a check never sees half a purge.
 */
export async function asCensusWriter<T>(tx: SqlExecutor, fn: () => Promise<T>): Promise<T> {
  const writer = rollupStore(tx);
  await writer.lockWriterForTransaction();
  await writer.markWriter();
  try {
    return await fn();
  } finally {
    await writer.unmarkWriter();
  }
}

// ---------------------------------------------------------------------------
// Checking: O(records), for cron and on demand.

export interface CensusDrift {
  operation: string;
  expiresHour: Date;
  /** What the census (with the correction for touched records) said, and what the records say: all records, and the failed ones. */
  had: number;
  should: number;
  hadFailed: number;
  shouldFailed: number;
}

/** How many records a drift is off by, in all (the sum of the absolute differences, of all records and of the failed ones). */
export const driftRecords = (drift: readonly CensusDrift[]) =>
  drift.reduce((n, d) => n + Math.abs(d.should - d.had) + Math.abs(d.shouldFailed - d.hadFailed), 0);

const driftRows = (rows: CensusDriftRow[]): CensusDrift[] =>
  rows.map((r) => ({
    operation: r.operation,
    expiresHour: r.expires_hour,
    had: Number(r.had ?? 0),
    should: Number(r.should ?? 0),
    hadFailed: Number(r.had_failed ?? 0),
    shouldFailed: Number(r.should_failed ?? 0),
  }));

export interface CensusCheckResult {
  /** What the overview would have been off by, per operation-hour. */
  drift: CensusDrift[];
  /** The records to apply (member ≠ record), and census rows that disagree with their members. */
  records: bigint[];
  aggregate: CensusDrift[];
}

/**
 * Everything a check needs, read in one snapshot that the caller opened (REPEATABLE READ):
 * the census, members, watermarks, gaps and records as of one moment, so refreshes and
 * purges in flight (invisible to it) never show up as drift. O(records).
 */
export async function readCensusDrift(session: SqlExecutor): Promise<CensusCheckResult> {
  const census = censusStore(session);
  const drift = driftRows(await census.censusDrift());
  const records = await census.memberDrift();
  const aggregate = driftRows(await census.aggregateDrift());
  return { drift, records, aggregate };
}

/**
 * Sets census rows that disagree with their members (read in an earlier snapshot) by the
 * difference, under the refresher's lock. Only a census row edited by hand needs it: the
 * refresher and the purge change both in the same statements.
 */
export async function applyAggregateDrift(session: SqlExecutor, drift: readonly CensusDrift[]): Promise<void> {
  if (!drift.length) return;
  await censusStore(session).correctAggregates(
    drift.map((d) => ({ operation: d.operation, expiresHour: d.expiresHour, delta: d.should - d.had, failedDelta: d.shouldFailed - d.hadFailed })),
  );
}

/**
 * Counts every record from scratch (for rebuildRollups, under the refresher's lock): the
 * members are all records visible now, the census their count per operation-hour, and
 * the record high-water mark the highest member.
 */
export async function rewriteCensus(session: SqlExecutor): Promise<void> {
  await censusStore(session).rewrite();
}
