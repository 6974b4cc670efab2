import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { get_dmmf } from "@prisma/prisma-schema-wasm";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase, type Database } from "@/lib/db/client";
import { migrate } from "@/lib/db/migrate";
import { bulkGenerate } from "@/lib/demo/bulk";
import { mysqlDuplicatePairsSql } from "@/lib/records/duplicates-store.mysql";
import { duplicatePairsSql } from "@/lib/records/duplicates-store.postgres";
import { parseStuckThresholds } from "@/lib/records/config";
import { mysqlQueueSql, queueCountsSql as mysqlQueueCountsSql } from "@/lib/records/queue-store.mysql";
import { queueCountsSql, queueSql } from "@/lib/records/queue-store.postgres";
import type { SearchInput } from "@/lib/records/search";
import { mysqlSearchSql } from "@/lib/records/search-store.mysql";
import { searchSql } from "@/lib/records/search-store.postgres";
import { SEARCH_FIELDS, type SearchField } from "@/lib/records/vocabulary";
import { renderMetrics } from "@/lib/stats/metrics";
import { overviewReads, overviewStats } from "@/lib/stats/overview";
import { countPlan } from "@/lib/stats/count-plan";
import { conflictStats } from "@/lib/stats/conflicts";
import { countsSql as pgCountsSql, eventCountsSql } from "@/lib/stats/rollup-store.postgres";
import {
  conflictRowsSql,
  expiredSql,
  expirySql,
  metricsSql,
  oldestExpiredSql,
  overviewSql,
  READ_SIDE_PLANS,
  recordTotalsSql,
  SCOPE_PASS_JIT,
} from "@/lib/stats/store.postgres";
import { countsSql as mysqlCountsSql } from "@/lib/stats/rollup-store.mysql";
import { refreshRollups } from "@/lib/stats/rollups";
import { expiredSql as mysqlExpiredSql, overviewSql as mysqlOverviewSql, recordTotalsSql as mysqlRecordTotalsSql } from "@/lib/stats/store.mysql";
import type { SqlExecutor } from "@/lib/db/sql";
import { createTestDatabase, usingMysql, usingPostgres, type TestDatabase } from "./helpers/db";

/**
 * The read side answers from indexes, not scans: EXPLAIN every query shape on real
 * Postgres after ANALYZE on 20,000 bulk records (60,000 events), in a database whose
 * default collation is NOT "C" (ICU en-US), where a default-opclass btree cannot serve
 * LIKE 'prefix%' — only the text_pattern_ops indexes of 20261130030000_search_indexes can.
 * On MySQL/MariaDB the same guarantee, from its EXPLAIN: no full scan of records or events,
 * the field's own index for few matches, a prefix as an index range (the tables are
 * utf8mb4_bin, so the plain index serves LIKE 'prefix%'; ADR 0012).
 */

const FIELDS = Object.keys(SEARCH_FIELDS) as SearchField[];
const now = new Date("2026-11-30T12:00:00.000Z");

interface PlanNode {
  "Node Type": string;
  /** An Aggregate's: Plain, Sorted (of input in the group's order) or Hashed. */
  Strategy?: string;
  "Relation Name"?: string;
  "Index Name"?: string;
  "Index Cond"?: string;
  Plans?: PlanNode[];
}

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

/** `s`, writing down every statement and script it is sent. */
const recordingTo = (s: SqlExecutor, sent: string[]): SqlExecutor => ({
  dialect: s.dialect,
  query: (text, params) => (sent.push(text), s.query(text, params)),
  exec: (script) => (sent.push(script), s.exec(script)),
  execute: s.execute && ((text, params) => (sent.push(text), s.execute!(text, params))),
});

/** Parallel plans made free: the planner splits whatever it can (at 20k rows it would not otherwise). */
const FREE_PARALLEL_PLANS =
  "SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0; SET min_parallel_index_scan_size = 0";

const describeNode = (n: PlanNode) =>
  `${n["Node Type"]}${n["Relation Name"] ? ` on ${n["Relation Name"]}` : ""}${n["Index Name"] ? ` using ${n["Index Name"]}` : ""}${n["Index Cond"] ? ` [${n["Index Cond"]}]` : ""}`;

