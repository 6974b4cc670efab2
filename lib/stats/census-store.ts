import { byDialect } from "../db/dialect";
import type { SqlExecutor } from "../db/sql";
import type { DepartureKind } from "./census";
import { mysqlCensusStore } from "./census-store.mysql";
import { postgresCensusStore } from "./census-store.postgres";

/** An interval of expires_at: [from, to); null = open. */
export interface ExpiryInterval {
  name: string;
  from: Date | null;
  to: Date | null;
  /** Count only the failed records of the interval (the census's failed counts; the pieces of hours read the status). */
  failed?: boolean;
}

const HOUR_MS = 3_600_000;

/** A stretch of expires_at of less than an hour, read from the records: added (+1) or taken off (−1). */
export interface CensusPiece {
  lo: number;
  hi: number;
  sign: 1 | -1;
}

/** What countByExpiry counts: one operation's records or all; the failed records of every hour too; `now`, where the edges after it are read (censusCover). */
export interface CensusCountOptions {
  operation?: string;
  failed?: boolean;
  now?: Date;
}

/**
 * How an interval [lo, hi) of expires_at (ms; ±Infinity = open) is counted: the census's whole
 * hours [whole.lo, whole.hi), if any, and pieces of less than an hour read from the records
 * (ranges of (operation, expires_at)), added or taken off the census's hours. An edge off the
 * hour is read on one side of it within its hour: [edge, next hour) added, or [hour, edge) taken
 * off. After `now` it is the side after the edge: an edge at now + D (the overview's next 24
 * hours, the Expiry page's last bucket) has before it the records written in the last minutes
 * with a TTL of D — not yet all-visible, so read row by row on PostgreSQL (10M records: 9,106
 * heap fetches, 7 ms for 20 minutes of them) — and after it only records with a longer TTL,
 * written earlier (none where every TTL is D). Elsewhere (before `now`, or without it) the
 * shorter side, which holds fewer records where they are spread evenly. An interval that spans
 * no whole hour either way is read as it is.
 */
export function censusCover(lo: number, hi: number, now = NaN): { whole: { lo: number; hi: number } | null; pieces: CensusPiece[] } {
  const hourNear = (edge: number, side: "lo" | "hi") => {
    if (!Number.isFinite(edge)) return edge;
    const down = Math.floor(edge / HOUR_MS) * HOUR_MS;
    if (down === edge) return edge;
    const up = down + HOUR_MS;
    if (edge > now) return up;
    // a tie goes inwards: the piece is added, not taken off
    return side === "lo" ? (up - edge <= edge - down ? up : down) : edge - down <= up - edge ? down : up;
  };
  const wholeLo = hourNear(lo, "lo");
  const wholeHi = hourNear(hi, "hi");
  if (!(wholeLo < wholeHi)) return { whole: null, pieces: [{ lo, hi, sign: 1 }] };
  const pieces: CensusPiece[] = [];
  if (wholeLo > lo) pieces.push({ lo, hi: wholeLo, sign: 1 });
  if (wholeLo < lo) pieces.push({ lo: wholeLo, hi: lo, sign: -1 });
  if (wholeHi < hi) pieces.push({ lo: wholeHi, hi, sign: 1 });
  if (wholeHi > hi) pieces.push({ lo: hi, hi: wholeHi, sign: -1 });
  return { whole: { lo: wholeLo, hi: wholeHi }, pieces };
}

/** An interval's whole hours, counted from the census (ms; ±Infinity = open). */
export interface CensusHours {
  name: string;
  lo: number;
  hi: number;
  failed: boolean;
}

/** A piece of an hour read from the records: [lo, hi), all records or the failed ones. */
export interface PieceRead {
  lo: number;
  hi: number;
  failed: boolean;
}

/** An interval's use of a piece read (its number in `pieces`): its count added (+1) or taken off (−1). */
export interface PieceUse {
  name: string;
  piece: number;
  sign: 1 | -1;
}

/**
 * The intervals as both dialects' countByExpiry read them: each one's whole hours from the census
 * and its pieces (censusCover), a piece shared by several intervals (same ends, same `failed`)
 * read once — the overview's `now` edge is an edge of three (expired, the next 24 h, today) —
 * and its count given to each with that interval's sign. Empty intervals are left out.
 */
