import { MYSQL } from "../db/dialect";
import { Params, type Statement } from "../db/params";
import type { SqlExecutor } from "../db/sql";
import { type AppliedChanges, type CensusDriftRow, type CensusCountOptions, type CensusStore, coverIntervals, type ExpiryInterval } from "./census-store";
import { GAP_GRACE_SECONDS } from "./rollup-store";
import { bin, inSlices, RECORDS_STATE, ROWS_PER_INSERT, valuesSql, watermarkSql } from "./rollup-store.mysql";

/**
 * The record census's statements on MySQL / MariaDB (what they keep and why: census.ts; what
 * differs from PostgreSQL: rollup-store.mysql.ts). PostgreSQL applies a batch in one statement
 * of data-modifying CTEs over the services' tables; here the records and members a batch
 * touches are read with one plain SELECT (the writer's REPEATABLE READ snapshot, which
 * follows the writers' lock), the changes computed in the process, and the members and the
 * census written by primary key with those values. Every write runs under the writers' lock,
 * so the census rows read before a write are still what they are when it is written. No
 * LATERAL (MariaDB has none): primary-key probes are joins from the few touched ids.
 */

/** The UTC hour a DATETIME is in (as a DATETIME). */
export const CENSUS_HOUR_SQL = (column: string) => bin(column, 3600);

/**
 * The records that became failed lately (ADR 0016; why: census-store.postgres.ts): failed, with
 * updated_at less than GAP_GRACE before the last refresh batch (rollup_state 'events'). A range of
 * (status, updated_at): the subquery is constant.
 */
const RECENTLY_FAILED_SQL = `SELECT r.id FROM idempotency_records r WHERE r.status = 'failed'
         AND r.updated_at > (SELECT COALESCE(MAX(s.updated_at) - INTERVAL ${GAP_GRACE_SECONDS} SECOND, CAST('1000-01-01' AS DATETIME(6)))
                               FROM rollup_state s WHERE s.name = 'events')`;

/**
 * The records touched since the last refresh, as `id`: those of the events above the
 * watermark (a primary-key range: the watermark subquery is constant) and of the gaps
 * (a probe each), those above the record high-water mark, and those that became failed lately.
 */
export const TOUCHED_SQL = `SELECT e.record_id AS id FROM idempotency_events e
       WHERE e.id > ${watermarkSql("events")} AND e.record_id IS NOT NULL
      UNION
      SELECT e.record_id FROM rollup_gaps g JOIN idempotency_events e ON e.id = g.event_id
       WHERE e.record_id IS NOT NULL
      UNION
      SELECT r.id FROM idempotency_records r WHERE r.id > ${watermarkSql(RECORDS_STATE)}
      UNION
      ${RECENTLY_FAILED_SQL}`;

/**
 * For records `ids` (a subquery of id): +1 where each is now, −1 where its member is
 * counted, as rows (operation, expires_at, n, f) — f the same for the failed count. The ids
 * are read once and drive the join (a LEFT JOIN keeps them first: MariaDB, expecting many ids —
 * after a bulk load leaves thousands of gaps — would otherwise walk a whole index of the records
 * or the members and probe the ids); each row then becomes its + and − rows through a two-row
 * table.
 */
const correctionSql = (ids: string) => `SELECT IF(s.sign = 1, r.operation, m.operation) AS operation,
              IF(s.sign = 1, r.expires_at, m.expires_hour) AS expires_at, s.sign AS n,
              IF(s.sign = 1, r.status = 'failed', -m.failed) AS f
         FROM (${ids}) t
         LEFT JOIN idempotency_records r ON r.id = t.id
         LEFT JOIN record_census_members m ON m.record_id = t.id
         JOIN (SELECT 1 AS sign UNION ALL SELECT -1) s ON IF(s.sign = 1, r.id, m.record_id) IS NOT NULL`;

