/**
 * Retention purge benchmark against a real database server (a benchmark, not a timed test):
 * PostgreSQL, or MySQL/MariaDB for a mysql:// URL.
 *
 *   DATABASE_URL=postgresql://… npm run bench:purge -- [--records 200000] [--events-per-record 3] [--days 60]
 *       [--batch-size 1000] [--pause-ms 20] [--writers 4] [--baseline-seconds 10] [--fill-concurrency N] [--seed 1] [--keep]
 *       [--raw-commit]
 *   DATABASE_URL=mysql://root@127.0.0.1:3306/x npm run bench:purge -- …   (the same on MariaDB)
 *
 * 1. A throwaway database `ic_bench_<timestamp>` (or BENCH_DATABASE_URL as is), filled with
 *    lib/demo/bulk.ts (records spread over --days days, 3 events each), events rolled up,
 *    VACUUM (ANALYZE) + CHECKPOINT (MySQL: ANALYZE TABLE); policies: default — records 7 days after expiry, events
 *    30 days; capture_payment — 14 and 30 days.
 * 2. EXPLAIN of the purge's batch statements at that size (which indexes they use).
 * 3. A writer — `--writers` lanes of begin + complete through the protocol library
 *    (IdempotencyStore, new keys) — measured three times: alone, during a raw single
 *    `DELETE … WHERE <eligibility>` of records then events (one transaction, rolled back
 *    so the data stays), and during the purge (lib/retention: batches of --batch-size in
 *    short transactions, --pause-ms between them). Latency p50/p95/p99 side by side.
 * 4. Purge throughput (rows/s) next to the raw DELETE's, for the same as_of and policies
 *    (so the same rows: the counts are compared).
 *
 * --raw-commit: the raw DELETE commits instead, and the writer is measured until the server has
 * also cleaned up after it — MySQL/MariaDB: until InnoDB's history list is back to its length
 * before the DELETE (its background purge has removed the delete-marked rows, work a rolled-back
 * DELETE never causes and a purge batch's commit always does); PostgreSQL: a VACUUM of the two
 * tables. The batched purge then has nothing left to do and is not run.
 */
import { availableParallelism } from "node:os";
import { randomBytes, randomUUID } from "node:crypto";
import type { Database } from "@/lib/db/client";
import { bulkGenerate } from "@/lib/demo/bulk";
import { IdempotencyStore } from "@/lib/idempotency";
import { countEligible } from "@/lib/retention/dry-run";
import * as pgEligibility from "@/lib/retention/eligibility.postgres";
import * as mysqlEligibility from "@/lib/retention/eligibility.mysql";
import { eventBatchSize } from "@/lib/retention/config";
import { loadRules, type PolicyRule } from "@/lib/retention/rules";
import { startPurge } from "@/lib/retention/runs";
import * as pgPurge from "@/lib/retention/purge-store.postgres";
import * as mysqlPurge from "@/lib/retention/purge-store.mysql";
import { windowFor, workRun } from "@/lib/retention/worker";
import { refreshRollups } from "@/lib/stats/rollups";
import { fmt, parseBenchArgs, runBench, settle, table, withBenchDatabase } from "./common";
import { MYSQL } from "@/lib/db/dialect";
import { Params } from "@/lib/db/params";
import { execute, type SqlExecutor } from "@/lib/db/sql";

interface Args {
  records: number;
  eventsPerRecord: number;
  days: number;
  batchSize: number;
  pauseMs: number;
  writers: number;
  baselineSeconds: number;
  fillConcurrency: number;
  seed: number;
  keep: boolean;
  rawCommit: boolean;
}

const USAGE =
  "usage: npm run bench:purge -- [--records N (200000)] [--events-per-record N (3)] [--days N (60)] [--batch-size N (1000)] [--pause-ms N (20)]\n" +
  "       [--writers N (4)] [--baseline-seconds N (10)] [--fill-concurrency N] [--seed N] [--keep] [--raw-commit]";

