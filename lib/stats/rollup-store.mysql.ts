import { MYSQL } from "../db/dialect";
import { sessionLock, sessionUnlock, transactionLock } from "../db/locks";
import { Params, type Statement } from "../db/params";
import type { SqlExecutor } from "../db/sql";
import { countPlan, rollupSource, type CountOptions, type CountPlan, type EventRangeFilter, type Span } from "./count-plan";
import type { RollupStore } from "./rollup-store";

/**
 * The rollups' statements on MySQL / MariaDB (ADR 0012). What they keep and why:
 * lib/stats/rollups.ts. What differs from PostgreSQL, and why it holds the same guarantees:
 *
 * - The writers' lock. A session GET_LOCK does not exclude a transaction lock of the same
 *   name on MySQL, and the purge's census step takes the transaction lock (a row of
 *   console_locks) inside its batch. So every writer transaction takes that row lock as its
 *   first statement (markWriter), after `SET TRANSACTION ISOLATION LEVEL REPEATABLE READ;
 *   START TRANSACTION` (dialect.beginRepeatableRead): InnoDB takes a REPEATABLE READ
 *   snapshot at the first consistent read, not at a locking read, so the snapshot follows
 *   the previous writer's commit, as PostgreSQL's does behind its session lock. The session
 *   lock (lockWriter) is taken too: refreshers queue on it without a lock-wait timeout.
 * - One snapshot for counts, gaps and marks. InnoDB's `INSERT … SELECT`, `UPDATE … JOIN`,
 *   `DELETE … JOIN` and locking reads read the latest committed rows, not the snapshot, and
 *   take next-key locks that stall the services' INSERTs. So the services' tables are read
 *   only by plain SELECTs in the snapshot, into the process; the console's tables are
 *   written with the values read (multi-row VALUES), by primary key. The gaps a refresh
 *   forgets are the ones its own snapshot sees filled (read again in the same snapshot),
 *   never what has committed since.
 * - The guard's flag is a session variable (no transaction-local setting): set by
 *   markWriter, cleared by unmarkWriter (a pooled connection keeps it otherwise).
 * - UTC buckets are epoch arithmetic on DATETIME(6) (no date_bin; UNIX_TIMESTAMP depends on
 *   the session's zone): see bin().
 */

/** rollup_state row: every event with an id at or below it is in the rollups (their watermark), or a gap. */
const STATE = "events";
/** rollup_state row: every record with an id at or below it was looked at by a refresh (its high-water mark). */
export const RECORDS_STATE = "records";
/** rollup_state row: where the sweep goes on (watermark = the next record id to re-check). */
const SWEEP_STATE = "census_sweep";
/** rollup_state row: when verifyRecordCensus last ran (updated_at) and how many records it was off by (watermark). */
const CENSUS_VERIFIED = "census_verified";

/** The session variable the guard triggers on the rollups and the census check ('totals' since migration 20261207100000_rollup_totals). */
export const WRITER_FLAG = "SET @idempotency_console_rollup_writer = 'totals'";
export const WRITER_FLAG_OFF = "SET @idempotency_console_rollup_writer = NULL";

const EPOCH = `TIMESTAMP '1970-01-01 00:00:00'`;

/**
 * The start of the UTC bucket of `seconds` (from the epoch) that the DATETIME `column` is in:
 * integer microseconds since the epoch, floored (so times before 1970 bin down too).
 */
export function bin(column: string, seconds: number): string {
  if (!Number.isInteger(seconds) || seconds <= 0) throw new Error(`a bucket of ${seconds} s`);
  return `TIMESTAMPADD(SECOND, FLOOR(TIMESTAMPDIFF(MICROSECOND, ${EPOCH}, ${column}) / ${seconds * 1_000_000}) * ${seconds}, ${EPOCH})`;
}

/** The watermark of rollup_state row `name` (0 when none): a constant subquery, so `id > …` is a primary-key range. */
export const watermarkSql = (name: string) => `(SELECT COALESCE(MAX(s.watermark), 0) FROM rollup_state s WHERE s.name = '${name}')`;