/**
 * Exact record counts per interval of expires_at and per operation, in one statement (InnoDB
 * reads a statement in one snapshot): the census's whole hours + the correction for touched
 * records in those hours, and the pieces of hours at the interval's edges added or taken off
 * (censusCover). Rows:
 * { name, operation, n }; operations with none left out. With `failed`, also rows
 * 'status:failed' (the census's failed counts of every hour + the correction's, which is joined
 * to the intervals and to this one row). Parameters bind in text order.
 *
 * The shape differs from PostgreSQL's where MariaDB would cost more: MariaDB computes a CTE
 * again at every reference, so the whole hours of every interval are one join of the
 * intervals (`iv`) with the census and with the correction, which is computed once; and the
 * pieces at the edges are ranges of (operation, expires_at), index only, per operation
 * (a correlated count per operation, as PostgreSQL's, would read the operation's whole part
 * of the index: MariaDB does not range over (operation, expires_at) with the operation from
 * the outer row; a join with the operation compared as a range does). A range of expires_at
 * alone would read the rows: that index has no operation (EXPLAIN: test/record-census.test.ts).
 * The census's branches add up their hours per interval and operation before the union: its
 * rows (an interval's hours, each a row) are what the outer grouping would otherwise read from a
 * temporary table 2 KB a row (two VARCHAR(255) columns): 1M records, 10k rows, 23 → 17 ms.
 */
export function recordCensusSql(intervals: readonly ExpiryInterval[], f: CensusCountOptions = {}): Statement {
  const p = new Params(MYSQL);
  const op = f.operation;
  const { whole, pieces: allPieces, uses } = coverIntervals(intervals, f.now);
  const bound = (ms: number) => `CAST(${p.add(Number.isFinite(ms) ? new Date(ms) : null)} AS DATETIME(6))`;
  const ivRows = whole.length
    ? whole.map((w) => `SELECT ${p.add(w.name)} AS name, ${bound(w.lo)} AS lo, ${bound(w.hi)} AS hi, ${w.failed ? 1 : 0} AS failed`).join(" UNION ALL ")
    : `SELECT NULL AS name, NULL AS lo, NULL AS hi, 0 AS failed FROM DUAL WHERE FALSE`;
  const inIv = (col: string) => `(iv.lo IS NULL OR ${col} >= iv.lo) AND (iv.hi IS NULL OR ${col} < iv.hi)`;
  const branches = [
    `SELECT iv.name AS name, c.operation AS operation, SUM(IF(iv.failed, c.failed, c.count)) AS n FROM iv JOIN record_census c ON ${inIv("c.expires_hour")}${
      op !== undefined ? ` AND c.operation = ${p.add(op)}` : ""
    } GROUP BY iv.name, c.operation`,
    `SELECT iv.name, k.operation, IF(iv.failed, k.f, k.n) FROM (
        ${correctionSql(TOUCHED_SQL)}
      ) k JOIN (SELECT iv.name, iv.lo, iv.hi, iv.failed FROM iv${
        f.failed ? ` UNION ALL SELECT ${p.add("status:failed")}, NULL, NULL, 1` : ""
      }) iv ON ${inIv("k.expires_at")}${op !== undefined ? ` WHERE k.operation = ${p.add(op)}` : ""}`,
  ];
  if (f.failed) {
    branches.push(
      `SELECT ${p.add("status:failed")}, c.operation, SUM(c.failed) FROM record_census c WHERE c.failed > 0${op !== undefined ? ` AND c.operation = ${p.add(op)}` : ""} GROUP BY c.operation`,
    );
  }
  if (allPieces.some((pc) => !Number.isFinite(pc.lo) || !Number.isFinite(pc.hi))) throw new Error("recordCensusSql: a piece of an hour has an open end");
  // The failed records' pieces read the rows too, for their status (less than an hour's
  // records), still by their range of (operation, expires_at): with the status in the condition
  // MariaDB would take the status index and read every failed record of the operation (1M records:
  // 36 s instead of 0.1 s).
  const onlyFailed = (failed: boolean) => (failed ? ` AND r.status = 'failed'` : "");
  const records = (failed: boolean) => `idempotency_records r${failed ? " FORCE INDEX (idempotency_records_operation_expires_at_idx)" : ""}`;
  // The pieces' counts (coverIntervals: each piece read once) are a derived table read once
  // (MariaDB would compute a CTE again at each reference), joined to the intervals' uses of them
  // by the piece's number, each with its sign; the failed pieces and the others apart.
  for (const failed of [false, true]) {
    const pieces = allPieces.map((pc, i) => ({ ...pc, i })).filter((pc) => pc.failed === failed);
    if (!pieces.length) continue;
    let counts: string;
    if (op !== undefined) {
      counts = pieces
        .map(
          (pc) => `SELECT ${pc.i} AS i, r.operation, COUNT(*) AS n FROM ${records(failed)}
          WHERE r.operation = ${p.add(op)} AND r.expires_at >= ${p.add(new Date(pc.lo))} AND r.expires_at < ${p.add(new Date(pc.hi))}${onlyFailed(failed)} GROUP BY r.operation`,
        )
        .join("\n          UNION ALL\n          ");
    } else {
      // Every operation's range of (operation, expires_at), index only: the operations by a loose
      // scan of that index (one entry per operation), each piece a range per operation. The
      // operation is compared as a range (>= and <=), not by equality: equality would make
      // MariaDB read the operation's whole part of the index (ref) and filter; a range lets it
      // choose a range of both columns per row of the pieces ("range checked for each record").
      const pieceRows = pieces.map((pc) => `SELECT ${pc.i} AS i, ${bound(pc.lo)} AS lo, ${bound(pc.hi)} AS hi`).join(" UNION ALL ");
      counts = `SELECT STRAIGHT_JOIN pp.i, o.operation, COUNT(*) AS n
           FROM (SELECT DISTINCT ops.operation FROM idempotency_records ops) o
           JOIN (${pieceRows}) pp
           JOIN ${records(failed)}
             ON r.operation >= o.operation AND r.operation <= o.operation AND r.expires_at >= pp.lo AND r.expires_at < pp.hi${onlyFailed(failed)}
          GROUP BY pp.i, o.operation`;
    }
    const edgeRows = uses
      .filter((u) => allPieces[u.piece].failed === failed)
      .map((u) => `SELECT ${p.add(u.name)} AS name, ${u.piece} AS i, ${u.sign} AS sign`)
      .join(" UNION ALL ");
    branches.push(`SELECT pe.name, pc.operation, pe.sign * pc.n FROM (
          ${counts}
        ) pc JOIN (${edgeRows}) pe ON pe.i = pc.i`);
  }
  const text = `WITH iv AS (${ivRows})
    SELECT x.name, x.operation, CAST(SUM(x.n) AS SIGNED) AS n FROM (
      ${branches.join("\n      UNION ALL\n      ")}
    ) x GROUP BY x.name, x.operation HAVING SUM(x.n) > 0`;
  return { text, values: p.values };
}