function parseArgs(argv: string[]): Args {
  const defaults: Args = {
    records: 200_000,
    eventsPerRecord: 3,
    days: 60,
    batchSize: 1000,
    pauseMs: 20,
    writers: 4,
    baselineSeconds: 10,
    fillConcurrency: Math.min(4, availableParallelism()),
    seed: 1,
    keep: false,
    rawCommit: false,
  };
  const numeric: Record<string, keyof Args> = {
    "--records": "records",
    "--events-per-record": "eventsPerRecord",
    "--days": "days",
    "--batch-size": "batchSize",
    "--pause-ms": "pauseMs",
    "--writers": "writers",
    "--baseline-seconds": "baselineSeconds",
    "--fill-concurrency": "fillConcurrency",
    "--seed": "seed",
  };
  return parseBenchArgs(argv, defaults, numeric, USAGE, ["pauseMs", "seed"], { "--raw-commit": "rawCommit" });
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;

interface WriterStats {
  ops: number;
  seconds: number;
  latencies: number[];
  errors: number;
  /** CPU the bench's process spent meanwhile (the writer's lanes, and the purge's batches when it runs here), seconds. */
  cpuSeconds: number;
}

/** `lanes` concurrent begin + complete loops until `until` resolves. */
async function writer(db: Database, lanes: number, label: string, until: Promise<unknown>): Promise<WriterStats> {
  const store = new IdempotencyStore(db.prisma);
  const latencies: number[] = [];
  let errors = 0;
  let stop = false;
  void until.finally(() => (stop = true));
  const started = performance.now();
  const cpu = process.cpuUsage();
  let n = 0;
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (!stop) {
        const i = n++;
        const t = performance.now();
        try {
          const b = await store.begin({
            scope: `tenant:bench${i % 5}`,
            operation: "capture_payment",
            key: `purge-bench-${label}-${i}-${randomUUID()}`,
            payload: { order_id: `ord_${i}`, amount_minor: 1000 + (i % 5000), currency: "EUR" },
            ttlSeconds: 86400,
            provider: "mockpay",
            amountMinor: 1000 + (i % 5000),
            currency: "EUR",
          });
          if (b.outcome !== "owner") throw new Error(`expected to own the key, got ${b.outcome}`);
          await store.complete(b.record.id, { code: 201, headers: [["content-type", "application/json"]], body: `{"id":"pay_${i}"}` });
          latencies.push(performance.now() - t);
        } catch (err) {
          errors++;
          if (errors <= 3) console.warn(`  writer error: ${err instanceof Error ? err.message : err}`);
        }
      }
    }),
  );
  const used = process.cpuUsage(cpu);
  return { ops: latencies.length, seconds: (performance.now() - started) / 1000, latencies, errors, cpuSeconds: (used.user + used.system) / 1e6 };
}

/**
 * The scan nodes of a statement's plan (EXPLAIN, not executed): PostgreSQL's JSON plan, MySQL's
 * table rows; `batch`: as a purge batch gets it (PostgreSQL: in a transaction under BATCH_PLANS).
 */
async function planOf(db: Database, text: string, values: unknown[], batch = false): Promise<string> {
  if (db.dialect.name === "mysql") {
    const rows = await db.sql.query<{ table: string | null; type: string | null; key: string | null }>(`EXPLAIN ${text}`, values);
    return [...new Set(rows.map((r) => `${r.type ?? "?"} ${r.key ?? r.table ?? ""}`.trim()))].join("; ");
  }
  const [row] = await db.withSession(async (s) => {
    if (!batch) return s.query<{ "QUERY PLAN": { Plan: PlanNode }[] }>(`EXPLAIN (FORMAT JSON) ${text}`, values);
    await s.exec("BEGIN");
    try {
      await s.exec(pgPurge.BATCH_PLANS);
      return await s.query<{ "QUERY PLAN": { Plan: PlanNode }[] }>(`EXPLAIN (FORMAT JSON) ${text}`, values);
    } finally {
      await s.exec("ROLLBACK");
    }
  });
  const scans: string[] = [];
  const walk = (n: PlanNode) => {
    if (n["Node Type"].includes("Scan"))
      scans.push(`${n["Node Type"]}${n["Index Name"] ? ` ${n["Index Name"]}` : n["Relation Name"] ? ` ${n["Relation Name"]}` : ""}`);
    n.Plans?.forEach(walk);
  };
  walk(row["QUERY PLAN"][0].Plan);
  return [...new Set(scans)].join("; ");
}
interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Index Name"?: string;
  Plans?: PlanNode[];
}