/** Rows per multi-row INSERT (a few hundred KB at most). */
export const ROWS_PER_INSERT = 500;

/** Runs `write` for each slice of `rows` of at most `size`. */
export async function inSlices<T>(rows: readonly T[], size: number, write: (slice: readonly T[]) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < rows.length; i += size) await write(rows.slice(i, i + size));
}

/** `(?, ?, …), (…)` for `rows` of `width` values each, bound in order. */
export function valuesSql(p: Params, rows: readonly (readonly unknown[])[]): string {
  return rows.map((r) => `(${r.map((v) => p.add(v)).join(", ")})`).join(", ");
}

/**
 * Exact event counts in [from, to) by operation and kind — per chart bucket too when
 * `stepSeconds` is given — in one statement (InnoDB reads one statement in one snapshot,
 * in READ COMMITTED too): rollups, watermark and gaps as of one moment. Every bucket bound is
 * a parameter, so each branch is a range of an index; the events above the watermark are a
 * primary-key range (the watermark subquery is constant). Rows: { b (with a step), operation, kind, n }.
 */
export function eventCountsSql(f: EventRangeFilter, opts: CountOptions = {}): Statement & { plan: CountPlan } {
  const plan = countPlan(f, opts);
  return { ...countsSql(plan, f, opts.stepSeconds), plan };
}

/**
 * The statement of eventCountsSql for a plan made already (count-plan.ts). Parameters bind in
 * text order. Without a scope filter the rollups are read from their totals over every scope
 * (event_rollup_totals, ADR 0019). Each branch groups its own rows (by bucket, operation and kind;
 * without a step by operation and kind) and the outer query adds the branches up: a UNION ALL is a
 * derived table MariaDB materializes, 2 KB a row in a memory temporary table (two VARCHAR(255)
 * columns), which went to disk past ~8,000 rows. A tier whose grain is the step groups by its bucket
 * as stored: on the totals' primary key (grain, bucket, operation, kind) that follows the key.
 */
export function countsSql(plan: CountPlan, f: { operation?: string; scope?: string }, step?: number): Statement {
  const p = new Params(MYSQL);
  const filters = (alias: string) => [
    ...(f.operation ? [`${alias}.operation = ${p.add(f.operation)}`] : []),
    ...(f.scope ? [`${alias}.scope = ${p.add(f.scope)}`] : []),
  ];
  const span = (column: string, [lo, hi]: Span) => [
    ...(Number.isFinite(lo) ? [`${column} >= ${p.add(new Date(lo))}`] : []),
    ...(Number.isFinite(hi) ? [`${column} < ${p.add(new Date(hi))}`] : []),
  ];
  const where = (conds: string[]) => (conds.length ? ` WHERE ${conds.join(" AND ")}` : "");
  /** One branch grouped: `time` its rows' time column (`grain` its rollup grain: a bucket of the step is kept as it is), `n` what it adds up. */
  const grouped = (alias: string, time: string, grain: number | null, n: string, from: string) => {
    const b = step === undefined ? null : grain === step ? time : bin(time, step);
    const keys = [...(b ? [b] : []), `${alias}.operation`, `${alias}.kind`];
    return `SELECT ${b ? `${b} AS t, ` : ""}${alias}.operation AS operation, ${alias}.kind AS kind, ${n} AS n FROM ${from} GROUP BY ${keys.join(", ")}`;
  };
  const branches: string[] = [];
  for (const tier of plan.tiers) {
    for (const s of tier.spans) {
      const source = rollupSource(tier.grainSeconds, Boolean(f.scope));
      const grain = source.byGrain ? [`r.grain_seconds = ${tier.grainSeconds}`] : [];
      branches.push(
        grouped("r", "r.bucket", tier.grainSeconds, "SUM(r.count)", `${source.table} r${where([...grain, ...span("r.bucket", s), ...filters("r")])}`),
      );
    }
  }
  if (plan.unrolled) {
    // Inside the rolled-up span: what the rollups do not hold yet.
    branches.push(
      grouped(
        "e",
        "e.occurred_at",
        null,
        "COUNT(*)",
        `idempotency_events e${where([`e.id > ${watermarkSql(STATE)}`, ...span("e.occurred_at", plan.unrolled), ...filters("e")])}`,
      ),
      grouped(
        "e",
        "e.occurred_at",
        null,
        "COUNT(*)",
        `rollup_gaps g JOIN idempotency_events e ON e.id = g.event_id${where([...span("e.occurred_at", plan.unrolled), ...filters("e")])}`,
      ),
    );
  }
  for (const s of plan.raw) {
    branches.push(grouped("e", "e.occurred_at", null, "COUNT(*)", `idempotency_events e${where([...span("e.occurred_at", s), ...filters("e")])}`));
  }
  if (!branches.length) branches.push(`SELECT NULL AS t, NULL AS operation, NULL AS kind, 0 AS n FROM DUAL WHERE FALSE`);
  const src = branches.join("\n        UNION ALL\n        ");
  const text =
    step === undefined
      ? `SELECT operation, kind, CAST(SUM(n) AS SIGNED) AS n FROM (\n        ${src}\n      ) x GROUP BY operation, kind ORDER BY operation, kind`
      : `SELECT x.t AS b, operation, kind, CAST(SUM(n) AS SIGNED) AS n FROM (\n        ${src}\n      ) x GROUP BY x.t, operation, kind`;
  return { text, values: p.values };
}

