import { MYSQL } from "../db/dialect";
import { Params, type Statement } from "../db/params";
import { execute, type SqlExecutor } from "../db/sql";
import {
  eventEligibleSql,
  eventProtections,
  eventUnprotectedSql,
  eventWindowSql,
  recordEligibleSql,
  recordProtections,
  recordUnprotectedSql,
  recordWindowSql,
} from "./eligibility.mysql";
import type { EventProtection, RecordProtection } from "./eligibility";
import { censusStore } from "../stats/census-store";
import type { PurgeStore, SampleRecord, WindowCounts } from "./purge-store";
import type { PolicyRule } from "./rules";

/**
 * The purge's statements in MySQL / MariaDB (ADR 0012), with THE condition of
 * eligibility.mysql.ts. No RETURNING and no data-modifying CTEs, so a batch is several
 * statements in the batch's transaction (READ COMMITTED: each reads the latest committed rows):
 *
 *   records: the next eligible ids of the window by a plain read (no lock: a row a writer holds
 *   or has just inserted is neither waited for nor locked unless it is a candidate) → those ids
 *   locked by primary key (FOR UPDATE: record locks only, no gap locks in READ COMMITTED, so a
 *   writer's INSERT never waits) → the locked rows' operation and expiry read → DELETE by id
 *   with THE condition again (a compensation, an outbox message or a reconciliation item
 *   committed meanwhile protects the row; one not yet committed waits for the row lock — its
 *   foreign key check — and then finds the row gone) → what is left of them read again: the
 *   deleted rows are the difference.
 *   events (append-only): the candidates counted in the server with the highest of them (up to
 *   50,000 ids that never reach the console), then a DELETE of that id range with THE condition
 *   again — it locks the rows it deletes; no separate lock.
 *
 * A batch's candidates are read by primary key (FORCE INDEX): the window bounds what a batch
 * reads whatever the optimizer makes of THE condition — left to itself, MariaDB walks the
 * legal-hold index (legal_hold = 0, id in order) from its start, which is the whole table for
 * the last windows. The DELETE is held to the primary key the same way (deleteStillEligibleSql).
 */

const byId = (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0);
const ids = (rows: { id: bigint | number }[]) => rows.map((r) => BigInt(r.id));

/** Every eligible record id, ascending (for tests and small tables). */
export function eligibleRecordIdsSql(rules: readonly PolicyRule[], asOf: Date): Statement {
  const p = new Params(MYSQL);
  return { text: `SELECT r.id FROM idempotency_records r WHERE ${recordEligibleSql(rules, asOf, p)} ORDER BY r.id`, values: p.values };
}

export function eligibleEventIdsSql(rules: readonly PolicyRule[], asOf: Date): Statement {
  const p = new Params(MYSQL);
  return { text: `SELECT e.id FROM idempotency_events e WHERE ${eventEligibleSql(rules, asOf, p)} ORDER BY e.id`, values: p.values };
}

/** The records batch's candidates: the next `batchSize` eligible ids in (lo, hi] (exported for EXPLAIN in tests). */
export function recordCandidatesSql(rules: readonly PolicyRule[], asOf: Date, lo: bigint, hi: bigint, batchSize: number): Statement {
  const p = new Params(MYSQL);
  const from = p.bigint(lo);
  const upTo = p.bigint(hi);
  return {
    text: `SELECT r.id FROM idempotency_records r FORCE INDEX (PRIMARY)
            WHERE r.id > ${from} AND r.id <= ${upTo} AND ${recordEligibleSql(rules, asOf, p, "r")}
            ORDER BY r.id LIMIT ${Math.floor(batchSize)}`,
    values: p.values,
  };
}

/** The events batch's candidates, as for records (exported for EXPLAIN in tests). */
export function eventCandidatesSql(rules: readonly PolicyRule[], asOf: Date, lo: bigint, hi: bigint, batchSize: number): Statement {
  const p = new Params(MYSQL);
  const from = p.bigint(lo);
  const upTo = p.bigint(hi);
  return {
    text: `SELECT e.id FROM idempotency_events e FORCE INDEX (PRIMARY)
            WHERE e.id > ${from} AND e.id <= ${upTo} AND ${eventEligibleSql(rules, asOf, p, "e")}
            ORDER BY e.id LIMIT ${Math.floor(batchSize)}`,
    values: p.values,
  };
}

/**
 * The events batch's candidates counted, with the highest of them (null: none): the ids stay in
 * the server. A batch is up to 50,000 events; read into the console and sent back as a list, they
 * were parsed and built on the event loop that serves everything else (exported for EXPLAIN in tests).
 */
