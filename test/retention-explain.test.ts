import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bulkGenerate } from "@/lib/demo/bulk";
import { recordEligibleSql } from "@/lib/retention/eligibility";
import { loadRules, type PolicyRule } from "@/lib/retention/rules";
import { eventDeleteSql, recordCandidatesSql, windowFor } from "@/lib/retention/worker";
import { refreshRollups } from "@/lib/stats/rollups";
import { createTestDatabase, usingPostgres, type TestDatabase } from "./helpers/db";
import { Params } from "@/lib/db/params";

/**
 * The purge's statements use indexes at a decent size (real Postgres, 40,000 bulk
 * records and 120,000 events, after ANALYZE): each batch is a primary-key range of
 * records or events (never a scan of the table), and a per-operation policy's count
 * is a range of idempotency_records_operation_expires_at_idx.
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

const describeNodes = (ns: PlanNode[]) => ns.map((n) => `${n["Node Type"]} ${n["Index Name"] ?? n["Relation Name"] ?? ""}`).join(", ");

describe.skipIf(!usingPostgres)("purge statements use indexes (40k records, after ANALYZE)", () => {
  it("a records batch is a primary-key range, and so is an events batch", async () => {
    const [{ max }] = await db.sql.query<{ max: bigint }>(`SELECT max(id) AS max FROM idempotency_records`);
    for (const lo of [0n, max / 2n]) {
      const rec = await plan(recordCandidatesSql(rules, now, lo, lo + windowFor(1000), 1000));
      expect(rec.some((n) => n["Index Name"] === "idempotency_records_pkey" && /id >/.test(n["Index Cond"] ?? "")), describeNodes(rec)).toBe(true);
      expect(rec.filter((n) => n["Node Type"] === "Seq Scan" && n["Relation Name"] === "idempotency_records"), describeNodes(rec)).toEqual([]);
      const ev = await plan(eventDeleteSql(rules, now, lo * 3n, lo * 3n + windowFor(1000), 1000));
      expect(ev.some((n) => n["Index Name"] === "idempotency_events_pkey" && /id >/.test(n["Index Cond"] ?? "")), describeNodes(ev)).toBe(true);
      expect(ev.filter((n) => n["Node Type"] === "Seq Scan" && n["Relation Name"] === "idempotency_events"), describeNodes(ev)).toEqual([]);
    }
  });

  it("a per-operation policy's window is a range of the (operation, expires_at) index", async () => {
    const own = rules.find((r) => r.operation === "capture_payment")!;
    const p = new Params();
    const q = await plan({ text: `SELECT count(*) FROM idempotency_records r WHERE ${recordEligibleSql(rules, now, p, "r", own)}`, values: p.values });
    expect(q.some((n) => n["Index Name"] === "idempotency_records_operation_expires_at_idx"), describeNodes(q)).toBe(true);
    expect(q.filter((n) => n["Node Type"] === "Seq Scan" && n["Relation Name"] === "idempotency_records"), describeNodes(q)).toEqual([]);
  });
});