async function explainBatches(db: Database, rules: PolicyRule[], asOf: Date, batchSize: number) {
  const mysql = db.dialect.name === "mysql";
  console.log(`\nEXPLAIN of the purge's statements at this size (${mysql ? "table accesses" : "scan nodes"}):`);
  const rec = (mysql ? mysqlPurge : pgPurge).recordCandidatesSql(rules, asOf, 0n, windowFor(batchSize), batchSize);
  console.log(`  records batch (${mysql ? "candidates" : "SELECT … FOR UPDATE"}): ${await planOf(db, rec.text, rec.values, true)}`);
  if (mysql) {
    const ev = mysqlPurge.eventBatchBoundsSql(rules, asOf, 0n, windowFor(batchSize), eventBatchSize(batchSize));
    console.log(`  events batch (candidates counted): ${await planOf(db, ev.text, ev.values)}`);
    const evDelete = mysqlPurge.deleteEligibleEventsUpToSql(rules, asOf, 0n, windowFor(batchSize));
    console.log(`  events batch (DELETE of the window): ${await planOf(db, evDelete.text, evDelete.values)}`);
    const ids = (await db.sql.query<{ id: bigint }>(rec.text, rec.values)).map((r) => BigInt(r.id));
    const del = mysqlPurge.deleteStillEligibleSql(rules, asOf, ids);
    console.log(`  records batch (DELETE of ${fmt(ids.length)} candidates): ${await planOf(db, del.text, del.values)}`);
  } else {
    const ev = pgPurge.eventDeleteSql(rules, asOf, 0n, windowFor(batchSize), batchSize);
    // EXPLAIN without ANALYZE does not execute the DELETE.
    console.log(`  events batch (DELETE): ${await planOf(db, ev.text, ev.values, true)}`);
  }
  for (const rule of rules) {
    const c = new Params(db.dialect);
    const eligible = mysql ? mysqlEligibility.recordEligibleSql : pgEligibility.recordEligibleSql;
    const q = `SELECT count(*) FROM idempotency_records r WHERE ${eligible(rules, asOf, c, "r", rule)}`;
    console.log(`  dry-run count, policy ${rule.operation ?? "(default)"}: ${await planOf(db, q, c.values)}`);
  }
}

const settledBy = (db: Database) => (db.dialect.name === "mysql" ? "" : "VACUUM (ANALYZE) + ");

