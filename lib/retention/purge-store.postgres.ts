import { Params, type Statement } from "../db/params";
import type { SqlExecutor } from "../db/sql";
import {
  eventEligibleSql,
  eventProtections,
  eventUnprotectedSql,
  eventWindowSql,
  recordEligibleSql,
  recordProtections,
  recordUnprotectedSql,
  recordWindowSql,
} from "./eligibility.postgres";
import type { EventProtection, RecordProtection } from "./eligibility";
import { takeOutPurgedCtes } from "../stats/census-store.postgres";
import type { PurgeStore, SampleRecord, WindowCounts } from "./purge-store";
import type { PolicyRule } from "./rules";

/** Every eligible record id, ascending (for tests and small tables). */
export function eligibleRecordIdsSql(rules: readonly PolicyRule[], asOf: Date): Statement {
  const p = new Params();
  return { text: `SELECT r.id FROM idempotency_records r WHERE ${recordEligibleSql(rules, asOf, p)} ORDER BY r.id`, values: p.values };
}

export function eligibleEventIdsSql(rules: readonly PolicyRule[], asOf: Date): Statement {
  const p = new Params();
  return { text: `SELECT e.id FROM idempotency_events e WHERE ${eventEligibleSql(rules, asOf, p)} ORDER BY e.id`, values: p.values };
}

/**
 * What every batch statement runs under (SET LOCAL: its transaction only). A batch reads an id
 * window in id order and stops at its LIMIT; the planner, which expects few eligible rows,
 * otherwise ANDs bitmaps of the window and of the expiry (or status) index — and that bitmap
 * reads every record past the cutoff, the whole backlog, in every batch (270 ms a batch at 200k
 * records, growing with the backlog; 32 ms walking the primary key).
 */
export const BATCH_PLANS = `SET LOCAL enable_bitmapscan = off`;

/** The records batch's candidate SELECT … FOR UPDATE (exported for EXPLAIN in tests and the bench). */
export function recordCandidatesSql(rules: readonly PolicyRule[], asOf: Date, lo: bigint, hi: bigint, batchSize: number): Statement {
  const p = new Params();
  const from = p.bigint(lo);
  const upTo = p.bigint(hi);
  return {
    text: `SELECT r.id FROM idempotency_records r
            WHERE r.id > ${from} AND r.id <= ${upTo} AND ${recordEligibleSql(rules, asOf, p, "r")}
            ORDER BY r.id LIMIT ${Math.floor(batchSize)} FOR UPDATE OF r`,
    values: p.values,
  };
}

/**
 * The events batch's DELETE (append-only rows: what the subquery selects is what is deleted, in
 * one snapshot). The ids go in as an array, so the DELETE probes the primary key for each: as
 * `x.id IN (subquery)` the planner may hash the ids and scan the whole table for them (it did at
 * 600k events: 410 ms a batch instead of 45). It answers with the count and the highest id, not
 * the ids: 50,000 ids parsed in the console's process cost more than deleting them.
 */
export function eventDeleteSql(rules: readonly PolicyRule[], asOf: Date, lo: bigint, hi: bigint, batchSize: number): Statement {
  const p = new Params();
  const from = p.bigint(lo);
  const upTo = p.bigint(hi);
  return {
    text: `WITH deleted AS (
             DELETE FROM idempotency_events x WHERE x.id = ANY (ARRAY(
               SELECT e.id FROM idempotency_events e
                WHERE e.id > ${from} AND e.id <= ${upTo} AND ${eventEligibleSql(rules, asOf, p, "e")}
                ORDER BY e.id LIMIT ${Math.floor(batchSize)}))
             RETURNING x.id)
           SELECT count(*)::int AS deleted, max(id) AS last FROM deleted`,
    values: p.values,
  };
}