interface MinuteRow {
  bucket: Date;
  operation: string;
  scope: string;
  kind: string;
  n: bigint;
}

/** The rollups' statements on MySQL / MariaDB (see the top). */
export function mysqlRollupStore(ex: SqlExecutor): RollupStore {
  const setWatermark = (name: string, watermark: bigint) =>
    ex.query(`UPDATE rollup_state SET watermark = ?, updated_at = UTC_TIMESTAMP(6) WHERE name = ?`, [watermark, name]);
  /** Adds `rows` ([key…, count]) to `table`'s counts by primary key. */
  const addCounts = (table: string, columns: string[], rows: unknown[][]) =>
    inSlices(rows, ROWS_PER_INSERT, (slice) => {
      const p = new Params(MYSQL);
      return ex.query(
        `INSERT INTO ${table} (${columns.join(", ")}) VALUES ${valuesSql(p, slice)} ON DUPLICATE KEY UPDATE count = count + VALUES(count)`,
        p.values,
      );
    });
  /** The gaps whose event this transaction's snapshot sees (a plain read: the snapshot, never the latest rows). */
  const filledGaps = async () =>
    (await ex.query<{ id: bigint }>(`SELECT g.event_id AS id FROM rollup_gaps g JOIN idempotency_events e ON e.id = g.event_id`)).map((r) => r.id);
  return {
    async lockWriter() {
      await sessionLock(ex, "rollups");
    },
    async unlockWriter() {
      await sessionUnlock(ex, "rollups");
    },
    async lockWriterForTransaction() {
      await transactionLock(ex, "rollups");
    },
    async markWriter() {
      // The first statement of the writer's transaction: the lock (a locking read: no snapshot yet), then the flag.
      await transactionLock(ex, "rollups");
      await ex.exec(WRITER_FLAG);
    },
    async unmarkWriter() {
      await ex.exec(WRITER_FLAG_OFF);
    },

    async refreshMarks() {
      await ex.query(`INSERT INTO rollup_state (name) VALUES (?), (?) ON DUPLICATE KEY UPDATE name = name`, [STATE, RECORDS_STATE]);
      const state = await ex.query<{ name: string; watermark: bigint }>(`SELECT name, watermark FROM rollup_state WHERE name IN (?, ?)`, [
        STATE,
        RECORDS_STATE,
      ]);
      return { events: state.find((s) => s.name === STATE)!.watermark, records: state.find((s) => s.name === RECORDS_STATE)!.watermark };
    },
    async highestIds() {
      const [{ max, maxRecord }] = await ex.query<{ max: bigint | null; maxRecord: bigint | null }>(
        `SELECT (SELECT MAX(id) FROM idempotency_events) AS max, (SELECT MAX(id) FROM idempotency_records) AS "maxRecord"`,
      );
      return { event: max, record: maxRecord };
    },
    async rollUp(from, upTo, coarseGrains) {
      // The new events and the gaps now visible, per minute, read in the snapshot (a plain SELECT).
      const minutes = await ex.query<MinuteRow>(
        `SELECT ${bin("f.occurred_at", 60)} AS bucket, f.operation, f.scope, f.kind, COUNT(*) AS n FROM (
           SELECT occurred_at, operation, scope, kind FROM idempotency_events WHERE id > ? AND id <= ?
           UNION ALL
           SELECT e.occurred_at, e.operation, e.scope, e.kind FROM rollup_gaps g JOIN idempotency_events e ON e.id = g.event_id
         ) f GROUP BY bucket, f.operation, f.scope, f.kind`,
        [from, upTo],
      );
      await addCounts(
        "event_rollups",
        ["bucket", "operation", "scope", "kind", "count"],
        minutes.map((m) => [m.bucket, m.operation, m.scope, m.kind, m.n]),
      );
      // The coarse tiers: the same minutes re-binned (epoch-aligned, so each minute lies in one bucket of each).
      // The totals over every scope (ADR 0019): every grain, the minute's too, without the scope.
      const tiers = new Map<string, unknown[]>();
      const totals = new Map<string, unknown[]>();
      const add = (into: Map<string, unknown[]>, row: unknown[], n: bigint) => {
        const key = JSON.stringify(row.map((v) => (v instanceof Date ? v.getTime() : v)));
        const have = into.get(key);
        if (have) have[row.length] = (have[row.length] as bigint) + n;
        else into.set(key, [...row, n]);
      };
      for (const g of [60, ...coarseGrains]) {
        const ms = g * 1000;
        for (const m of minutes) {
          const bucket = new Date(Math.floor(m.bucket.getTime() / ms) * ms);
          if (g !== 60) add(tiers, [g, bucket, m.operation, m.scope, m.kind], m.n);
          add(totals, [g, bucket, m.operation, m.kind], m.n);
        }
      }
      await addCounts("event_rollup_tiers", ["grain_seconds", "bucket", "operation", "scope", "kind", "count"], [...tiers.values()]);
      await addCounts("event_rollup_totals", ["grain_seconds", "bucket", "operation", "kind", "count"], [...totals.values()]);
      return minutes.reduce((s, m) => s + Number(m.n), 0);
    },
    async forgetFilledGaps() {
      // The same gaps rollUp counted: the snapshot is the same, and only this transaction writes rollup_gaps.
      await inSlices(await filledGaps(), ROWS_PER_INSERT, (ids) => {
        const p = new Params(MYSQL);
        return ex.query(`DELETE FROM rollup_gaps WHERE event_id IN (${p.list(ids)})`, p.values);
      });
    },
    async noteGaps(from, upTo) {
      // The visible ids of (from, upTo] as runs, in the snapshot; the sentinel upTo + 1 closes the
      // range, so ids after the last visible one are gaps too. (MariaDB's LAG takes no default.)
      const runs = await ex.query<{ prev: bigint; id: bigint }>(
        `SELECT t.prev, t.id FROM (
           SELECT ids.id, COALESCE(LAG(ids.id) OVER (ORDER BY ids.id), CAST(? AS SIGNED)) AS prev FROM (
             SELECT id FROM idempotency_events WHERE id > ? AND id <= ?
             UNION ALL
             SELECT CAST(? AS SIGNED)
           ) ids
         ) t WHERE t.id - t.prev > 1`,
        [from, from, upTo, upTo + 1n],
      );
      const missing: bigint[] = [];
      for (const r of runs) for (let id = BigInt(r.prev) + 1n; id < BigInt(r.id); id++) missing.push(id);
      await inSlices(missing, ROWS_PER_INSERT, (ids) => {
        const p = new Params(MYSQL);
        return ex.query(
          `INSERT INTO rollup_gaps (event_id) VALUES ${valuesSql(
            p,
            ids.map((id) => [id]),
          )} ON DUPLICATE KEY UPDATE event_id = event_id`,
          p.values,
        );
      });
    },
    async forgetGapsOlderThan(seconds) {
      await ex.query(`DELETE FROM rollup_gaps WHERE seen_at < UTC_TIMESTAMP(6) - INTERVAL ? SECOND`, [seconds]);
    },
    async setRefreshMarks(marks, refreshed) {
      if (refreshed) await setWatermark(STATE, marks.events);
      else await ex.query(`UPDATE rollup_state SET watermark = ? WHERE name = ?`, [marks.events, STATE]);
      await setWatermark(RECORDS_STATE, marks.records);
    },
    async gapsOpen() {
      const [{ n }] = await ex.query<{ n: bigint }>(`SELECT COUNT(*) AS n FROM rollup_gaps`);
      return Number(n);
    },

    async sweepMark() {
      await ex.query(`INSERT INTO rollup_state (name) VALUES (?) ON DUPLICATE KEY UPDATE name = name`, [SWEEP_STATE]);
      const [{ watermark }] = await ex.query<{ watermark: bigint }>(`SELECT watermark FROM rollup_state WHERE name = ?`, [SWEEP_STATE]);
      return watermark;
    },
    async setSweepMark(next) {
      await setWatermark(SWEEP_STATE, next);
    },

    async clearRollups() {
      await ex.exec(`DELETE FROM event_rollups; DELETE FROM event_rollup_tiers; DELETE FROM event_rollup_totals; DELETE FROM rollup_gaps;`);
      await ex.query(`INSERT INTO rollup_state (name, watermark) VALUES (?, 0) ON DUPLICATE KEY UPDATE watermark = 0, updated_at = UTC_TIMESTAMP(6)`, [STATE]);
    },
    async noteCensusVerified(driftRecords) {
      await ex.query(
        `INSERT INTO rollup_state (name, watermark, updated_at) VALUES (?, ?, UTC_TIMESTAMP(6))
         ON DUPLICATE KEY UPDATE watermark = VALUES(watermark), updated_at = UTC_TIMESTAMP(6)`,
        [CENSUS_VERIFIED, driftRecords],
      );
    },

    async refreshDue(verifySeconds) {
      const [due] = await ex.query<{ due: number | bigint; verifyDue: number | bigint | null; verifyUnset: number | bigint }>(
        `SELECT COALESCE((SELECT MAX(id) FROM idempotency_events), 0) > ${watermarkSql(STATE)}
                OR COALESCE((SELECT MAX(id) FROM idempotency_records), 0) > ${watermarkSql(RECORDS_STATE)}
                OR EXISTS (SELECT 1 FROM rollup_gaps) AS due,
                ? > 0 AND (SELECT updated_at FROM rollup_state WHERE name = ?) < UTC_TIMESTAMP(6) - INTERVAL ? SECOND AS "verifyDue",
                NOT EXISTS (SELECT 1 FROM rollup_state WHERE name = ?) AS "verifyUnset"`,
        [verifySeconds, CENSUS_VERIFIED, verifySeconds, CENSUS_VERIFIED],
      );
      return { due: Number(due.due) === 1, verifyDue: due.verifyDue === null ? null : Number(due.verifyDue) === 1, verifyUnset: Number(due.verifyUnset) === 1 };
    },
    async startVerifyClock() {
      await ex.query(`INSERT INTO rollup_state (name, watermark) VALUES (?, 0) ON DUPLICATE KEY UPDATE name = name`, [CENSUS_VERIFIED]);
    },

    async eventCounts(plan, f) {
      const q = countsSql(plan, f);
      return ex.query<{ operation: string; kind: string; n: bigint }>(q.text, q.values);
    },
  };
}
