import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bulkGenerate } from "@/lib/demo/bulk";
import { recordEligibleSql } from "@/lib/retention/eligibility.postgres";
import * as mysqlEligibility from "@/lib/retention/eligibility.mysql";
import { loadRules, type PolicyRule } from "@/lib/retention/rules";
import { BATCH_PLANS, eventDeleteSql, recordCandidatesSql } from "@/lib/retention/purge-store.postgres";
import * as mysqlPurge from "@/lib/retention/purge-store.mysql";
import { windowFor } from "@/lib/retention/worker";
import { refreshRollups } from "@/lib/stats/rollups";
import { createTestDatabase, usingMysql, usingPostgres, type TestDatabase } from "./helpers/db";
import { MYSQL } from "@/lib/db/dialect";
import { Params } from "@/lib/db/params";
import { fillMysqlExplainDataset } from "./helpers/mysql-explain-dataset";

/**
 * The purge's statements use indexes at a decent size (40,000 records and 120,000 events,
 * after ANALYZE): each batch is a primary-key range of records or events (never a scan of
 * the table), and a per-operation policy's count is a range of
 * idempotency_records_operation_expires_at_idx. Plans are the server's own: PostgreSQL's
 * EXPLAIN (FORMAT JSON) on a PostgreSQL server, MySQL's EXPLAIN on a MySQL / MariaDB server
 * (the same guarantee for its statements: purge-store.mysql.ts); nothing to explain on the
 * embedded database.
 */

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Index Name"?: string;
  "Index Cond"?: string;
  Plans?: PlanNode[];
}
const nodes = (p: PlanNode): PlanNode[] => [p, ...(p.Plans ?? []).flatMap(nodes)];

let db: TestDatabase;
let rules: PolicyRule[];
const now = new Date();

beforeAll(async () => {
  if (usingMysql) return mysqlDataset();
  if (!usingPostgres) return;
  db = await createTestDatabase();
  await bulkGenerate(db.sql, { records: 40_000, seed: 5, days: 60, now, batchSize: 10_000 });
  await db.withSession((s) => refreshRollups(s));
  await db.sql.query(`INSERT INTO retention_policies (operation, keep_records_days, keep_events_days) VALUES (NULL, 7, 30), ('capture_payment', 14, 30)`);
  await db.sql.exec("ANALYZE");
  rules = await loadRules(db.sql);
}, 300_000);

afterAll(() => db?.drop());

async function plan(q: { text: string; values: unknown[] }): Promise<PlanNode[]> {
  const [row] = await db.sql.query<{ "QUERY PLAN": { Plan: PlanNode }[] }>(`EXPLAIN (FORMAT JSON) ${q.text}`, q.values);
  return nodes(row["QUERY PLAN"][0].Plan);
}

/** The plan a batch gets: in a transaction under the batch's settings (purge-store.postgres.ts BATCH_PLANS). */
async function batchPlan(q: { text: string; values: unknown[] }): Promise<PlanNode[]> {
  return db.withSession(async (s) => {
    await s.exec("BEGIN");
    try {
      await s.exec(BATCH_PLANS);
      const [row] = await s.query<{ "QUERY PLAN": { Plan: PlanNode }[] }>(`EXPLAIN (FORMAT JSON) ${q.text}`, q.values);
      return nodes(row["QUERY PLAN"][0].Plan);
    } finally {
      await s.exec("ROLLBACK");
    }
  });
}

/** The nodes that read `table` some other way than by a range or probes of its primary key (the DELETE itself aside). */
const offPrimaryKey = (ns: PlanNode[], table: string) =>
  ns.filter(
    (n) =>
      n["Node Type"] !== "ModifyTable" && (n["Relation Name"] === table || n["Index Name"]?.startsWith(`${table}_`)) && n["Index Name"] !== `${table}_pkey`,
  );

const describeNodes = (ns: PlanNode[]) => ns.map((n) => `${n["Node Type"]} ${n["Index Name"] ?? n["Relation Name"] ?? ""}`).join(", ");