describe.skipIf(!usingPostgres)("index use on Postgres (non-C collation, 20k records, after ANALYZE)", () => {
  let db: Database;
  let dbName: string;
  const admin = () => new pg.Client({ connectionString: process.env.DATABASE_URL });

  beforeAll(async () => {
    dbName = `ic_test_explain_${randomBytes(4).toString("hex")}`;
    const c = admin();
    await c.connect();
    try {
      await c.query(`CREATE DATABASE "${dbName}" TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'`);
    } finally {
      await c.end();
    }
    const url = new URL(process.env.DATABASE_URL!);
    url.pathname = `/${dbName}`;
    db = await openDatabase({ mode: "postgres", url: url.toString() });
    await db.withSession((s) => migrate(s));
    await bulkGenerate(db.sql, { records: 20_000, seed: 9, days: 30, now, batchSize: 5000 });
    // The bulk traffic has five big tenants; add a small one, so a scope prefix can be selective.
    await db.sql.query(
      `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, expires_at, created_at, updated_at)
       SELECT 'partner:zeta', operation, idempotency_key || '-z', payload_hash, status, expires_at, created_at, updated_at
         FROM idempotency_records ORDER BY id LIMIT 20`,
    );
    await db.sql.exec("ANALYZE");
  });

  afterAll(async () => {
    await db?.close();
    const c = admin();
    await c.connect();
    try {
      for (let i = 0; i < 100; i++) {
        const { rows } = await c.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1`, [dbName]);
        if (rows[0].n === 0) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      await c.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
    } finally {
      await c.end();
    }
  });

  async function plan(q: { text: string; values: unknown[] }, on: SqlExecutor = db.sql): Promise<PlanNode[]> {
    const [row] = await on.query<{ "QUERY PLAN": { Plan: PlanNode }[] }>(`EXPLAIN (FORMAT JSON) ${q.text}`, q.values);
    return nodes(row["QUERY PLAN"][0].Plan);
  }

  async function expectNoSeqScan(label: string, q: { text: string; values: unknown[] }, tables = ["idempotency_records", "idempotency_events"]) {
    const all = await plan(q);
    const seq = all.filter((n) => n["Node Type"] === "Seq Scan" && tables.includes(n["Relation Name"] ?? ""));
    expect(seq.map(describeNode), `${label}:\n  ${all.map(describeNode).join("\n  ")}`).toEqual([]);
    return all;
  }

  it("the database really compares text in a non-C collation (so LIKE needs text_pattern_ops)", async () => {
    const [r] = await db.sql.query<{ icu: boolean; c: boolean }>(`SELECT 'a' < 'B' AS icu, 'a' < 'B' COLLATE "C" AS c`);
    expect(r).toEqual({ icu: true, c: false });
  });

  it("search by every field, exact and prefix (selective, broad, absent), answers from an index", async () => {
    const indexOf: Record<SearchField, string> = {
      key: "idempotency_records_key_pattern_idx",
      scope: "idempotency_records_scope_created_at_idx",
      provider_reference: "idempotency_records_provider_reference_idx",
      provider_request_id: "idempotency_records_provider_request_id_idx",
      correlation_id: "idempotency_records_correlation_id_idx",
      resource_id: "idempotency_records_resource_id_idx",
    };
    let checkedIndex = 0;
    for (const field of FIELDS) {
      const column = SEARCH_FIELDS[field];
      const [{ v }] =
        field === "scope"
          ? [{ v: "partner:zeta" }]
          : await db.sql.query<{ v: string }>(`SELECT ${column} AS v FROM idempotency_records WHERE ${column} IS NOT NULL ORDER BY id OFFSET 1234 LIMIT 1`);
      const cases: [string, SearchInput][] = [
        ["exact", { q: v, field }],
        ["prefix, selective", { q: v.slice(0, v.length - 1), field, match: "prefix" }],
        ["prefix, broad", { q: v.slice(0, 3), field, match: "prefix" }],
        ["prefix, absent", { q: "zz_nothing", field, match: "prefix" }],
        ["exact, page 2", { q: v, field, cursor: { t: "2026-11-29T00:00:00.000000Z", id: 10_000n } }],
      ];
      for (const [label, input] of cases) {
        const q = searchSql(input);
        const used = await expectNoSeqScan(`${field} ${label} ${input.q}`, q);
        const [{ n }] = await db.sql.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM idempotency_records WHERE ${input.match === "prefix" ? `left(${column}, length($1)) = $1` : `${column} = $1`}`,
          [input.q],
        );
        if (n <= 100 && !input.cursor) {
          // Few matches: the field's own index, a prefix turned into an index range (~>=~ … ~<~).
          // (Many matches: the planner may rather walk (created_at, id) newest first and stop at the page.)
          const scan = used.find((x) => x["Index Name"] === indexOf[field]);
          expect(scan, `${field} ${label} (${n} matches): ${used.map(describeNode).join("; ")}`).toBeTruthy();
          checkedIndex++;
          if (input.match === "prefix") expect(scan!["Index Cond"]).toMatch(/~>=~/);
        }
        // And the answer is right under this collation.
        const rows = await db.sql.query<{ id: bigint }>(q.text, q.values);
        const truth = await db.sql.query<{ id: bigint }>(
          `SELECT id FROM idempotency_records WHERE ${input.match === "prefix" ? `left(${column}, length($1)) = $1` : `${column} = $1`}
             ${input.cursor ? `AND (created_at, id) < ('2026-11-29T00:00:00Z', 10000)` : ""}
            ORDER BY created_at DESC, id DESC LIMIT 51`,
          [input.q],
        );
        expect(rows.map((r) => r.id)).toEqual(truth.map((r) => r.id));
      }
    }
    expect(checkedIndex).toBeGreaterThanOrEqual(FIELDS.length * 2);

    // The control: with a default-opclass index instead, this collation leaves LIKE without an index range.
    const control = await db.withSession(async (s) => {
      await s.exec("BEGIN");
      try {
        await s.exec(`DROP INDEX idempotency_records_key_pattern_idx; CREATE INDEX control_key_idx ON idempotency_records (idempotency_key)`);
        const q = searchSql({ q: "bulk-9-1234", field: "key", match: "prefix" });
        const [row] = await s.query<{ "QUERY PLAN": { Plan: PlanNode }[] }>(`EXPLAIN (FORMAT JSON) ${q.text}`, q.values);
        return nodes(row["QUERY PLAN"][0].Plan);
      } finally {
        await s.exec("ROLLBACK");
      }
    });
    expect(control.some((n) => n["Index Name"] === "control_key_idx" && /~>=~|>=/.test(n["Index Cond"] ?? ""))).toBe(false);

    // All six fields at once, and the plain newest-first listing.
    await expectNoSeqScan("all fields", searchSql({ q: "mp_req_", match: "prefix" }));
    await expectNoSeqScan("listing", searchSql({}));
    await expectNoSeqScan("listing, status filter", searchSql({ status: "failed", limit: 200 }));
  });

  it("duplicates over a day, the queue, conflicts, expiry in the next 24 h: no sequential scan of records or events", async () => {
    const day = { from: new Date(now.getTime() - 86_400_000), to: now };
    await expectNoSeqScan("duplicates, 1 day", duplicatePairsSql({ ...day }));
    await expectNoSeqScan("duplicates, 1 day, one scope", duplicatePairsSql({ ...day, scope: "tenant:hooli" }));
    const thresholds = parseStuckThresholds("default=5m,capture_payment=2m");
    await expectNoSeqScan("queue", queueSql({}, thresholds, now));
    await expectNoSeqScan("queue, pending, newest first", queueSql({ kind: "pending", sort: "age_asc" }, thresholds, now));
    await expectNoSeqScan("queue, stuck, page 2", queueSql({ kind: "stuck", cursor: { t: "2026-11-20T00:00:00.000000Z", id: 5n } }, thresholds, now));
    const conflictGroups = conflictRowsSql({ ...day }, { select: "e.operation, count(*)", outer: () => "GROUP BY 1" });
    const used = await expectNoSeqScan("conflicts by operation", conflictGroups);
    // One index range per operation: only conflict events are read.
    const perOperation = (n: PlanNode) =>
      n["Index Name"] === "idempotency_events_operation_kind_occurred_at_idx" &&
      /kind = 'conflict'/.test(n["Index Cond"] ?? "") &&
      /occurred_at >=/.test(n["Index Cond"] ?? "");
    expect(used.some(perOperation), used.map(describeNode).join("\n")).toBe(true);
    const drill = await expectNoSeqScan(
      "conflicts drill-down",
      conflictRowsSql({ ...day }, { select: "e.id", inner: () => "ORDER BY e.occurred_at DESC, e.id DESC LIMIT 51", outer: () => "ORDER BY 1 DESC LIMIT 51" }),
    );
    expect(drill.some(perOperation)).toBe(true);
    const one = await expectNoSeqScan(
      "conflicts, one operation and scope",
      conflictRowsSql({ ...day, operation: "capture_payment", scope: "tenant:acme" }, { select: "e.id" }),
    );
    expect(one.some(perOperation)).toBe(true);
    await expectNoSeqScan("expiry, next 24 h", expirySql({ now }).hours);
    // The Expiry page without a scope (ADR 0017): the expired records it reads are the unsettled, the protected, the first of each group.
    const rules = [
      { id: "1", operation: null, keepRecordsDays: 0, keepEventsDays: 30, enabled: true },
      { id: "2", operation: "capture_payment", keepRecordsDays: 2, keepEventsDays: 30, enabled: true },
    ];
    await expectNoSeqScan("expiry, expired processing and pending", expiredSql({ now, rules, part: "unsettled" }));
    await expectNoSeqScan("expiry, expired records a protection may keep", expiredSql({ now, rules, part: "protected" }));
    const oldest = await expectNoSeqScan(
      "expiry, the oldest of each group",
      oldestExpiredSql(
        [
          { operation: "capture_payment", status: "failed" },
          { operation: "capture_payment", status: "completed" },
        ],
        now,
      ),
    );
    // Each group a range of (operation, expires_at) — not the expires_at index filtered by operation
    // (every expired record of other operations read first: 3.2 s at 1M records).
    expect(oldest.filter((n) => (n["Index Name"] ?? "").startsWith("idempotency_records")).map(describeNode), oldest.map(describeNode).join("\n")).toEqual([
      expect.stringMatching(/idempotency_records_operation_expires_at_idx/),
    ]);
  });

  it("the Expiry page reads a held scope's records by the scope, one index range per hold — not the records whole", async () => {
    // A hold on the tenant of a third of the records. As `scope IN (the held scopes)` the planner
    // joined the held scopes by hash and read every record (1M records, a hold on a 10k-record
    // tenant: the page 27 → 274 ms); by their ids, a probe each (a 207k-record scope: 1.5 s).
    await db.sql.query(`INSERT INTO legal_holds (scope, reason, set_by_label) VALUES ('tenant:acme', 'explain test', 'test')`);
    try {
      await db.sql.exec("ANALYZE legal_holds");
      const rules = [{ id: "1", operation: null, keepRecordsDays: 0, keepEventsDays: 30, enabled: true }];
      const all = await expectNoSeqScan("expiry, expired records a protection may keep, a scope held", expiredSql({ now, rules, part: "protected" }));
      // A range of the scope per hold (index-only where the scope's pages are all-visible: expired records are old ones).
      const perHold = (plan: PlanNode[]) =>
        plan.filter((n) => (n["Index Name"] ?? "").startsWith("idempotency_records_scope") && /scope = h\.scope/.test(n["Index Cond"] ?? ""));
      expect(perHold(all).map(describeNode), all.map(describeNode).join("\n")).toHaveLength(1);
      // Not the planner's choice at this size only: at 1M it joined the held scopes by hash (a nested
      // loop looked dear for a third of the records). With nested loops priced out, the range stays.
      const priced = await db.withSession(async (s) => {
        await s.exec("SET enable_nestloop = off");
        try {
          return await plan(expiredSql({ now, rules, part: "protected" }), s);
        } finally {
          await s.exec("RESET enable_nestloop");
        }
      });
      expect(perHold(priced).map(describeNode), priced.map(describeNode).join("\n")).toHaveLength(1);
    } finally {
      await db.sql.query(`DELETE FROM legal_holds WHERE reason = 'explain test'`);
    }
  });

  it("the overview, a metrics scrape and the conflicts screen start no parallel workers, even where the planner would", async () => {
    const thresholds = parseStuckThresholds("default=5m");
    const day = { from: new Date(now.getTime() - 86_400_000), to: now };
    const statements = [
      ...Object.entries(overviewSql(overviewReads(day, now, thresholds))),
      ...Object.entries(overviewSql(overviewReads({ ...day, operation: "capture_payment" }, now, thresholds))),
      // A scope's pass reads in proportion to the scope, and still runs serial (READ_SIDE_PLANS says why).
      ...Object.entries(overviewSql(overviewReads({ ...day, scope: "tenant:acme" }, now, thresholds))).map(([name, q]) => [`scope: ${name}`, q] as const),
      ...Object.entries(metricsSql({ now, thresholds, expired: [{ name: "expired", from: null, to: now }], allTime: countPlan({}) })),
      // The conflicts screen's requests per operation (countEvents).
      ["conflicts: countEvents", eventCountsSql(day)] as const,
    ];
    await db.withSession(async (s) => {
      await s.exec(FREE_PARALLEL_PLANS);
      const parallel = async () => {
        const found: string[] = [];
        for (const [name, q] of statements) {
          const [row] = await s.query<{ "QUERY PLAN": { Plan: PlanNode }[] }>(`EXPLAIN (FORMAT JSON) ${q.text}`, q.values);
          if (nodes(row["QUERY PLAN"][0].Plan).some((n) => n["Node Type"].startsWith("Gather"))) found.push(name);
        }
        return found;
      };
      // Without the read side's settings some statements go parallel, a scope's pass among them (else this proves nothing) …
      expect(await parallel()).toContain("scope: totals");
      // … under them none does …
      await s.exec("BEGIN");
      await s.exec(READ_SIDE_PLANS);
      expect(await parallel()).toEqual([]);
      await s.exec("ROLLBACK");
      // … and the overview, the scrape and the conflicts screen run under them, in their snapshot, before their first read.
      const sent: string[] = [];
      const recording = recordingTo(s, sent);
      for (const run of [
        () => overviewStats(recording, { ...day }, { now }),
        () => overviewStats(recording, { ...day, scope: "tenant:acme" }, { now }),
        () => renderMetrics(recording, { now }),
        () => conflictStats(recording, { ...day }, { snapshot: true }),
      ]) {
        sent.length = 0;
        await run();
        const reads = sent.filter((t) => /^\s*(SELECT|WITH)/i.test(t));
        expect(sent.indexOf(READ_SIDE_PLANS)).toBeGreaterThan(-1);
        expect(sent.indexOf(READ_SIDE_PLANS)).toBeLessThan(sent.indexOf(reads[0]));
        // … and nothing sets the workers again (a scope's pass with workers: 2× slower on one machine).
        expect(sent.filter((t) => /max_parallel_workers_per_gather/.test(t))).toEqual([READ_SIDE_PLANS]);
      }
    });
  });

  it("the events not rolled up yet are read by id past the watermark, never by their time range", async () => {
    // The planner cannot see the watermark (a subquery: a third of the table, it guesses). Where the
    // occurred_at range looks cheaper — ids ascending with time as writers leave them, at 5M records
    // (docs/scale.md), or here with random_page_cost as SSD-tuned servers set it — it read 24 h of
    // events for the few past the watermark.
    const day = { from: new Date(now.getTime() - 86_400_000), to: now };
    const statements = [
      ["24 h", eventCountsSql(day)],
      ["24 h by the quarter hour (the overview's series)", eventCountsSql(day, { stepSeconds: 900 })],
      ["24 h, one operation", eventCountsSql({ ...day, operation: "capture_payment" })],
    ] as const;
    for (const settings of ["RESET random_page_cost", "SET random_page_cost = 1.1"]) {
      await db.withSession(async (s) => {
        await s.exec(settings);
        for (const [label, q] of statements) {
          const all = await plan(q, s);
          const past = all.filter(
            (n) => n["Relation Name"] === "idempotency_events" && /\bid > /.test(`${n["Index Cond"] ?? ""} ${(n as { Filter?: string }).Filter ?? ""}`),
          );
          const where = `${label}, ${settings}:\n  ${all.map(describeNode).join("\n  ")}`;
          expect(past, where).toHaveLength(1);
          expect(past[0]["Index Name"], where).toBe("idempotency_events_pkey");
          expect(past[0]["Index Cond"], where).toMatch(/\bid > /);
        }
        await s.exec("RESET random_page_cost");
      });
    }
  });

  it("a scope's pass alone is compiled (JIT without inlining or optimisation), and the session goes back to jit = off", async () => {
    const day = { from: new Date(now.getTime() - 86_400_000), to: now };
    const pass = recordTotalsSql(overviewReads({ ...day, scope: "tenant:acme" }, now, parseStuckThresholds("default=5m")));
    await db.withSession(async (s) => {
      // What the settings compile, at thresholds this 20k-record table passes (the default needs ~1M entries; the
      // inlining and optimisation thresholds at 0 as if the pass were huge: the settings must turn them off).
      await s.exec(`SET jit_inline_above_cost = 0; SET jit_optimize_above_cost = 0; ${SCOPE_PASS_JIT.on}; SET jit_above_cost = 0`);
      const [{ available }] = await s.query<{ available: boolean }>(`SELECT pg_jit_available() AS available`);
      expect(available).toBe(true); // this machine's PostgreSQL has its LLVM provider (else this proves nothing)
      const [row] = await s.query<{ "QUERY PLAN": { JIT?: { Options: Record<string, boolean> } }[] }>(
        `EXPLAIN (ANALYZE, FORMAT JSON) ${pass.text}`,
        pass.values,
      );
      expect(row["QUERY PLAN"][0].JIT?.Options).toEqual({ Inlining: false, Optimization: false, Expressions: true, Deforming: true });
      await s.exec(`${SCOPE_PASS_JIT.off}; RESET jit_above_cost`);

      const sent: string[] = [];
      const recording = recordingTo(s, sent);
      const jit = async () => (await s.query<{ jit: string }>(`SELECT current_setting('jit') AS jit`))[0].jit;
      for (const snapshot of [true, false]) {
        sent.length = 0;
        await overviewStats(recording, { ...day, scope: "tenant:acme" }, { now, snapshot });
        const at = sent.indexOf(pass.text);
        expect(sent.slice(at - 1, at + 2)).toEqual([SCOPE_PASS_JIT.on, pass.text, SCOPE_PASS_JIT.off]);
        expect(sent.filter((t) => /\bjit\b/.test(t))).toEqual([SCOPE_PASS_JIT.on, SCOPE_PASS_JIT.off]);
        expect(await jit()).toBe("off");
        // Unfiltered: nothing compiled.
        sent.length = 0;
        await overviewStats(recording, { ...day }, { now, snapshot });
        expect(sent.filter((t) => /\bjit\b/.test(t))).toEqual([]);
      }
    });
  });

  it("the overview filtered to a scope counts the scope's records from one index alone (no heap fetch)", async () => {
    // Index-only scans read the visibility map, which VACUUM keeps (autovacuum, on a live table).
    await db.sql.exec("VACUUM (ANALYZE) idempotency_records");
    const reads = overviewReads({ from: new Date(now.getTime() - 86_400_000), to: now, scope: "partner:zeta" }, now, parseStuckThresholds("default=5m"));
    const all = await plan(recordTotalsSql(reads));
    const records = all.filter((n) => n["Relation Name"] === "idempotency_records" || (n["Index Name"] ?? "").startsWith("idempotency_records"));
    expect(records.map(describeNode), all.map(describeNode).join("\n")).toEqual([
      expect.stringMatching(/^Index Only Scan .*idempotency_records_scope_counts_idx/),
    ]);
    // A small scope's open reconciliation items from its records' side: the scope's record ids
    // from an index alone ((scope, created_at, id)), no heap fetch; then a probe of the items each.
    const open = await plan(overviewSql(reads).openFromRecords!);
    expect(open.filter((n) => n["Relation Name"] === "idempotency_records").map(describeNode), open.map(describeNode).join("\n")).toEqual([
      expect.stringMatching(/^Index Only Scan on idempotency_records /),
    ]);
    // A large scope's processing and pending records (counts, stuck, oldest, pending ages): the
    // unsettled index's ranges, the scope read from the entry (INCLUDE), no heap fetch per entry.
    // (A scope of a few records reads them from the scope's index instead: fewer entries.)
    const sql = overviewSql(
      overviewReads({ from: new Date(now.getTime() - 86_400_000), to: now, scope: "tenant:acme" }, now, parseStuckThresholds("default=5m")),
    );
    const unfiltered = overviewSql(overviewReads({ from: new Date(now.getTime() - 86_400_000), to: now }, now, parseStuckThresholds("default=5m")));
    for (const [name, q] of [
      ["active (and the pending ages)", sql.active],
      ["active, no filter", unfiltered.active],
    ] as const) {
      const nodes = await plan(q);
      const scans = nodes.filter((n) => n["Relation Name"] === "idempotency_records" || (n["Index Name"] ?? "").startsWith("idempotency_records"));
      expect(scans.map(describeNode), `${name}:\n${nodes.map(describeNode).join("\n")}`).toEqual([
        expect.stringMatching(/^Index Only Scan .*idempotency_records_unsettled_status_idx/),
      ]);
      // Grouped in the index's order (status, operation): no sort and no hash table. Grouped by the
      // pending age bucket too, PostgreSQL sorted every entry (on disk at 10M records).
      const sortsOrHashes = nodes.filter((n) => n["Node Type"] === "Sort" || n.Strategy === "Hashed").map(describeNode);
      expect(sortsOrHashes, `${name}:\n${nodes.map(describeNode).join("\n")}`).toEqual([]);
    }
  });

  it("open reconciliation items of one operation: their records from the unsettled index alone; a record probe only for an item whose record is neither processing nor pending", async () => {
    await db.sql.exec("VACUUM (ANALYZE) idempotency_records");
    const q = overviewSql(
      overviewReads({ from: new Date(now.getTime() - 86_400_000), to: now, operation: "capture_payment" }, now, parseStuckThresholds("default=5m")),
    ).open;
    const [row] = await db.sql.query<{ "QUERY PLAN": { Plan: PlanNode }[] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${q.text}`, q.values);
    const all = nodes(row["QUERY PLAN"][0].Plan) as (PlanNode & { "Actual Loops": number })[];
    const records = all.filter((n) => n["Relation Name"] === "idempotency_records");
    const text = all.map((n) => `${describeNode(n)} (loops ${n["Actual Loops"]})`).join("\n");
    expect(records.map(describeNode), text).toEqual([
      expect.stringMatching(/^Index Only Scan .*idempotency_records_unsettled_status_idx/),
      expect.stringMatching(/^Index Scan .*idempotency_records_pkey/),
    ]);
    const [{ n: other }] = await db.sql.query<{ n: bigint }>(
      `SELECT count(*)::bigint AS n FROM reconciliation_items i JOIN idempotency_records r ON r.id = i.record_id
        WHERE i.state IN ('open', 'checking', 'needs_manual') AND r.status NOT IN ('processing', 'pending')`,
    );
    expect(records[1]["Actual Loops"], text).toBe(Number(other));
  });

  it("the Expiry page's expired processing and pending records: from the unsettled index alone, no heap fetch (ADR 0018)", async () => {
    // Stuck records past their expiry, as a writer leaves them (the bulk traffic's unsettled ones have not expired).
    await db.sql.query(
      `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, legal_hold, expires_at, created_at, updated_at)
       SELECT 'stuck:expired', operation, idempotency_key || '-x', payload_hash, CASE WHEN id % 2 = 0 THEN 'processing' ELSE 'pending' END, id % 3 = 0,
              $1::timestamptz - interval '3 days', created_at, created_at
         FROM idempotency_records ORDER BY id LIMIT 40`,
      [now],
    );
    try {
      await db.sql.exec("VACUUM (ANALYZE) idempotency_records");
      const rules = [
        { id: "1", operation: null, keepRecordsDays: 0, keepEventsDays: 30, enabled: true },
        { id: "2", operation: "capture_payment", keepRecordsDays: 2, keepEventsDays: 30, enabled: true },
      ];
      for (const operation of [undefined, "capture_payment"]) {
        const q = expiredSql({ now, rules, operation, part: "unsettled" });
        const [row] = await db.sql.query<{ "QUERY PLAN": { Plan: PlanNode }[] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${q.text}`, q.values);
        const all = nodes(row["QUERY PLAN"][0].Plan) as (PlanNode & { "Actual Rows": number; "Heap Fetches"?: number })[];
        const text = all.map((n) => `${describeNode(n)} (rows ${n["Actual Rows"]}, heap fetches ${n["Heap Fetches"]})`).join("\n");
        const records = all.filter((n) => n["Relation Name"] === "idempotency_records");
        expect(records.map(describeNode), text).toEqual([expect.stringMatching(/^Index Only Scan .*idempotency_records_unsettled_status_idx/)]);
        expect(records[0]["Actual Rows"], text).toBeGreaterThan(0);
        expect(records[0]["Heap Fetches"], text).toBe(0);
      }
    } finally {
      // The other tests' plans are of the bulk traffic alone.
      await db.sql.query(`DELETE FROM idempotency_records WHERE scope = 'stuck:expired'`);
    }
  });

  it("the queue's reconciliation kind starts from the open items: the processing and pending records from the unsettled index alone; a record probe only for an item whose record is neither", async () => {
    await db.sql.exec("VACUUM (ANALYZE) idempotency_records");
    const q = queueSql({ kind: "reconciliation" }, parseStuckThresholds("default=5m"), now);
    const [row] = await db.sql.query<{ "QUERY PLAN": { Plan: PlanNode }[] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${q.text}`, q.values);
    const all = nodes(row["QUERY PLAN"][0].Plan) as (PlanNode & { "Actual Loops": number; "Actual Rows": number })[];
    const text = all.map((n) => `${describeNode(n)} (loops ${n["Actual Loops"]}, rows ${n["Actual Rows"]})`).join("\n");
    const [{ n: other }] = await db.sql.query<{ n: bigint }>(
      `SELECT count(DISTINCT i.record_id)::bigint AS n FROM reconciliation_items i JOIN idempotency_records r ON r.id = i.record_id
        WHERE i.state IN ('open', 'checking', 'needs_manual') AND r.status NOT IN ('processing', 'pending')`,
    );
    // Read from the records' side in (updated_at, id) order, the branch walked every settled record.
    const records = all.filter((n) => n["Relation Name"] === "idempotency_records");
    expect(records.map(describeNode), text).toEqual([
      expect.stringMatching(/^Index Only Scan .*idempotency_records_unsettled_status_idx/),
      expect.stringMatching(/^Index Scan .*idempotency_records_pkey/),
      expect.stringMatching(/^Index Scan .*idempotency_records_pkey/),
    ]);
    // The probe: one per record left after the unsettled ones are taken out (then the page's join).
    expect(records[1]["Actual Loops"], text).toBe(Number(other));
  });

  it("the queue's counts read every record from an index alone: no heap fetch, no probe of a record per open item", async () => {
    await db.sql.exec("VACUUM (ANALYZE) idempotency_records");
    const all = await plan(queueCountsSql(parseStuckThresholds("default=5m,capture_payment=2m"), now));
    const records = all.filter((n) => n["Relation Name"] === "idempotency_records");
    expect(records.length, all.map(describeNode).join("\n")).toBeGreaterThan(0);
    expect(records.filter((n) => n["Node Type"] !== "Index Only Scan").map(describeNode), all.map(describeNode).join("\n")).toEqual([]);
  });

  // Last in this block: it rolls the events up (the census too), which the statements above do not read.
  it("the overview's series without a scope reads the totals over every scope (ADR 0019); with one, the scope's rows of the tiers", async () => {
    await db.withSession((s) => refreshRollups(s, { sweepRecords: 0 }));
    await db.sql.exec("ANALYZE event_rollups, event_rollup_tiers, event_rollup_totals");
    const hi = Math.floor(now.getTime() / 900_000) * 900_000;
    const plan15 = {
      tiers: [
        { grainSeconds: 60, spans: [[hi - 86_400_000 - 600_000, hi - 86_400_000]] as [number, number][] },
        { grainSeconds: 900, spans: [[hi - 86_400_000, hi]] as [number, number][] },
      ],
      raw: [],
      unrolled: null,
    };
    const rollupTables = (nodes: PlanNode[]) => [...new Set(nodes.map((n) => n["Relation Name"]).filter((r) => r?.startsWith("event_rollup")))].sort();
    const all = await plan(pgCountsSql(plan15, {}, 900));
    expect(rollupTables(all), all.map(describeNode).join("\n")).toEqual(["event_rollup_totals"]);
    const op = await plan(pgCountsSql(plan15, { operation: "capture_payment" }, 900));
    expect(rollupTables(op), op.map(describeNode).join("\n")).toEqual(["event_rollup_totals"]);
    const scoped = await plan(pgCountsSql(plan15, { scope: "tenant:acme" }, 900));
    expect(rollupTables(scoped), scoped.map(describeNode).join("\n")).toEqual(["event_rollup_tiers", "event_rollups"]);
  });

  it("the events above the rollups' watermark are a range of the primary key, also where ids no longer follow the table's order", async () => {
    await db.withSession((s) => refreshRollups(s, { sweepRecords: 0 })); // the watermark at the newest event
    // As after a purge whose freed space new events filled: the events stored in another order than their ids.
    await db.sql.exec("CLUSTER idempotency_events USING idempotency_events_operation_kind_occurred_at_idx; ANALYZE idempotency_events");
    const [{ correlation }] = await db.sql.query<{ correlation: number }>(
      `SELECT correlation FROM pg_stats WHERE tablename = 'idempotency_events' AND attname = 'id'`,
    );
    expect(Math.abs(correlation), "the ids no longer follow the table's order, or the check says nothing").toBeLessThan(0.5);
    const hi = Math.floor(now.getTime() / 60_000) * 60_000;
    const all = await plan(pgCountsSql({ tiers: [], raw: [], unrolled: [hi - 86_400_000, hi] }, {}, 900));
    const events = all.filter((n) => n["Relation Name"] === "idempotency_events");
    // The unrolled events by id (the gaps' events are probed by id too); never every event.
    expect(events.filter((n) => n["Node Type"] === "Seq Scan").map(describeNode), all.map(describeNode).join("\n")).toEqual([]);
    expect(
      events.some((n) => n["Index Name"] === "idempotency_events_pkey" && /\bid > /.test(n["Index Cond"] ?? "")),
      all.map(describeNode).join("\n"),
    ).toBe(true);
  });
});

// PostgreSQL's catalogs (operator classes): MySQL has none; its indexes are checked against the schema by test/mysql-schema.test.ts.
describe.skipIf(usingMysql)("schema.prisma's operator classes are the database's", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db?.drop());

  it("every index field declared with ops: raw(…) has that operator class, the others the default", async () => {
    const schema = readFileSync(path.resolve(import.meta.dirname, "../prisma/schema.prisma"), "utf8");
    const dm = JSON.parse(get_dmmf(JSON.stringify({ prismaSchema: schema }))).datamodel as {
      indexes: { model: string; dbName?: string; fields: { name: string; operatorClass?: string }[] }[];
    };
    const declared = dm.indexes
      .filter((ix) => ix.model === "IdempotencyRecord" && ix.dbName)
      .map((ix) => `${ix.dbName}: ${ix.fields.map((f) => f.operatorClass ?? "default").join(", ")}`)
      .sort();
    const actual = await db.sql.query<{ line: string }>(
      `SELECT i.relname || ': ' || array_to_string(ARRAY(
                SELECT CASE WHEN oc.opcdefault THEN 'default' ELSE oc.opcname END
                  FROM unnest(ix.indclass::oid[]) WITH ORDINALITY AS k(oid, ord) JOIN pg_opclass oc ON oc.oid = k.oid ORDER BY k.ord), ', ') AS line
         FROM pg_index ix JOIN pg_class i ON i.oid = ix.indexrelid JOIN pg_class t ON t.oid = ix.indrelid
        WHERE t.relname = 'idempotency_records' AND NOT ix.indisprimary
          -- partial indexes cannot be declared in schema.prisma (see test/schema-drift.test.ts's allowlist)
          AND ix.indpred IS NULL
        ORDER BY 1`,
    );
    expect(actual.map((a) => a.line).sort()).toEqual(declared);
    expect(declared.filter((l) => l.includes("text_pattern_ops"))).toHaveLength(6);
  });
});

/** One row of MySQL's EXPLAIN (the tabular form: the same columns on MySQL 8 and MariaDB). */
interface MysqlPlanRow {
  id: number | null;
  select_type: string;
  table: string | null;
  type: string | null;
  key: string | null;
  rows: number | bigint | null;
  Extra: string | null;
}

const describeRow = (r: MysqlPlanRow) => `${r.select_type} ${r.table} ${r.type}${r.key ? ` using ${r.key}` : ""} (${r.rows} rows) ${r.Extra ?? ""}`;

describe.skipIf(!usingMysql)("index use on MySQL/MariaDB (utf8mb4_bin, 20k records, after ANALYZE TABLE)", () => {
  let db: TestDatabase;
  // The statements' aliases of idempotency_records (derived tables and union results are <…>).
  const RECORDS = new Set(["r", "a", "b"]);

  beforeAll(async () => {
    db = await createTestDatabase();
    await bulkGenerate(db.sql, { records: 20_000, seed: 9, days: 30, now, batchSize: 5000 });
    // The bulk traffic has five big tenants; add a small one, so a scope prefix can be selective.
    await db.sql.query(
      `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, expires_at, created_at, updated_at)
       SELECT 'partner:zeta', operation, CONCAT(idempotency_key, '-z'), payload_hash, status, expires_at, created_at, updated_at
         FROM idempotency_records ORDER BY id LIMIT 20`,
    );
    await db.sql.query("ANALYZE TABLE idempotency_records, idempotency_events, reconciliation_items");
  });
  afterAll(() => db?.drop());

  async function plan(q: { text: string; values: unknown[] }): Promise<MysqlPlanRow[]> {
    return db.sql.query<MysqlPlanRow>(`EXPLAIN ${q.text}`, q.values);
  }

  async function expectNoFullScan(label: string, q: { text: string; values: unknown[] }) {
    const all = await plan(q);
    const scans = all.filter((r) => r.type === "ALL" && r.table !== null && RECORDS.has(r.table));
    expect(scans.map(describeRow), `${label}:\n  ${all.map(describeRow).join("\n  ")}`).toEqual([]);
    return all;
  }

  it("the tables compare text byte for byte (utf8mb4_bin), so a prefix LIKE can use the plain index", async () => {
    const rows = await db.sql.query<{ c: string }>(
      `SELECT DISTINCT COLLATION_NAME AS c FROM information_schema.COLUMNS
        WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'idempotency_records' AND COLLATION_NAME IS NOT NULL`,
    );
    expect(rows.map((r) => r.c)).toEqual(["utf8mb4_bin"]);
    const [r] = await db.sql.query<{ cs: number; like: number }>(`SELECT 'a' = 'A' COLLATE utf8mb4_bin AS cs, 'ab%' LIKE 'ab\\%' AS "like"`);
    expect({ cs: Number(r.cs), like: Number(r.like) }).toEqual({ cs: 0, like: 1 });
  });

  it("search by every field, exact and prefix (selective, broad, absent), answers from an index", async () => {
    const indexOf: Record<SearchField, string> = {
      key: "idempotency_records_key_pattern_idx",
      scope: "idempotency_records_scope_created_at_idx",
      provider_reference: "idempotency_records_provider_reference_idx",
      provider_request_id: "idempotency_records_provider_request_id_idx",
      correlation_id: "idempotency_records_correlation_id_idx",
      resource_id: "idempotency_records_resource_id_idx",
    };
    let checkedIndex = 0;
    for (const field of FIELDS) {
      const column = SEARCH_FIELDS[field];
      const [{ v }] =
        field === "scope"
          ? [{ v: "partner:zeta" }]
          : await db.sql.query<{ v: string }>(`SELECT ${column} AS v FROM idempotency_records WHERE ${column} IS NOT NULL ORDER BY id LIMIT 1 OFFSET 1234`);
      const cases: [string, SearchInput][] = [
        ["exact", { q: v, field }],
        ["prefix, selective", { q: v.slice(0, v.length - 1), field, match: "prefix" }],
        ["prefix, broad", { q: v.slice(0, 3), field, match: "prefix" }],
        ["prefix, absent", { q: "zz_nothing", field, match: "prefix" }],
        ["exact, page 2", { q: v, field, cursor: { t: "2026-11-29T00:00:00.000000Z", id: 10_000n } }],
      ];
      for (const [label, input] of cases) {
        const q = mysqlSearchSql(input);
        const used = await expectNoFullScan(`${field} ${label} ${input.q}`, q);
        const matches = input.match === "prefix" ? `LEFT(${column}, CHAR_LENGTH(?)) = ?` : `${column} = ?`;
        const values = input.match === "prefix" ? [input.q, input.q] : [input.q];
        const [{ n }] = await db.sql.query<{ n: bigint }>(`SELECT count(*) AS n FROM idempotency_records WHERE ${matches}`, values);
        if (Number(n) <= 100 && !input.cursor) {
          // Few matches: the field's own index, a prefix as an index range.
          // (Many matches: the optimizer may rather walk (created_at, id) newest first and stop at the page.)
          const scan = used.find((r) => r.key === indexOf[field]);
          expect(scan, `${field} ${label} (${n} matches): ${used.map(describeRow).join("; ")}`).toBeTruthy();
          checkedIndex++;
          if (input.match === "prefix") expect(scan!.type).toBe("range");
        }
        // And the answer is right under this collation.
        const rows = await db.sql.query<{ id: bigint }>(q.text, q.values);
        const truth = await db.sql.query<{ id: bigint }>(
          `SELECT id FROM idempotency_records WHERE ${matches}
             ${input.cursor ? `AND (created_at < '2026-11-29 00:00:00' OR (created_at = '2026-11-29 00:00:00' AND id < 10000))` : ""}
            ORDER BY created_at DESC, id DESC LIMIT 51`,
          values,
        );
        expect(rows.map((r) => r.id)).toEqual(truth.map((r) => r.id));
      }
    }
    expect(checkedIndex).toBeGreaterThanOrEqual(FIELDS.length * 2);

    // All six fields at once, and the plain newest-first listing.
    await expectNoFullScan("all fields", mysqlSearchSql({ q: "mp_req_", match: "prefix" }));
    await expectNoFullScan("listing", mysqlSearchSql({}));
    await expectNoFullScan("listing, status filter", mysqlSearchSql({ status: "failed", limit: 200 }));
  });

  it("duplicates over a day and the queue: no full scan of records", async () => {
    const day = { from: new Date(now.getTime() - 86_400_000), to: now };
    const pairs = await expectNoFullScan("duplicates, 1 day", mysqlDuplicatePairsSql({ ...day }));
    // Each record's partners are a probe of the duplicate index, not a scan.
    expect(
      pairs.some((r) => r.table === "b" && r.key === "idempotency_records_duplicate_idx"),
      pairs.map(describeRow).join("\n"),
    ).toBe(true);
    await expectNoFullScan("duplicates, 1 day, one scope", mysqlDuplicatePairsSql({ ...day, scope: "tenant:hooli" }));
    const thresholds = parseStuckThresholds("default=5m,capture_payment=2m");
    await expectNoFullScan("queue", mysqlQueueSql({}, thresholds, now)!);
    await expectNoFullScan("queue, pending, newest first", mysqlQueueSql({ kind: "pending", sort: "age_asc" }, thresholds, now)!);
    await expectNoFullScan("queue, stuck, page 2", mysqlQueueSql({ kind: "stuck", cursor: { t: "2026-11-20T00:00:00.000000Z", id: 5n } }, thresholds, now)!);
  });

  it("the queue's counts read every record from an index alone (covering): no row lookup per open item", async () => {
    const rows = await plan(mysqlQueueCountsSql(parseStuckThresholds("default=5m,capture_payment=2m"), now));
    const records = rows.filter((r) => r.table === "r");
    expect(records.length, rows.map(describeRow).join("\n")).toBeGreaterThan(0);
    expect(records.filter((r) => !/Using index/.test(r.Extra ?? "")).map(describeRow), rows.map(describeRow).join("\n")).toEqual([]);
  });

  it("open reconciliation items of one operation: the processing and pending records read once, from the unsettled index alone; a record looked up only for an item whose record is neither", async () => {
    const q = mysqlOverviewSql(
      overviewReads({ from: new Date(now.getTime() - 86_400_000), to: now, operation: "capture_payment" }, now, parseStuckThresholds("default=5m")),
    ).open;
    const rows = await plan(q);
    const text = rows.map(describeRow).join("\n");
    expect(rows.filter((r) => r.select_type === "DERIVED").map(describeRow), text).toEqual([
      expect.stringMatching(/ r range using idempotency_records_unsettled_status_idx .*Using index/),
    ]);
    expect(rows.filter((r) => r.table === "x").map(describeRow), text).toEqual([expect.stringMatching(/ x eq_ref using PRIMARY /)]);
    // Index lookups on one connection: one into the materialized records per open item, one of
    // the primary key per item whose record is neither processing nor pending, and the ranges.
    const [{ items, settled }] = await db.sql.query<{ items: bigint; settled: bigint }>(
      `SELECT COUNT(*) AS items, SUM(r.status NOT IN ('processing', 'pending')) AS settled
         FROM reconciliation_items i JOIN idempotency_records r ON r.id = i.record_id WHERE i.state IN ('open', 'checking', 'needs_manual')`,
    );
    expect(Number(items)).toBeGreaterThan(10);
    const lookups = await db.withSession(async (s) => {
      const readKey = async () => Number((await s.query<{ Value: string }>(`SHOW SESSION STATUS LIKE 'Handler_read_key'`))[0].Value);
      const before = await readKey();
      await s.query(q.text, q.values);
      return (await readKey()) - before;
    });
    expect(lookups).toBeLessThanOrEqual(Number(items) + Number(settled ?? 0) + 4);
  });

  it("the queue's reconciliation kind starts from the open items: the processing and pending records read once from the unsettled index; a record looked up only for an item whose record is neither", async () => {
    const q = mysqlQueueSql({ kind: "reconciliation" }, parseStuckThresholds("default=5m"), now)!;
    const rows = await plan(q);
    const text = rows.map(describeRow).join("\n");
    // The processing and pending ids from a status index alone (InnoDB's secondary indexes carry the id).
    expect(rows.filter((r) => r.table === "u").map(describeRow), text).toEqual([
      expect.stringMatching(/ u range using idempotency_records_\w*status\w*_idx .*Using index/),
    ]);
    // Records only by primary key: the branch's lookups and the page's join.
    expect(rows.filter((r) => r.table === "r").length, text).toBeGreaterThan(1);
    expect(rows.filter((r) => r.table === "r" && !/ r eq_ref using PRIMARY /.test(describeRow(r))).map(describeRow), text).toEqual([]);
    const [{ items, settled }] = await db.sql.query<{ items: bigint; settled: bigint }>(
      `SELECT COUNT(*) AS items, SUM(r.status NOT IN ('processing', 'pending')) AS settled
         FROM reconciliation_items i JOIN idempotency_records r ON r.id = i.record_id WHERE i.state IN ('open', 'checking', 'needs_manual')`,
    );
    expect(Number(items)).toBeGreaterThan(10);
    // Read from the records' side in (updated_at, id) order, the branch walked every settled record.
    const lookups = await db.withSession(async (s) => {
      const reads = async () =>
        (await s.query<{ Variable_name: string; Value: string }>(`SHOW SESSION STATUS LIKE 'Handler_read%'`))
          .filter((r) => ["Handler_read_key", "Handler_read_next", "Handler_read_first"].includes(r.Variable_name))
          .reduce((n, r) => n + Number(r.Value), 0);
      const before = await reads();
      await s.query(q.text, q.values);
      return (await reads()) - before;
    });
    const [{ unsettled }] = await db.sql.query<{ unsettled: bigint }>(
      `SELECT COUNT(*) AS unsettled FROM idempotency_records WHERE status IN ('processing', 'pending')`,
    );
    expect(lookups, text).toBeLessThanOrEqual(2 * Number(items) + Number(unsettled) + Number(settled ?? 0) + 10);
  });

  it("the overview filtered to a scope counts the scope's records from one index alone (covering)", async () => {
    const reads = overviewReads({ from: new Date(now.getTime() - 86_400_000), to: now, scope: "partner:zeta" }, now, parseStuckThresholds("default=5m"));
    const rows = await plan(mysqlRecordTotalsSql(reads));
    // The other rows are the derived tables (the pass's few groups, the names) and the names' UNION.
    const records = rows.filter((r) => r.table !== null && RECORDS.has(r.table));
    expect(records.map(describeRow), rows.map(describeRow).join("\n")).toEqual([
      expect.stringMatching(/ r ref using idempotency_records_scope_counts_idx .*Using index/),
    ]);
    // A small scope's open reconciliation items from its records' side: the ids from a scope index (InnoDB's carry the key).
    const open = await plan(mysqlOverviewSql(reads).openFromRecords!);
    expect(open.map(describeRow), open.map(describeRow).join("\n")).toEqual([
      expect.stringMatching(/ r ref using idempotency_records_scope_\w+ .*Using index/),
      expect.stringMatching(/ i ref using reconciliation_items_record_id_idx /),
    ]);
    // A large scope's processing and pending records: the unsettled index (the scope its last column), no row lookups.
    const sql = mysqlOverviewSql(
      overviewReads({ from: new Date(now.getTime() - 86_400_000), to: now, scope: "tenant:acme" }, now, parseStuckThresholds("default=5m")),
    );
    for (const [name, q] of [["active (and the pending ages)", sql.active]] as const) {
      const rows = await plan(q);
      expect(rows.map(describeRow), `${name}:\n${rows.map(describeRow).join("\n")}`).toEqual([
        expect.stringMatching(/ r (range|ref) using idempotency_records_unsettled_status_idx .*Using index/),
      ]);
      // Grouped in the index's order: no temporary table (a pending age bucket in the GROUP BY took one).
      expect(rows.filter((r) => /temporary|filesort/.test(r.Extra ?? "")).map(describeRow), name).toEqual([]);
    }
  });

  it("the Expiry page reads a held scope's records by the scope, from the held scopes, index-only", async () => {
    await db.sql.query(`INSERT INTO legal_holds (scope, reason, set_by_label) VALUES ('tenant:acme', 'explain test', 'test')`);
    try {
      await db.sql.query("ANALYZE TABLE legal_holds");
      const rules = [{ id: "1", operation: null, keepRecordsDays: 0, keepEventsDays: 30, enabled: true }];
      const rows = await plan(mysqlExpiredSql({ now, rules, part: "protected" }));
      const records = rows.filter((r) => ["r", "x", "u"].includes(r.table ?? ""));
      expect(records.filter((r) => r.type === "ALL").map(describeRow), rows.map(describeRow).join("\n")).toEqual([]);
      // The held scopes first (STRAIGHT_JOIN), then the scope's range of the scope-counts index, which
      // carries the primary key: no record read. The records probed by id are the other protections' only.
      const scoped = rows.findIndex((r) => r.key === "idempotency_records_scope_counts_idx");
      expect(rows[scoped] && describeRow(rows[scoped]), rows.map(describeRow).join("\n")).toMatch(
        / r ref using idempotency_records_scope_counts_idx .*Using index/,
      );
      expect(rows[scoped - 1]?.table, rows.map(describeRow).join("\n")).toBe("h");
      const probed = rows.filter((r) => r.table === "r" && r.key === "PRIMARY");
      expect(probed, rows.map(describeRow).join("\n")).toHaveLength(1);
    } finally {
      await db.sql.query(`DELETE FROM legal_holds WHERE reason = 'explain test'`);
    }
  });

  it("the Expiry page's expired processing and pending records: a range of (status, expires_at) alone, no row lookup each", async () => {
    // Stuck records past their expiry, as a writer leaves them (the bulk traffic's unsettled ones have not expired).
    await db.sql.query(
      `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, legal_hold, expires_at, created_at, updated_at)
       SELECT 'stuck:expired', operation, CONCAT(idempotency_key, '-x'), payload_hash, IF(id % 2 = 0, 'processing', 'pending'), id % 3 = 0,
              ? - INTERVAL 3 DAY, created_at, created_at
         FROM idempotency_records ORDER BY id LIMIT 40`,
      [now],
    );
    try {
      await db.sql.query("ANALYZE TABLE idempotency_records");
      const rules = [
        { id: "1", operation: null, keepRecordsDays: 0, keepEventsDays: 30, enabled: true },
        { id: "2", operation: "capture_payment", keepRecordsDays: 2, keepEventsDays: 30, enabled: true },
      ];
      const rows = await plan(mysqlExpiredSql({ now, rules, part: "unsettled" }));
      const records = rows.filter((r) => r.table === "r");
      expect(records.map(describeRow), rows.map(describeRow).join("\n")).toEqual([
        expect.stringMatching(/ r range using idempotency_records_status_expires_at_idx .*Using index/),
      ]);
    } finally {
      await db.sql.query(`DELETE FROM idempotency_records WHERE scope = 'stuck:expired'`);
    }
  });

  // Last in this block: it rolls the events up (the census too), which the statements above do not read.
  it("the overview's series without a scope reads the totals over every scope (ADR 0019): a row per bucket, operation and kind, in key order", async () => {
    await db.withSession((s) => refreshRollups(s, { sweepRecords: 0 }));
    await db.sql.query("ANALYZE TABLE event_rollups, event_rollup_tiers, event_rollup_totals");
    const hi = Math.floor(now.getTime() / 900_000) * 900_000;
    const span: [number, number] = [hi - 86_400_000, hi];
    for (const grain of [900, 3600]) {
      const q = mysqlCountsSql({ tiers: [{ grainSeconds: grain, spans: [span] }], raw: [], unrolled: null }, {}, grain);
      const rows = await plan(q);
      const text = `grain ${grain}:\n${rows.map(describeRow).join("\n")}`;
      // One range of the primary key, grouped as it reads: no temporary table for the branch.
      expect(rows.filter((r) => r.table === "r").map(describeRow), text).toEqual([expect.stringMatching(/ r range using PRIMARY /)]);
      expect(rows.filter((r) => r.table === "r" && /temporary|filesort/.test(r.Extra ?? "")).map(describeRow), text).toEqual([]);
      // The rows it reads: one per bucket, operation and kind — not one per scope as well, as the tier holds them.
      const [analyzed] = await db.sql.query<Record<string, string>>(`ANALYZE FORMAT=JSON ${q.text}`, q.values);
      const json = Object.values(analyzed)[0];
      const read: number[] = [];
      const walk = (n: unknown): void => {
        if (Array.isArray(n)) return n.forEach(walk);
        if (!n || typeof n !== "object") return;
        const t = n as { table_name?: string; r_rows?: number };
        if (t.table_name === "r" && typeof t.r_rows === "number") read.push(t.r_rows);
        Object.values(n).forEach(walk);
      };
      walk(JSON.parse(json));
      const [{ groups, tierRows }] = await db.sql.query<{ groups: bigint; tierRows: bigint }>(
        `SELECT COUNT(DISTINCT bucket, operation, kind) AS groups, COUNT(*) AS tierRows FROM event_rollup_tiers
          WHERE grain_seconds = ? AND bucket >= ? AND bucket < ?`,
        [grain, new Date(span[0]), new Date(span[1])],
      );
      expect(Number(tierRows), text).toBeGreaterThan(Number(groups)); // several scopes per group, or the check says nothing
      expect(read, json).toEqual([Number(groups)]);
    }
  });
});