/** The raw SQL floor: one DELETE of every eligible row of `table` (in the caller's transaction); rows deleted. */
async function rawDelete(db: Database, s: SqlExecutor, table: "idempotency_records" | "idempotency_events", rules: PolicyRule[], asOf: Date): Promise<number> {
  const records = table === "idempotency_records";
  if (db.dialect.name === "mysql") {
    const p = new Params(MYSQL);
    const eligible = records ? mysqlEligibility.recordEligibleSql(rules, asOf, p, "target") : mysqlEligibility.eventEligibleSql(rules, asOf, p, "target");
    return (await execute(s, `DELETE target FROM ${table} target WHERE ${eligible}`, p.values)).affectedRows;
  }
  const p = new Params();
  const eligible = records ? pgEligibility.recordEligibleSql(rules, asOf, p, "t") : pgEligibility.eventEligibleSql(rules, asOf, p, "t");
  const [row] = await s.query<{ n: bigint }>(`WITH d AS (DELETE FROM ${table} t WHERE ${eligible} RETURNING 1) SELECT count(*)::bigint AS n FROM d`, p.values);
  return Number(row.n);
}

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  // The purge audits its start and finish: a throwaway database's chain gets a throwaway key.
  process.env.AUDIT_HMAC_KEY ??= randomBytes(48).toString("base64url");
  return withBenchDatabase("bench:purge", { keep: args.keep, poolSize: args.writers + args.fillConcurrency + 6 }, async (db) => {
    console.log(`\nfilling ${fmt(args.records)} records × ${args.eventsPerRecord} events over ${args.days} days…`);
    const fill = await bulkGenerate(db.sql, {
      records: args.records,
      eventsPerRecord: args.eventsPerRecord,
      days: args.days,
      seed: args.seed,
      concurrency: args.fillConcurrency,
    });
    console.log(
      `filled ${fmt(fill.records)} records + ${fmt(fill.events)} events in ${(fill.elapsedMs / 1000).toFixed(1)} s; status mix ${JSON.stringify(fill.byStatus)}`,
    );
    await db.withSession((s) => refreshRollups(s));
    await db.sql.query(
      `INSERT INTO retention_policies (operation, keep_records_days, keep_events_days, updated_by_label) VALUES (NULL, 7, 30, 'bench'), ('capture_payment', 14, 30, 'bench')`,
    );
    console.log(`  ${settledBy(db)}${await settle(db, ["idempotency_records", "idempotency_events", "reconciliation_items"])}`);

    const rules = await loadRules(db.sql);
    const asOf = new Date();
    const eligible = await countEligible(db.sql, rules, asOf);
    console.log(
      `policies: default records 7 d after expiry / events 30 d; capture_payment 14 d / 30 d → eligible as of now: ${fmt(eligible.records)} records, ${fmt(eligible.events)} events`,
    );
    await explainBatches(db, rules, asOf, args.batchSize);

    // 1. The writer alone.
    console.log(`\nwriter alone for ${args.baselineSeconds} s (${args.writers} lanes of begin + complete)…`);
    const baseline = await writer(db, args.writers, "base", new Promise((r) => setTimeout(r, args.baselineSeconds * 1000)));

    // 2. A raw single DELETE of everything eligible (records, then events) in one transaction, rolled
    //    back (so the purge has the same rows), or with --raw-commit committed and cleaned up after.
    console.log(
      args.rawCommit
        ? `raw single DELETE … WHERE <eligibility> (records, then events; one transaction, committed), the writer running until ${db.dialect.name === "mysql" ? "InnoDB's history list is back to its length before" : "a VACUUM of both tables is done"}…`
        : `raw single DELETE … WHERE <eligibility> (records, then events; one transaction, rolled back) with the writer running…`,
    );
    let raw = { records: 0, events: 0, recordsMs: 0, eventsMs: 0, cleanUpMs: 0 };
    const rawDone = db.withSession(async (s) => {
      const history = await historyLength(db);
      await s.exec("BEGIN");
      let committed = false;
      try {
        let t = performance.now();
        const records = await rawDelete(db, s, "idempotency_records", rules, asOf);
        const recordsMs = performance.now() - t;
        t = performance.now();
        const events = await rawDelete(db, s, "idempotency_events", rules, asOf);
        if (args.rawCommit) {
          await s.exec("COMMIT");
          committed = true;
        }
        raw = { records, events, recordsMs, eventsMs: performance.now() - t, cleanUpMs: 0 };
      } finally {
        if (!committed) await s.exec("ROLLBACK");
      }
      if (!args.rawCommit) return;
      const t = performance.now();
      await cleanUpAfter(db, history);
      raw.cleanUpMs = performance.now() - t;
    });
    const duringRaw = await writer(db, args.writers, "raw", rawDone);
    await rawDone;
    console.log(`  ${settledBy(db)}${await settle(db, ["idempotency_records", "idempotency_events", "reconciliation_items", "outbox_messages"])}`);

    // 3. The purge, with the writer running (nothing left after a committed raw DELETE).
    const purge = args.rawCommit ? null : await purgeWithWriter(db, args, asOf, raw.records);
    console.log(`\nwriter latency, ms (begin + complete through IdempotencyStore, ${args.writers} lanes)`);
    const col = (w: WriterStats) => {
      const s = [...w.latencies].sort((a, b) => a - b);
      return [
        pct(s, 50).toFixed(2),
        pct(s, 95).toFixed(2),
        pct(s, 99).toFixed(2),
        fmt(w.ops / w.seconds),
        `${fmt(w.ops)} (${fmt(w.errors)})`,
        w.seconds.toFixed(1),
        `${((100 * w.cpuSeconds) / w.seconds).toFixed(0)} %`,
      ];
    };
    const columns = [col(baseline), col(duringRaw), ...(purge ? [col(purge.writer)] : [])];
    table(
      [
        "",
        "no purge",
        args.rawCommit ? "raw single DELETE, committed, and its clean-up" : "during raw single DELETE",
        ...(purge ? ["during purge (batched)"] : []),
      ],
      ["p50", "p95", "p99", "ops/s", "ops (errors)", "over s", "bench process CPU (of one core)"].map((label, i) => [label, ...columns.map((c) => c[i])]),
    );

    const rawSeconds = (raw.recordsMs + raw.eventsMs) / 1000;
    console.log(`\npurge throughput vs the raw SQL equivalent (same as_of and policies)`);
    const rawRows = [
      [
        `raw single DELETE (1 transaction${args.rawCommit ? ", committed" : ""})`,
        fmt(raw.records),
        fmt(raw.events),
        rawSeconds.toFixed(1),
        fmt((raw.records + raw.events) / rawSeconds),
        `${(rawSeconds * 1000).toFixed(0)} ms`,
      ],
    ];
    if (args.rawCommit) {
      const withCleanUp = rawSeconds + raw.cleanUpMs / 1000;
      rawRows.push(["  … and the server's clean-up after it", "", "", withCleanUp.toFixed(1), fmt((raw.records + raw.events) / withCleanUp), ""]);
    }
    if (purge) {
      const { run: done, seconds, cleanUpSeconds, batchMs } = purge;
      rawRows.push([
        `purge: ${fmt(done.batches)} batches (${done.state})`,
        fmt(Number(done.recordsDeleted)),
        fmt(Number(done.eventsDeleted)),
        seconds.toFixed(1),
        fmt((Number(done.recordsDeleted) + Number(done.eventsDeleted)) / seconds),
        `${(batchMs[batchMs.length - 1] ?? 0).toFixed(0)} ms (batch p50 ${pct(batchMs, 50).toFixed(0)} ms incl. pause)`,
      ]);
      if (db.dialect.name === "mysql") {
        const all = seconds + cleanUpSeconds;
        const rows = Number(done.recordsDeleted) + Number(done.eventsDeleted);
        rawRows.push([`  … and InnoDB's clean-up after its last batch`, "", "", all.toFixed(1), fmt(rows / all), ""]);
      }
    }
    table(["", "records", "events", "seconds", "rows/s", "longest transaction"], rawRows);
    if (purge) {
      const same = Number(purge.run.recordsDeleted) === raw.records && Number(purge.run.eventsDeleted) === raw.events;
      console.log(`same rows as the raw DELETE: ${same ? "yes" : "NO"}; pauses: ${fmt(purge.run.batches)} × ${args.pauseMs} ms at most`);
    } else {
      console.log(`the batched purge was not run: the committed raw DELETE left it nothing`);
    }
  });
}