export function eventBatchBoundsSql(rules: readonly PolicyRule[], asOf: Date, lo: bigint, hi: bigint, batchSize: number): Statement {
  const c = eventCandidatesSql(rules, asOf, lo, hi, batchSize);
  return { text: `SELECT count(*) AS n, max(c.id) AS last FROM (${c.text}) c`, values: c.values };
}

/**
 * DELETE of the events still eligible with lo < id ≤ last (THE condition again; by primary key, the
 * batch's window and nothing else). Every eligible event of that range was a candidate; one that
 * commits in it meanwhile is a rollup gap (THE condition keeps it), and an event is never updated.
 */
export function deleteEligibleEventsUpToSql(rules: readonly PolicyRule[], asOf: Date, lo: bigint, last: bigint): Statement {
  const p = new Params(MYSQL);
  const from = p.bigint(lo);
  const upTo = p.bigint(last);
  return {
    text: `DELETE target FROM idempotency_events target FORCE INDEX (PRIMARY)
            WHERE target.id > ${from} AND target.id <= ${upTo} AND ${eventEligibleSql(rules, asOf, p, "target")}`,
    values: p.values,
  };
}

/**
 * DELETE of those of the records `list` still eligible (THE condition; exported for EXPLAIN in tests).
 * Spelled as a multi-table DELETE for its FORCE INDEX (PRIMARY): it must visit the candidates and
 * nothing else. Left to itself on a small or freshly grown table, MariaDB may walk the expiry index
 * instead, and then waits for every row it passes that a writer holds — a reservation just inserted
 * (its expiry already past) whose unique-key check waits in turn for a candidate this DELETE removes:
 * a deadlock, with the writer as InnoDB's victim, again on every retry while the DELETE walks on.
 */
export function deleteStillEligibleSql(rules: readonly PolicyRule[], asOf: Date, list: readonly bigint[]): Statement {
  const p = new Params(MYSQL);
  const within = p.list(list);
  return {
    text: `DELETE target FROM idempotency_records target FORCE INDEX (PRIMARY) WHERE target.id IN (${within}) AND ${recordEligibleSql(rules, asOf, p, "target")}`,
    values: p.values,
  };
}

/** Deletes those of the records `candidates` still eligible; the ids it deleted (the candidates minus what is still there). */
async function deleteStillEligible(ex: SqlExecutor, rules: readonly PolicyRule[], asOf: Date, candidates: readonly bigint[]): Promise<Set<bigint>> {
  const d = deleteStillEligibleSql(rules, asOf, candidates);
  const { affectedRows } = await execute(ex, d.text, d.values);
  if (affectedRows === candidates.length) return new Set(candidates);
  const p = new Params(MYSQL);
  const left = new Set(ids(await ex.query<{ id: bigint }>(`SELECT id FROM idempotency_records WHERE id IN (${p.list(candidates)})`, p.values)));
  return new Set(candidates.filter((id) => !left.has(id)));
}

const counted = (n: bigint | number | string | null | undefined) => BigInt(n ?? 0);

function countsRow<Reason extends string>(row: Record<string, bigint | number | string | null>, reasons: readonly Reason[]): WindowCounts<Reason> {
  const out = { past: counted(row.past), eligible: counted(row.eligible) } as WindowCounts<Reason>;
  for (const r of reasons) (out as Record<string, bigint>)[r] = counted(row[r]);
  return out;
}