export function coverIntervals(intervals: readonly ExpiryInterval[], now?: Date): { whole: CensusHours[]; pieces: PieceRead[]; uses: PieceUse[] } {
  const whole: CensusHours[] = [];
  const pieces: PieceRead[] = [];
  const uses: PieceUse[] = [];
  const pieceOf = new Map<string, number>();
  for (const iv of intervals) {
    const lo = iv.from ? iv.from.getTime() : -Infinity;
    const hi = iv.to ? iv.to.getTime() : Infinity;
    if (!(lo < hi)) continue;
    const failed = iv.failed === true;
    const cover = censusCover(lo, hi, now?.getTime());
    if (cover.whole) whole.push({ name: iv.name, ...cover.whole, failed });
    for (const pc of cover.pieces) {
      const key = `${pc.lo} ${pc.hi} ${failed}`;
      let piece = pieceOf.get(key);
      if (piece === undefined) {
        piece = pieces.push({ lo: pc.lo, hi: pc.hi, failed }) - 1;
        pieceOf.set(key, piece);
      }
      uses.push({ name: iv.name, piece, sign: pc.sign });
    }
  }
  return { whole, pieces, uses };
}

/** How the records of one apply differed from their members. */
export interface AppliedChanges {
  /** Records counted for the first time. */
  added: number;
  /** Counted records whose hour (or operation) changed. */
  moved: number;
  /** Counted records that are gone. */
  gone: number;
  /** Counted records, where they were, that became failed or stopped being failed. */
  failedChanged: number;
}

/** An operation-hour where what was counted (`had`, `had_failed`) and what should be (`should`, `should_failed`) differ. */
export interface CensusDriftRow {
  operation: string;
  expires_hour: Date;
  had: bigint | null;
  should: bigint | null;
  had_failed: bigint | null;
  should_failed: bigint | null;
}

export interface DepartureRow {
  kind: string;
  records: bigint;
  firstSeenAt: Date;
  lastSeenAt: Date;
}

/**
 * The statements of the record census (ADR 0011; what the census is and who writes it:
 * lib/stats/census.ts). Every write runs in a transaction of the rollups' writer (the
 * writers' lock and flag: RollupStore), reads in the caller's snapshot.
 */
export interface CensusStore {
  /**
   * Exact record counts per interval of expires_at and per operation, in one statement (one
   * snapshot): the census's whole hours, corrected for the records touched since the last
   * refresh, and the pieces of hours at the edges added or taken off (censusCover). Operations with none left out.
   * With `failed`, also the failed records of every hour per operation (rows named 'status:failed').
   */
  countByExpiry(intervals: readonly ExpiryInterval[], f: CensusCountOptions): Promise<{ name: string; operation: string; n: bigint }[]>;

  /**
   * Makes the members (and the census with them) equal to the records a refresh batch looks
   * at: those of the events in (events.from, events.upTo] and of the gaps now visible, the
   * records in (records.from, records.upTo], and with `recentlyFailed` (a refresh's last batch)
   * the records that became failed since the last refresh, less GAP_GRACE. Returns what changed.
   */
  applyTouched(events: { from: bigint; upTo: bigint }, records: { from: bigint; upTo: bigint }, recentlyFailed: boolean): Promise<AppliedChanges>;
  /** The sweep's next slice: the last of up to `limit` record ids from `from` on, and how many there are. */
  sweepSlice(from: bigint, limit: number): Promise<{ last: bigint | null; n: bigint }>;
  /** The same for the records and members with ids in [from, end), except the ones a refresh is about to apply. */
  applySwept(from: bigint, end: bigint): Promise<AppliedChanges>;
  /** The same for the records `ids` (a repair). */
  applyRecords(ids: readonly bigint[]): Promise<AppliedChanges>;
  /** Adds to census_departures what a refresh, the sweep or a check saw writers do outside the protocol. */
  addDepartures(seen: readonly { kind: DepartureKind; n: number }[]): Promise<void>;

  /** Per operation-hour: the census, corrected for touched records, against a plain count over the records. O(records). */
  censusDrift(): Promise<CensusDriftRow[]>;
  /** The records whose member differs from them (not counted, gone, moved), touched ones excepted. O(records). */
  memberDrift(): Promise<bigint[]>;
  /** The census against the members, per operation-hour (a census row edited by hand). */
  aggregateDrift(): Promise<CensusDriftRow[]>;
  /** Moves census rows by `delta` and `failedDelta` (never below 0), making the missing ones. */
  correctAggregates(drift: readonly { operation: string; expiresHour: Date; delta: number; failedDelta: number }[]): Promise<void>;
  /** Counts every record visible now from scratch: members, census, and the record mark at the highest member. */
  rewrite(): Promise<void>;

  /** Takes records the purge just deleted out: their members, and one each off the hours they were counted under (and off their failed counts). */
  takeOutPurged(ids: readonly bigint[]): Promise<void>;
}

export function censusStore(ex: SqlExecutor): CensusStore {
  return byDialect(ex, { postgres: postgresCensusStore, mysql: mysqlCensusStore })(ex);
}