describe.skipIf(!usingPostgres)("purge statements use indexes (40k records, after ANALYZE)", () => {
  it("a records batch walks a primary-key range and reads no other index of the records; an events batch likewise", async () => {
    const [{ max }] = await db.sql.query<{ max: bigint }>(`SELECT max(id) AS max FROM idempotency_records`);
    for (const [lo, W, B] of [
      [0n, windowFor(1000), 1000],
      [max / 2n, windowFor(1000), 1000],
    ] as const) {
      // The batch stops at its LIMIT in id order. A bitmap of the expiry or status index would
      // read the whole backlog in every batch, and a hash of the event ids a scan of the whole
      // table; at this size the planner avoids both anyway, at 200k records it took both
      // without the batch's settings (bench:purge prints the plans at its size).
      const rec = await batchPlan(recordCandidatesSql(rules, now, lo, lo + W, B));
      expect(
        rec.some((n) => n["Node Type"] === "Index Scan" && n["Index Name"] === "idempotency_records_pkey" && /id >/.test(n["Index Cond"] ?? "")),
        describeNodes(rec),
      ).toBe(true);
      // The legal-hold subplan reads its own small partial index (held records only).
      expect(
        offPrimaryKey(rec, "idempotency_records").filter((n) => n["Index Name"] !== "idempotency_records_legal_hold_idx"),
        describeNodes(rec),
      ).toEqual([]);
      // Events: the ids selected by a primary-key range, then deleted by primary-key probes
      // (never a hash of the ids over a scan of the table).
      const ev = await batchPlan(eventDeleteSql(rules, now, lo * 3n, lo * 3n + W, B));
      expect(
        ev.some((n) => n["Index Name"] === "idempotency_events_pkey" && /id >/.test(n["Index Cond"] ?? "")),
        describeNodes(ev),
      ).toBe(true);
      expect(offPrimaryKey(ev, "idempotency_events"), describeNodes(ev)).toEqual([]);
      expect(
        ev.filter((n) => /Hash|Merge/.test(n["Node Type"])),
        describeNodes(ev),
      ).toEqual([]);
    }
  });

  it("a per-operation policy's window is a range of the (operation, expires_at) index", async () => {
    const own = rules.find((r) => r.operation === "capture_payment")!;
    const p = new Params();
    const q = await plan({ text: `SELECT count(*) FROM idempotency_records r WHERE ${recordEligibleSql(rules, now, p, "r", own)}`, values: p.values });
    expect(
      q.some((n) => n["Index Name"] === "idempotency_records_operation_expires_at_idx"),
      describeNodes(q),
    ).toBe(true);
    expect(
      q.filter((n) => n["Node Type"] === "Seq Scan" && n["Relation Name"] === "idempotency_records"),
      describeNodes(q),
    ).toEqual([]);
  });
});

// --- MySQL / MariaDB ---------------------------------------------------------------------

/** 40,000 records over 60 days (a tenth of them per status but completed), 3 events each, all rolled up, policies, ANALYZE. */
async function mysqlDataset() {
  db = await createTestDatabase();
  await fillMysqlExplainDataset(db.sql, now);
  // What THE condition asks about, at a size where the optimizer has to choose: an open item per
  // pending record, an outbox message per fourth record (most of them sent).
  await db.sql.query(
    `INSERT INTO reconciliation_items (record_id, provider, provider_request_id, state, next_check_at)
     SELECT id, 'mockpay', CONCAT('req-', id), 'open', created_at FROM idempotency_records WHERE status = 'pending'`,
  );
  await db.sql.query(
    `INSERT INTO outbox_messages (record_id, topic, payload, status, created_at, sent_at)
     SELECT id, 'payment.captured', '{}', IF(id % 20 = 0, 'pending', 'sent'), created_at, created_at FROM idempotency_records WHERE id % 4 = 0`,
  );
  await db.sql.query(
    `INSERT INTO rollup_state (name, watermark) SELECT 'events', max(id) FROM idempotency_events ON DUPLICATE KEY UPDATE watermark = VALUES(watermark)`,
  );
  await db.sql.query(`INSERT INTO retention_policies (operation, keep_records_days, keep_events_days) VALUES (NULL, 7, 30), ('capture_payment', 14, 30)`);
  await db.sql.query(`ANALYZE TABLE idempotency_records, idempotency_events, reconciliation_items, outbox_messages, retention_policies`);
  rules = await loadRules(db.sql);
}

/** A row of MySQL's tabular EXPLAIN (MySQL 8 and MariaDB share these columns). */
interface MysqlPlanRow {
  id: number;
  rows: string | number | bigint | null;
  select_type: string;
  table: string | null;
  type: string | null;
  key: string | null;
  Extra: string | null;
}

async function mysqlPlan(q: { text: string; values: unknown[] }): Promise<MysqlPlanRow[]> {
  return db.sql.query<MysqlPlanRow>(`EXPLAIN ${q.text}`, q.values);
}

const describeRows = (rows: MysqlPlanRow[]) => rows.map((r) => `${r.select_type} ${r.table} ${r.type} ${r.key ?? "-"} ${r.rows}`).join(", ");
/** The plan's rows reading `table` under `alias` (the statement's own alias or the table's name). */
const reading = (rows: MysqlPlanRow[], alias: string) => rows.filter((r) => r.table === alias);
/**
 * Reads of the services' tables (their aliases in THE condition) that are not index lookups or
 * ranges — a table or a whole index read once per statement. The console's small tables (legal
 * holds, rollup gaps) may be read whole.
 */