export function mysqlPurgeStore(ex: SqlExecutor): PurgeStore {
  return {
    async recordWindowCounts(rules, only, asOf) {
      // The select list has no parameters; the window's come after it, in order.
      const rp = new Params(MYSQL);
      const protections = recordProtections();
      const [row] = await ex.query<Record<string, bigint>>(
        `SELECT count(*) AS past, count(CASE WHEN ${recordUnprotectedSql("r")} THEN 1 END) AS eligible,
            ${protections.map(([reason, sql]) => `count(CASE WHEN ${sql("r")} THEN 1 END) AS "${reason}"`).join(", ")}
       FROM idempotency_records r WHERE ${recordWindowSql(rules, asOf, rp, "r", only)}`,
        rp.values,
      );
      return countsRow<RecordProtection>(
        row,
        protections.map(([reason]) => reason),
      );
    },
    async eventWindowCounts(rules, only, asOf) {
      const ep = new Params(MYSQL);
      const protections = eventProtections();
      const [row] = await ex.query<Record<string, bigint>>(
        `SELECT count(*) AS past, count(CASE WHEN ${eventUnprotectedSql("e")} THEN 1 END) AS eligible,
            ${protections.map(([reason, sql]) => `count(CASE WHEN ${sql("e")} THEN 1 END) AS "${reason}"`).join(", ")}
       FROM idempotency_events e WHERE ${eventWindowSql(rules, asOf, ep, "e", only)}`,
        ep.values,
      );
      return countsRow<EventProtection>(
        row,
        protections.map(([reason]) => reason),
      );
    },
    sampleRecords(rules, only, asOf, limit) {
      const sp = new Params(MYSQL);
      return ex.query<SampleRecord>(
        `SELECT r.id, r.scope, r.operation, r.status, r.expires_at AS "expiresAt" FROM idempotency_records r
            WHERE ${recordEligibleSql(rules, asOf, sp, "r", only)} ORDER BY r.id LIMIT ${Math.floor(limit)}`,
        sp.values,
      );
    },
    async countEligibleRecords(rules, asOf) {
      const rp = new Params(MYSQL);
      const [r] = await ex.query<{ n: bigint }>(`SELECT count(*) AS n FROM idempotency_records r WHERE ${recordEligibleSql(rules, asOf, rp)}`, rp.values);
      return counted(r.n);
    },
    async countEligibleEvents(rules, asOf) {
      const ep = new Params(MYSQL);
      const [e] = await ex.query<{ n: bigint }>(`SELECT count(*) AS n FROM idempotency_events e WHERE ${eventEligibleSql(rules, asOf, ep)}`, ep.values);
      return counted(e.n);
    },

    async maxRecordId() {
      const rows = await ex.query<{ m: bigint | null }>(`SELECT max(id) AS m FROM idempotency_records`);
      return rows[0]?.m === null || rows[0]?.m === undefined ? null : BigInt(rows[0].m);
    },
    async maxEventId() {
      const rows = await ex.query<{ m: bigint | null }>(`
          SELECT LEAST(COALESCE((SELECT max(id) FROM idempotency_events), 0),
                       COALESCE((SELECT watermark FROM rollup_state WHERE name = 'events'), 0)) AS m`);
      return rows[0]?.m === null || rows[0]?.m === undefined ? null : BigInt(rows[0].m);
    },
    async withBatchSettings(fn) {
      // No SET LOCAL on MySQL: the session's value is set for the batch and put back after it
      // (the connection goes back to the pool). Row waits only: the batch takes no metadata locks.
      const [{ t }] = await ex.query<{ t: bigint | number }>(`SELECT @@SESSION.innodb_lock_wait_timeout AS t`);
      const before = Math.max(1, Math.floor(Number(t)));
      await ex.exec(`SET SESSION innodb_lock_wait_timeout = 5`);
      try {
        return await fn();
      } finally {
        await ex.exec(`SET SESSION innodb_lock_wait_timeout = ${before}`).catch(() => {});
      }
    },
    async lockEligibleRecords(rules, asOf, lo, hi, batchSize) {
      const q = recordCandidatesSql(rules, asOf, lo, hi, batchSize);
      const candidates = ids(await ex.query<{ id: bigint }>(q.text, q.values));
      if (candidates.length === 0) return [];
      // Record locks on exactly these rows (by primary key); one deleted meanwhile is simply not there.
      const p = new Params(MYSQL);
      await ex.query(`SELECT id FROM idempotency_records WHERE id IN (${p.list(candidates)}) ORDER BY id FOR UPDATE`, p.values);
      return candidates.sort(byId);
    },
    async deleteEligibleRecords(rules, asOf, candidates) {
      if (candidates.length === 0) return 0;
      const deleted = await deleteStillEligible(ex, rules, asOf, candidates);
      if (deleted.size) await censusStore(ex).takeOutPurged([...deleted]);
      return deleted.size;
    },
    async deleteEligibleEvents(rules, asOf, lo, hi, batchSize) {
      const b = eventBatchBoundsSql(rules, asOf, lo, hi, batchSize);
      const [row] = await ex.query<{ n: bigint | number; last: bigint | number | null }>(b.text, b.values);
      const candidates = Number(row?.n ?? 0);
      if (candidates === 0 || row.last === null) return { candidates: 0, deleted: 0, last: null };
      const last = BigInt(row.last);
      const d = deleteEligibleEventsUpToSql(rules, asOf, lo, last);
      const { affectedRows } = await execute(ex, d.text, d.values);
      return { candidates, deleted: affectedRows, last };
    },
  };
}