/**
 * The records a refresh batch looks at: of the events in (?, ?] and of the gaps, the records in
 * (?, ?], and with `recentlyFailed` (a refresh's last batch, which moves the time they are read
 * from) those that became failed lately.
 */
const refreshedIdsSql = (recentlyFailed: boolean) =>
  [
    `SELECT e.record_id AS id FROM idempotency_events e WHERE e.id > ? AND e.id <= ? AND e.record_id IS NOT NULL`,
    `SELECT e.record_id FROM rollup_gaps g JOIN idempotency_events e ON e.id = g.event_id WHERE e.record_id IS NOT NULL`,
    `SELECT r.id FROM idempotency_records r WHERE r.id > ? AND r.id <= ?`,
    ...(recentlyFailed ? [RECENTLY_FAILED_SQL] : []),
  ].join("\n         UNION\n         ");

/**
 * The sweep's slice: the record ids in [?, ?), and the members in the same id range
 * (records gone since). Excludes the touched records (a refresh is about to apply them;
 * they are not departures). Parameters: from, end, from, end.
 */
const SWEEP_IDS_SQL = `SELECT s.id FROM (
      SELECT r.id FROM idempotency_records r WHERE r.id >= ? AND r.id < ?
      UNION
      SELECT m.record_id FROM record_census_members m WHERE m.record_id >= ? AND m.record_id < ?
    ) s WHERE s.id NOT IN (SELECT t.id FROM (${TOUCHED_SQL}) t WHERE t.id IS NOT NULL)`;