export function postgresPurgeStore(ex: SqlExecutor): PurgeStore {
  return {
    async recordWindowCounts(rules, only, asOf) {
      const rp = new Params();
      const [row] = await ex.query<WindowCounts<RecordProtection>>(
        `SELECT count(*)::bigint AS past, count(*) FILTER (WHERE ${recordUnprotectedSql("r")})::bigint AS eligible,
            ${recordProtections()
              .map(([reason, sql]) => `count(*) FILTER (WHERE ${sql("r")})::bigint AS "${reason}"`)
              .join(", ")}
       FROM idempotency_records r WHERE ${recordWindowSql(rules, asOf, rp, "r", only)}`,
        rp.values,
      );
      return row;
    },
    async eventWindowCounts(rules, only, asOf) {
      const ep = new Params();
      const [row] = await ex.query<WindowCounts<EventProtection>>(
        `SELECT count(*)::bigint AS past, count(*) FILTER (WHERE ${eventUnprotectedSql("e")})::bigint AS eligible,
            ${eventProtections()
              .map(([reason, sql]) => `count(*) FILTER (WHERE ${sql("e")})::bigint AS "${reason}"`)
              .join(", ")}
       FROM idempotency_events e WHERE ${eventWindowSql(rules, asOf, ep, "e", only)}`,
        ep.values,
      );
      return row;
    },
    async sampleRecords(rules, only, asOf, limit) {
      const sp = new Params();
      return ex.query<SampleRecord>(
        `SELECT r.id, r.scope, r.operation, r.status, r.expires_at AS "expiresAt" FROM idempotency_records r
            WHERE ${recordEligibleSql(rules, asOf, sp, "r", only)} ORDER BY r.id LIMIT ${Math.floor(limit)}`,
        sp.values,
      );
    },
    async countEligibleRecords(rules, asOf) {
      const rp = new Params();
      const [r] = await ex.query<{ n: bigint }>(
        `SELECT count(*)::bigint AS n FROM idempotency_records r WHERE ${recordEligibleSql(rules, asOf, rp)}`,
        rp.values,
      );
      return r.n;
    },
    async countEligibleEvents(rules, asOf) {
      const ep = new Params();
      const [e] = await ex.query<{ n: bigint }>(`SELECT count(*)::bigint AS n FROM idempotency_events e WHERE ${eventEligibleSql(rules, asOf, ep)}`, ep.values);
      return e.n;
    },

    async maxRecordId() {
      const rows = await ex.query<{ m: bigint | null }>(`SELECT max(id) AS m FROM idempotency_records`);
      return rows[0]?.m ?? null;
    },
    async maxEventId() {
      const rows = await ex.query<{ m: bigint | null }>(`
          SELECT LEAST(COALESCE((SELECT max(id) FROM idempotency_events), 0),
                       COALESCE((SELECT watermark FROM rollup_state WHERE name = 'events'), 0)) AS m`);
      return rows[0]?.m ?? null;
    },
    async withBatchSettings(fn) {
      await ex.exec(`SET LOCAL lock_timeout = '5s'`);
      await ex.exec(BATCH_PLANS);
      return fn();
    },
    async lockEligibleRecords(rules, asOf, lo, hi, batchSize) {
      const q = recordCandidatesSql(rules, asOf, lo, hi, batchSize);
      const locked = await ex.query<{ id: bigint }>(q.text, q.values);
      return locked.map((x) => BigInt(x.id));
    },
    async deleteEligibleRecords(rules, asOf, ids) {
      // A second statement, so its snapshot is taken after the row locks: THE condition again. The
      // census loses them in the same statement (nothing comes back to the console but the count).
      const d = new Params();
      const list = `${d.add(`{${ids.join(",")}}`)}::bigint[]`;
      const [row] = await ex.query<{ deleted: number }>(
        `WITH purged AS (
           DELETE FROM idempotency_records r WHERE r.id = ANY (${list}) AND ${recordEligibleSql(rules, asOf, d, "r")} RETURNING r.id
         ), ${takeOutPurgedCtes("purged")}
         SELECT count(*)::int AS deleted FROM purged`,
        d.values,
      );
      return Number(row.deleted);
    },
    async deleteEligibleEvents(rules, asOf, lo, hi, batchSize) {
      const q = eventDeleteSql(rules, asOf, lo, hi, batchSize);
      const [row] = await ex.query<{ deleted: number; last: bigint | null }>(q.text, q.values);
      return { candidates: Number(row.deleted), deleted: Number(row.deleted), last: row.last === null ? null : BigInt(row.last) };
    },
  };
}