/** The purge of everything eligible as of `asOf` (lib/retention's worker, in this process) with the writer running. */
async function purgeWithWriter(db: Database, args: Args, asOf: Date, expectedRecords: number) {
  console.log(
    `purge (batches of ${fmt(args.batchSize)} records, ${fmt(eventBatchSize(args.batchSize))} events; ${args.pauseMs} ms pause) with the writer running…`,
  );
  const run = await startPurge(
    db.prisma,
    { type: "system", label: "bench:purge" },
    { reason: "bench", confirm: String(expectedRecords), asOf, batchSize: args.batchSize, pauseMs: args.pauseMs },
    { workerId: "bench", leaseSeconds: 60 },
  );
  const history = await historyLength(db);
  const t0 = performance.now();
  const batchMs: number[] = [];
  let last = performance.now();
  const purged = workRun(db, run.id, {
    workerId: "bench",
    log: { log: () => {}, warn: (l) => console.warn(`  ${l}`) },
    onBatch: () => {
      const now = performance.now();
      batchMs.push(now - last);
      last = now;
    },
  });
  const during = await writer(db, args.writers, "purge", purged);
  const out = await purged;
  const seconds = (performance.now() - t0) / 1000;
  // What InnoDB still had to remove when the last batch committed (the writer has stopped).
  const t1 = performance.now();
  if (db.dialect.name === "mysql") await cleanUpAfter(db, history);
  return { writer: during, run: out.run!, seconds, cleanUpSeconds: (performance.now() - t1) / 1000, batchMs: batchMs.sort((a, b) => a - b) };
}

/**
 * InnoDB's history list length: committed transactions whose undo logs (old row versions,
 * delete-marked rows) its background purge has not processed yet; 0 on PostgreSQL.
 */
async function historyLength(db: Database): Promise<number> {
  if (db.dialect.name !== "mysql") return 0;
  const [row] = await db.sql.query<{ n: bigint | number }>(`SELECT count AS n FROM information_schema.INNODB_METRICS WHERE name = 'trx_rseg_history_len'`);
  return Number(row?.n ?? 0);
}

/**
 * Waits for the server to clean up after a committed DELETE. MySQL: InnoDB removes the
 * delete-marked rows in the background, in commit order, so once the history list is back to
 * (about) its length before the DELETE — the writer's own commits keep it from zero — that DELETE's
 * rows are gone; at most 10 minutes. PostgreSQL: the VACUUM autovacuum would run later, now.
 */
async function cleanUpAfter(db: Database, before: number): Promise<void> {
  if (db.dialect.name !== "mysql") {
    for (const table of ["idempotency_records", "idempotency_events"]) await db.sql.query(`VACUUM ${table}`);
    return;
  }
  const deadline = performance.now() + 600_000;
  while ((await historyLength(db)) > before + 100) {
    if (performance.now() > deadline) throw new Error("InnoDB's history list did not come back within 10 minutes");
    await new Promise((r) => setTimeout(r, 100));
  }
}

runBench(main);