/** A JSON array of ids as rows of `id` (one parameter, whatever the length). */
const JSON_IDS_SQL = `SELECT j.id FROM JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$')) j`;

/** What the census saw writers do outside the protocol, newest first (the overview). */
export const DEPARTURES_SQL = `SELECT kind, records, first_seen_at AS "firstSeenAt", last_seen_at AS "lastSeenAt" FROM census_departures WHERE records > 0 ORDER BY last_seen_at DESC`;

/** Per operation-hour: the census plus the correction for touched records vs a plain count over the records (all, and failed). */
const CENSUS_DRIFT_SQL = `SELECT x.operation, x.expires_hour, CAST(SUM(x.had) AS SIGNED) AS had, CAST(SUM(x.should) AS SIGNED) AS should,
         CAST(SUM(x.had_failed) AS SIGNED) AS had_failed, CAST(SUM(x.should_failed) AS SIGNED) AS should_failed FROM (
    SELECT r.operation, ${CENSUS_HOUR_SQL("r.expires_at")} AS expires_hour, 0 AS had, COUNT(*) AS should, 0 AS had_failed, SUM(r.status = 'failed') AS should_failed
      FROM idempotency_records r GROUP BY r.operation, expires_hour
    UNION ALL
    SELECT c.operation, c.expires_hour, c.count, 0, c.failed, 0 FROM record_census c
    UNION ALL
    SELECT k.operation, ${CENSUS_HOUR_SQL("k.expires_at")}, k.n, 0, k.f, 0 FROM (${correctionSql(TOUCHED_SQL)}) k
  ) x GROUP BY x.operation, x.expires_hour HAVING SUM(x.had) <> SUM(x.should) OR SUM(x.had_failed) <> SUM(x.should_failed)
  ORDER BY x.operation, x.expires_hour`;

/** The records whose member differs from them (not counted, gone, moved, failed or not), touched ones excepted: what a repair applies. */
const MEMBER_DRIFT_SQL = `SELECT d.id FROM (
    SELECT r.id FROM idempotency_records r LEFT JOIN record_census_members m ON m.record_id = r.id
     WHERE m.record_id IS NULL OR r.operation <> m.operation OR ${CENSUS_HOUR_SQL("r.expires_at")} <> m.expires_hour
        OR (r.status = 'failed') <> m.failed
    UNION ALL
    SELECT m.record_id FROM record_census_members m LEFT JOIN idempotency_records r ON r.id = m.record_id WHERE r.id IS NULL
  ) d WHERE d.id NOT IN (SELECT t.id FROM (${TOUCHED_SQL}) t WHERE t.id IS NOT NULL)`;

/** The census against the members, per operation-hour (a census row edited by hand). */
const AGGREGATE_DRIFT_SQL = `SELECT x.operation, x.expires_hour, CAST(SUM(x.had) AS SIGNED) AS had, CAST(SUM(x.should) AS SIGNED) AS should,
         CAST(SUM(x.had_failed) AS SIGNED) AS had_failed, CAST(SUM(x.should_failed) AS SIGNED) AS should_failed FROM (
    SELECT m.operation, m.expires_hour, 0 AS had, COUNT(*) AS should, 0 AS had_failed, SUM(m.failed) AS should_failed
      FROM record_census_members m GROUP BY m.operation, m.expires_hour
    UNION ALL
    SELECT c.operation, c.expires_hour, c.count, 0, c.failed, 0 FROM record_census c
  ) x GROUP BY x.operation, x.expires_hour HAVING SUM(x.had) <> SUM(x.should) OR SUM(x.had_failed) <> SUM(x.should_failed)`;