const SERVICE_TABLES = ["r", "e", "x", "i", "o", "idempotency_records", "idempotency_events", "target"];
const serviceScans = (rows: MysqlPlanRow[]) =>
  rows.filter((r) => SERVICE_TABLES.includes(r.table ?? "") && (r.key === null || r.type === "ALL" || r.type === "index"));

describe.skipIf(!usingMysql)("MySQL: purge statements use indexes (40k records, after ANALYZE)", () => {
  it("a records batch reads a primary-key range of the window, locks and deletes by primary key; so do events", async () => {
    const [{ max }] = await db.sql.query<{ max: bigint }>(`SELECT max(id) AS max FROM idempotency_records`);
    for (const lo of [0n, max / 2n]) {
      const rec = await mysqlPlan(mysqlPurge.recordCandidatesSql(rules, now, lo, lo + windowFor(1000), 1000));
      expect(reading(rec, "r"), describeRows(rec)).toEqual([expect.objectContaining({ type: "range", key: "PRIMARY" })]);
      // The outbox and reconciliation protections probe the child's record_id index per candidate.
      expect(reading(rec, "o"), describeRows(rec)).toEqual([expect.objectContaining({ type: "ref", key: "outbox_messages_record_id_idx" })]);
      expect(reading(rec, "i"), describeRows(rec)).toEqual([expect.objectContaining({ type: "ref", key: "reconciliation_items_record_id_idx" })]);
      expect(serviceScans(rec), describeRows(rec)).toEqual([]);

      // The batch's DELETE of the candidates (ids the candidates read), THE condition again.
      const ids = (await db.sql.query<{ id: bigint }>(`SELECT id FROM idempotency_records WHERE id > ? ORDER BY id LIMIT 1000`, [lo])).map((r) => r.id);
      const del = mysqlPurge.deleteStillEligibleSql(rules, now, ids);
      const d = await mysqlPlan(del);
      // By primary key either way: a range of the list, or (a list of 1,000 or more, which MariaDB
      // turns into a table of values) one lookup per candidate.
      expect(reading(d, "target"), describeRows(d)).toEqual([expect.objectContaining({ type: expect.stringMatching(/^(range|eq_ref)$/), key: "PRIMARY" })]);
      expect(serviceScans(d), describeRows(d)).toEqual([]);
      // A small batch whose window holds fewer rows than it has candidates (the race test's purges:
      // 25 at a time, most of the table not yet expired): left to itself MariaDB walks the expiry
      // index instead, waiting on every writer's row it passes.
      const early = new Date(now.getTime() - 55 * 86_400_000);
      const small = mysqlPurge.deleteStillEligibleSql(rules, early, ids.slice(0, 25));
      const s = await mysqlPlan(small);
      expect(reading(s, "target"), describeRows(s)).toEqual([expect.objectContaining({ type: "range", key: "PRIMARY" })]);

      const ev = await mysqlPlan(mysqlPurge.eventCandidatesSql(rules, now, lo * 3n, lo * 3n + windowFor(1000), 1000));
      expect(reading(ev, "e"), describeRows(ev)).toEqual([expect.objectContaining({ type: "range", key: "PRIMARY" })]);
      // The held-record protection reads the records' legal_hold index, never the table.
      expect(serviceScans(ev), describeRows(ev)).toEqual([]);
      // As the batch runs them: the candidates counted in the server, then a DELETE of their id
      // range — by primary key, for the whole window and for a small one whose events are mostly
      // not eligible yet.
      const bounds = await mysqlPlan(mysqlPurge.eventBatchBoundsSql(rules, now, lo * 3n, lo * 3n + windowFor(1000), 1000));
      expect(reading(bounds, "e"), describeRows(bounds)).toEqual([expect.objectContaining({ type: "range", key: "PRIMARY" })]);
      expect(serviceScans(bounds), describeRows(bounds)).toEqual([]);
      for (const [asOf, last] of [
        [now, lo * 3n + windowFor(1000)],
        [early, lo * 3n + 25n],
      ] as const) {
        const de = await mysqlPlan(mysqlPurge.deleteEligibleEventsUpToSql(rules, asOf, lo * 3n, last));
        expect(reading(de, "target"), describeRows(de)).toEqual([expect.objectContaining({ type: "range", key: "PRIMARY" })]);
        expect(serviceScans(de), describeRows(de)).toEqual([]);
      }
    }
  });

  it("a per-operation policy's window is a range of the (operation, expires_at) index", async () => {
    const own = rules.find((r) => r.operation === "capture_payment")!;
    const p = new Params(MYSQL);
    const q = await mysqlPlan({
      text: `SELECT count(*) FROM idempotency_records r WHERE ${mysqlEligibility.recordEligibleSql(rules, now, p, "r", own)}`,
      values: p.values,
    });
    expect(reading(q, "r"), describeRows(q)).toEqual([expect.objectContaining({ key: "idempotency_records_operation_expires_at_idx" })]);
    expect(serviceScans(q), describeRows(q)).toEqual([]);
  });
});