/** How a touched record differs from its member (c… where it is now, m… where it is counted; null: none; f: failed, 0 or 1). */
interface ChangedRow {
  id: bigint;
  cop: string | null;
  ch: Date | null;
  cf: number | bigint | null;
  mop: string | null;
  mh: Date | null;
  mf: number | bigint | null;
}

/** A census row's change (or, read back, its value): all records and the failed ones. */
interface CensusDelta {
  operation: string;
  hour: Date;
  n: bigint;
  f: bigint;
}

/** Record ids a census statement names at most (a purge batch is up to 50,000; MySQL takes 65,535 parameters). */
const PURGED_PER_STATEMENT = 10_000;

const hourKey = (operation: string, hour: Date) => JSON.stringify([operation, hour.getTime()]);

export function mysqlCensusStore(ex: SqlExecutor): CensusStore {
  /** The census rows of `keys` (operation, hour), read by primary key under the writers' lock. */
  async function censusRows(keys: readonly { operation: string; hour: Date }[]): Promise<Map<string, { n: bigint; f: bigint }>> {
    const out = new Map<string, { n: bigint; f: bigint }>();
    for (let i = 0; i < keys.length; i += 5000) {
      const slice = keys.slice(i, i + 5000).map((k) => ({ o: k.operation, h: k.hour.toISOString().replace("T", " ").replace("Z", "") }));
      const rows = await ex.query<{ operation: string; expires_hour: Date; count: bigint; failed: bigint }>(
        `SELECT STRAIGHT_JOIN c.operation, c.expires_hour, c.count, c.failed
           FROM JSON_TABLE(?, '$[*]' COLUMNS (o VARCHAR(255) PATH '$.o', h DATETIME(6) PATH '$.h')) d
           JOIN record_census c ON c.operation = d.o AND c.expires_hour = d.h`,
        [JSON.stringify(slice)],
      );
      for (const r of rows) out.set(hourKey(r.operation, r.expires_hour), { n: BigInt(r.count), f: BigInt(r.failed) });
    }
    return out;
  }

  /** Sets census rows to `counts` (absolute values: operation, hour, count, failed), making the missing ones. */
  async function putCensus(counts: readonly (readonly [string, Date, bigint, bigint])[]) {
    await inSlices(counts, ROWS_PER_INSERT, (slice) => {
      const p = new Params(MYSQL);
      return ex.query(
        `INSERT INTO record_census (operation, expires_hour, count, failed) VALUES ${valuesSql(p, slice)}
         ON DUPLICATE KEY UPDATE count = VALUES(count), failed = VALUES(failed)`,
        p.values,
      );
    });
  }

  /**
   * Moves census rows by `delta` (never below 0); a missing row is made when `makeMissing`
   * says so for its delta (PostgreSQL's statements: an apply makes rows for positive deltas only,
   * a correction for any, at max(delta, 0)).
   */
  async function moveCensus(delta: Map<string, CensusDelta>, makeMissing: (n: bigint, f: bigint) => boolean) {
    const keys = [...delta.values()].map((d) => ({ operation: d.operation, hour: d.hour }));
    const have = await censusRows(keys);
    const atLeast0 = (n: bigint) => (n > 0n ? n : 0n);
    const put: [string, Date, bigint, bigint][] = [];
    for (const [key, d] of delta) {
      const c = have.get(key);
      if (c !== undefined) put.push([d.operation, d.hour, atLeast0(c.n + d.n), atLeast0(c.f + d.f)]);
      else if (makeMissing(d.n, d.f)) put.push([d.operation, d.hour, atLeast0(d.n), atLeast0(d.f)]);
    }
    await putCensus(put);
  }

  /**
   * Makes the members of the records `ids` (a subquery of id, read in the caller's snapshot
   * by a plain SELECT) equal to the records as they are — counted where they are now, taken
   * out if they are gone — and the census with them. Returns what changed.
   */
  async function apply(ids: string, values: unknown[]): Promise<AppliedChanges> {
    const changed = await ex.query<ChangedRow>(
      `SELECT t.id, r.operation AS cop, ${CENSUS_HOUR_SQL("r.expires_at")} AS ch, r.status = 'failed' AS cf,
              m.operation AS mop, m.expires_hour AS mh, m.failed AS mf
         FROM (${ids}) t
         LEFT JOIN idempotency_records r ON r.id = t.id
         LEFT JOIN record_census_members m ON m.record_id = t.id
        WHERE (r.id IS NOT NULL OR m.record_id IS NOT NULL)
          AND (r.id IS NULL OR m.record_id IS NULL OR r.operation <> m.operation OR ${CENSUS_HOUR_SQL("r.expires_at")} <> m.expires_hour
               OR (r.status = 'failed') <> m.failed)`,
      values,
    );
    const delta = new Map<string, CensusDelta>();
    const add = (operation: string, hour: Date, n: bigint, f: bigint) => {
      const key = hourKey(operation, hour);
      const d = delta.get(key);
      if (d) {
        d.n += n;
        d.f += f;
      } else delta.set(key, { operation, hour, n, f });
    };
    const failed = (v: number | bigint | null) => Number(v) === 1;
    for (const c of changed) {
      if (c.cop !== null) add(c.cop, c.ch!, 1n, failed(c.cf) ? 1n : 0n);
      if (c.mop !== null) add(c.mop, c.mh!, -1n, failed(c.mf) ? -1n : 0n);
    }
    for (const [key, d] of delta) if (d.n === 0n && d.f === 0n) delta.delete(key);
    await moveCensus(delta, (n) => n > 0n);
    const put = changed.filter((c) => c.cop !== null);
    await inSlices(put, ROWS_PER_INSERT, (slice) => {
      const p = new Params(MYSQL);
      return ex.query(
        `INSERT INTO record_census_members (record_id, operation, expires_hour, failed) VALUES ${valuesSql(
          p,
          slice.map((c) => [c.id, c.cop, c.ch, failed(c.cf)]),
        )} ON DUPLICATE KEY UPDATE operation = VALUES(operation), expires_hour = VALUES(expires_hour), failed = VALUES(failed)`,
        p.values,
      );
    });
    await deleteMembers(changed.filter((c) => c.cop === null).map((c) => c.id));
    return {
      added: changed.filter((c) => c.mop === null).length,
      moved: changed.filter((c) => c.mop !== null && c.cop !== null && (c.cop !== c.mop || c.ch!.getTime() !== c.mh!.getTime())).length,
      gone: changed.filter((c) => c.cop === null).length,
      failedChanged: changed.filter((c) => c.mop !== null && c.cop !== null && failed(c.cf) !== failed(c.mf)).length,
    };
  }

  /** Deletes the members of `ids` (primary-key ranges of a constant list). */
  const deleteMembers = (ids: readonly bigint[]) =>
    inSlices(ids, PURGED_PER_STATEMENT, (slice) => {
      const p = new Params(MYSQL);
      return ex.query(`DELETE FROM record_census_members WHERE record_id IN (${p.list(slice)})`, p.values);
    });

  return {
    async countByExpiry(intervals, f) {
      const q = recordCensusSql(intervals, f);
      return ex.query<{ name: string; operation: string; n: bigint }>(q.text, q.values);
    },

    applyTouched: (events, records, recentlyFailed) => apply(refreshedIdsSql(recentlyFailed), [events.from, events.upTo, records.from, records.upTo]),
    async sweepSlice(from, limit) {
      const [slice] = await ex.query<{ last: bigint | null; n: bigint }>(
        `SELECT MAX(s.id) AS last, COUNT(*) AS n FROM (SELECT id FROM idempotency_records WHERE id >= ? ORDER BY id LIMIT ?) s`,
        [from, limit],
      );
      return slice;
    },
    applySwept: (from, end) => apply(SWEEP_IDS_SQL, [from, end, from, end]),
    async applyRecords(ids) {
      const changes = { added: 0, moved: 0, gone: 0, failedChanged: 0 };
      const unique = [...new Set(ids.map(String))];
      for (let i = 0; i < unique.length; i += 50_000) {
        const c = await apply(JSON_IDS_SQL, [`[${unique.slice(i, i + 50_000).join(",")}]`]);
        changes.added += c.added;
        changes.moved += c.moved;
        changes.gone += c.gone;
        changes.failedChanged += c.failedChanged;
      }
      return changes;
    },
    async addDepartures(seen) {
      const p = new Params(MYSQL);
      const rows = seen.map(({ kind, n }) => `(${p.add(kind)}, ${p.add(n)}, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))`).join(", ");
      await ex.query(
        `INSERT INTO census_departures (kind, records, first_seen_at, last_seen_at) VALUES ${rows}
         ON DUPLICATE KEY UPDATE records = records + VALUES(records), last_seen_at = UTC_TIMESTAMP(6)`,
        p.values,
      );
    },

    censusDrift: () => ex.query<CensusDriftRow>(CENSUS_DRIFT_SQL),
    memberDrift: async () => (await ex.query<{ id: bigint }>(MEMBER_DRIFT_SQL)).map((r) => BigInt(r.id)),
    aggregateDrift: () => ex.query<CensusDriftRow>(AGGREGATE_DRIFT_SQL),
    async correctAggregates(drift) {
      const delta = new Map<string, CensusDelta>();
      for (const d of drift)
        delta.set(hourKey(d.operation, d.expiresHour), { operation: d.operation, hour: d.expiresHour, n: BigInt(d.delta), f: BigInt(d.failedDelta) });
      await moveCensus(delta, () => true);
    },
    async rewrite() {
      await ex.exec(`DELETE FROM record_census_members; DELETE FROM record_census;`);
      // Every record visible in the writer's snapshot, by primary key in slices (a plain read:
      // INSERT … SELECT would read the latest rows and lock the services' table).
      for (let after = -1n; ;) {
        const rows = await ex.query<{ id: bigint; operation: string; h: Date; f: number | bigint }>(
          `SELECT id, operation, ${CENSUS_HOUR_SQL("expires_at")} AS h, status = 'failed' AS f FROM idempotency_records WHERE id > ? ORDER BY id LIMIT 5000`,
          [after],
        );
        if (!rows.length) break;
        await inSlices(rows, ROWS_PER_INSERT, (slice) => {
          const p = new Params(MYSQL);
          return ex.query(
            `INSERT INTO record_census_members (record_id, operation, expires_hour, failed) VALUES ${valuesSql(
              p,
              slice.map((r) => [r.id, r.operation, r.h, Number(r.f) === 1]),
            )}`,
            p.values,
          );
        });
        after = rows[rows.length - 1].id;
      }
      // The console's own tables from here on.
      await ex.exec(
        `INSERT INTO record_census (operation, expires_hour, count, failed)
           SELECT operation, expires_hour, COUNT(*), SUM(failed) FROM record_census_members GROUP BY operation, expires_hour;
         INSERT INTO rollup_state (name, watermark) SELECT '${RECORDS_STATE}', COALESCE(MAX(record_id), 0) FROM record_census_members
           ON DUPLICATE KEY UPDATE watermark = VALUES(watermark), updated_at = UTC_TIMESTAMP(6);`,
      );
    },

    async takeOutPurged(ids) {
      // Under the writers' lock, so the members joined are the latest (no other writer of them).
      // Two statements a slice, whatever the number of hours touched: the hours lose their
      // members' counts in one UPDATE … JOIN, then the members go.
      await inSlices([...new Set(ids.map(String))], PURGED_PER_STATEMENT, async (slice) => {
        const p = new Params(MYSQL);
        await ex.query(
          `UPDATE record_census c
             JOIN (SELECT operation, expires_hour, COUNT(*) AS n, SUM(failed) AS f FROM record_census_members
                    WHERE record_id IN (${p.list(slice)}) GROUP BY operation, expires_hour) g
               ON c.operation = g.operation AND c.expires_hour = g.expires_hour
              SET c.count = GREATEST(c.count - g.n, 0), c.failed = GREATEST(c.failed - g.f, 0)`,
          p.values,
        );
        await deleteMembers(slice.map(BigInt));
      });
    },
  };
}
