/**
 * Read-side benchmark against a real database server (a benchmark, not a timed test): PostgreSQL,
 * or MySQL/MariaDB for a mysql:// URL (the floors in each dialect's spelling: bench/read-floors.ts).
 *
 *   DATABASE_URL=postgresql://… npm run bench:read -- [--records 10000000] [--events-per-record 3]
 *   DATABASE_URL=mysql://root@127.0.0.1:3306/x npm run bench:read -- …   (the same on MariaDB)
 *       [--fill-concurrency N] [--runs 3] [--seed 1] [--keep]
 *   BENCH_DATABASE_URL=postgresql://…/ic_bench_x npm run bench:read    # measure an already filled database again
 *
 * 1. Creates a throwaway database `ic_bench_<timestamp>` on the DATABASE_URL server (or uses
 *    BENCH_DATABASE_URL as is: never created nor dropped, filled only if it has no records),
 *    migrates it, loads N records and their events with lib/demo/bulk.ts (default 10,000,000
 *    records × 3 events = 30,000,000 events), adds a 10,000-record tenant through the writers'
 *    library (SMALL_SCOPE; also to a BENCH_DATABASE_URL without it), rolls the events up (lib/stats/rollups.ts),
 *    then VACUUM (ANALYZE) and CHECKPOINT (MySQL: ANALYZE TABLE) so every variant starts from the same state.
 * 2. Prints side by side, median of --runs after one warm-up run each:
 *    - the overview as the API computes it (lib/stats/overview.ts overviewStats, the function
 *      GET /api/v1/stats/overview calls) vs the same numbers by raw SQL over
 *      idempotency_events/idempotency_records, plus countEvents (lib/stats/rollups.ts), for
 *      24 h / 7 d / 30 d and with filters; the numbers of both are compared;
 *    - a per-statement breakdown of the overview (EXPLAIN ANALYZE; MariaDB: ANALYZE FORMAT=JSON —
 *      time, scans, rows read);
 *    - search (lib/records/search.ts) vs hand-written SQL, and (PostgreSQL) the same SQL with index
 *      scans disabled (what the indexes buy);
 *    - the record-side counts (by status, expired not purged) vs the plain GROUP BY;
 *    - the queue (lib/records/queue.ts): its first page and its tab counts vs hand-written SQL
 *      giving the screen the same rows and numbers, likewise;
 *    - the Expiry page (lib/stats/expiry.ts) vs hand-written SQL for its numbers;
 *    - GET /api/metrics (lib/stats/metrics.ts) vs raw counts;
 *    - refreshRollups on fresh traffic (1k/10k/50k new events): the refresher's cost per tick
 *      (throwaway database only: it adds events).
 * 3. Drops the throwaway database unless --keep.
 *
 * Timings on a shared or small machine are noisy; compare the columns of one run, and read
 * the rows-read column of the breakdown for what grows with the tables.
 */
import { availableParallelism } from "node:os";
import type { Database } from "@/lib/db/client";
import { byDialect } from "@/lib/db/dialect";
import { paramList, type Statement } from "@/lib/db/params";
import { bulkGenerate } from "@/lib/demo/bulk";
import { databaseSize, fmt, parseBenchArgs, runBench, settle, table, withBenchDatabase, withDeferredIndexes } from "./common";
import { readSideConfig } from "@/lib/records/config";
import { queueSummary, stuckAndPending } from "@/lib/records/queue";
import { queueStore } from "@/lib/records/queue-store";
import { searchRecords } from "@/lib/records/search";
import { expiryStats } from "@/lib/stats/expiry";
import { renderMetrics } from "@/lib/stats/metrics";
import { inSnapshot, overviewReads, overviewStats, seriesStep, type OverviewInput } from "@/lib/stats/overview";
import { countEvents, refreshRollups, verifyRecordCensus } from "@/lib/stats/rollups";
import * as pgCensus from "@/lib/stats/census-store.postgres";
import * as mysqlCensus from "@/lib/stats/census-store.mysql";
import * as pgRollups from "@/lib/stats/rollup-store.postgres";
import * as mysqlRollups from "@/lib/stats/rollup-store.mysql";
import * as pgStats from "@/lib/stats/store.postgres";
import * as mysqlStats from "@/lib/stats/store.mysql";
import { IdempotencyStore } from "@/lib/idempotency";
import { readFloors, type ReadFloors } from "./read-floors";

interface Args {
  records: number;
  eventsPerRecord: number;
  fillConcurrency: number;
  runs: number;
  seed: number;
  /** Event ids per refreshRollups transaction for the initial roll-up. */
  rollupBatch: number;
  /** Each tenant but tenant:acme split into this many scopes (its records and their events): a console with thousands of scopes. */
  scopesPerTenant: number;
  keep: boolean;
}

const USAGE =
  "usage: npm run bench:read -- [--records N (default 10000000)] [--events-per-record N (3)] [--fill-concurrency N] [--runs N (3)] [--seed N] [--rollup-batch N (500000)] [--scopes-per-tenant N (1)] [--keep]";

function parseArgs(argv: string[]): Args {
  const defaults: Args = {
    records: 10_000_000,
    eventsPerRecord: 3,
    fillConcurrency: Math.min(4, availableParallelism()),
    runs: 3,
    seed: 1,
    rollupBatch: 500_000,
    scopesPerTenant: 1,
    keep: false,
  };
  const numeric: Record<string, keyof Args> = {
    "--records": "records",
    "--events-per-record": "eventsPerRecord",
    "--fill-concurrency": "fillConcurrency",
    "--runs": "runs",
    "--seed": "seed",
    "--rollup-batch": "rollupBatch",
    "--scopes-per-tenant": "scopesPerTenant",
  };
  return parseBenchArgs(argv, defaults, numeric, USAGE, ["seed"]);
}

const ms = (n: number) => (n >= 100 ? fmt(n) : n.toFixed(1));

/** Median wall time of `runs` runs after one warm-up; the last result is returned too. */
async function time<T>(runs: number, fn: () => Promise<T>): Promise<{ ms: number; result: T }> {
  let result = await fn();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    result = await fn();
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  return { ms: times[Math.floor(times.length / 2)], result };
}

/** The console's own statements in the database's dialect (for the per-statement breakdowns). */
function dialectSql(db: Database) {
  return byDialect(db, {
    postgres: {
      overviewSql: pgStats.overviewSql,
      recordCensusSql: pgCensus.recordCensusSql,
      eventCountsSql: pgRollups.eventCountsSql,
    },
    mysql: {
      overviewSql: mysqlStats.overviewSql,
      recordCensusSql: mysqlCensus.recordCensusSql,
      eventCountsSql: mysqlRollups.eventCountsSql,
    },
  });
}

const cut = (text: string, n: number) => (text.length > n ? `${text.slice(0, n - 3)}…` : text);

async function overviewBench(db: Database, floors: ReadFloors, args: Args) {
  const now = new Date();
  const H = 3_600_000;
  const D = 24 * H;
  const cases: [string, OverviewInput][] = [
    ["last 24 h", { from: new Date(now.getTime() - D), to: now }],
    ["last 7 d", { from: new Date(now.getTime() - 7 * D), to: now }],
    ["last 30 d", { from: new Date(now.getTime() - 30 * D), to: now }],
    ["last 24 h, operation=capture_payment", { from: new Date(now.getTime() - D), to: now, operation: "capture_payment" }],
    ["last 24 h, scope=tenant:acme", { from: new Date(now.getTime() - D), to: now, scope: "tenant:acme" }],
    [`last 24 h, scope=${SMALL_SCOPE.scope}`, { from: new Date(now.getTime() - D), to: now, scope: SMALL_SCOPE.scope }],
  ];
  console.log(`\noverview — GET /api/v1/stats/overview's function vs the same numbers by raw SQL (median of ${args.runs})`);
  console.log("  lib: lib/stats/overview.ts overviewStats (rollup tiers + raw remainder; every record-side number too)");
  console.log("  raw: events counted straight from idempotency_events + one pass over idempotency_records");
  console.log("  countEvents: lib/stats/rollups.ts countEvents for the same range, in the read side's snapshot (as conflicts.ts runs it)");
  const rows: string[][] = [];
  for (const [label, input] of cases) {
    // As the API runs it (readOverview): a second session in the snapshot when the pool has one free.
    const lib = await time(args.runs, () => db.withSession((s) => overviewStats(s, input, { now, spare: db.withSpareSession })));
    const raw = await time(args.runs, () =>
      db.withSession((s) => floors.overview(s, input, now, seriesStep(input.from, input.to).seconds, readSideConfig().stuck.defaultSeconds)),
    );
    // As the conflicts screen runs it: in the read side's snapshot (overview.ts inSnapshot).
    const ce = await time(args.runs, () => db.withSession((s) => inSnapshot(s, true, () => countEvents(s, input))));
    // The same numbers?
    const o = lib.result;
    const rawReq = raw.result.events.filter((e) => ["reserved", "replayed", "conflict", "in_progress"].includes(e.kind)).reduce((a, e) => a + Number(e.n), 0);
    const rawConf = raw.result.events.filter((e) => e.kind === "conflict").reduce((a, e) => a + Number(e.n), 0);
    const r = raw.result.rec;
    const same =
      o.events.total.requests === rawReq &&
      o.events.total.conflicts === rawConf &&
      o.records.byStatus.completed === Number(r.completed) &&
      o.records.byStatus.failed === Number(r.failed) &&
      o.records.byStatus.pending === Number(r.pending) &&
      o.records.byStatus.processing === Number(r.processing) &&
      o.expiry.expiredNotPurged === Number(r.expired) &&
      o.expiry.expiringNext24h === Number(r.expiring);
    rows.push([label, ms(lib.ms), ms(raw.ms), ms(ce.ms), fmt(o.events.total.requests), same ? "yes" : "NO"]);
  }
  table(["range", "lib ms", "raw SQL ms", "countEvents ms", "requests", "same numbers"], rows);
  const sql = dialectSql(db);

  for (const [label, input] of [cases[0], cases[2], cases[3], cases[4]]) {
    console.log(`\n  breakdown, ${label} (each statement overviewStats runs, analyzed by the database; rows = rows read by table and index accesses)`);
    const parts = sql.overviewSql(overviewReads(input, now, readSideConfig().stuck));
    const out: string[][] = [];
    let total = 0;
    for (const [name, q] of Object.entries(parts)) {
      if (!q) continue;
      // In the read side's snapshot with its planner settings, as the overview runs it (no parallel workers on PostgreSQL).
      const e = await db.withSession((s) => inSnapshot(s, true, () => floors.explain(s, q)));
      total += e.ms;
      out.push([name, ms(e.ms), fmt(e.rowsRead), cut(e.scans, 110)]);
    }
    out.push(["(sum)", ms(total), "", ""]);
    // The same series from the minute tier alone (what the overview read before the coarse tiers).
    const minutes = await db.withSession((s) =>
      floors.explain(s, sql.eventCountsSql(input, { stepSeconds: seriesStep(input.from, input.to).seconds, grains: [60] })),
    );
    out.push(["series, minute tier only", ms(minutes.ms), fmt(minutes.rowsRead), cut(minutes.scans, 110)]);
    table(["statement", "ms", "rows read", "scans (rows)"], out);
  }
}

// ---------------------------------------------------------------------------
// Record-side counts: what the overview reads per refresh (docs/decisions/0006, 0007)

async function recordCountsBench(db: Database, floors: ReadFloors, args: Args) {
  const now = new Date();
  const sql = dialectSql(db);
  const totals = (operation?: string) => sql.overviewSql(overviewReads({ from: now, to: now, operation }, now, readSideConfig().stuck)).totals!;
  const [byStatus, byStatusOfOperation, expired, forecast] = floors.recordCounts(now);
  const cases: [string, Statement | null][] = [
    ["all records, expired, 7-day forecast, failed: lib (census; processing, pending: the active ranges)", totals()],
    byStatus,
    ["all, expired, forecast, failed, operation=capture_payment: lib (census)", totals("capture_payment")],
    byStatusOfOperation,
    ["expired not purged: lib (census)", sql.recordCensusSql([{ name: "expired", from: null, to: now }], { now })],
    expired,
    forecast,
  ];
  console.log(
    `\nrecord-side counts — the overview's exact counts vs the plain GROUP BY (median of ${args.runs}; rows = index entries read; each in a snapshot, as the overview runs them)`,
  );
  const rows: string[][] = [];
  for (const [label, q] of cases) {
    if (!q) continue;
    const run = await time(args.runs, () => db.withSession((s) => inSnapshot(s, true, () => s.query(q.text, q.values))));
    const e = await db.withSession((s) => floors.explain(s, q));
    rows.push([label, ms(run.ms), fmt(e.rowsRead), cut(e.scans, 90)]);
  }
  table(["count", "ms", "rows read", "scans (rows)"], rows);
}

// ---------------------------------------------------------------------------
// Steady-state refresh: what the background refresher pays per tick

async function refreshBench(db: Database, floors: ReadFloors) {
  if (process.env.BENCH_DATABASE_URL) {
    console.log("\nrefreshRollups on live traffic: skipped (it adds events; only on a throwaway database)");
    return;
  }
  console.log("\nrefreshRollups on live traffic — N new events in the last minute, rolled into every tier (minute, 15 min, hour, day)");
  const rows: string[][] = [];
  for (const n of [1_000, 10_000, 50_000]) {
    const fresh = floors.freshEvents(n);
    await db.sql.query(fresh.text, fresh.values);
    const t = performance.now();
    const r = await db.withSession((s) => refreshRollups(s));
    rows.push([fmt(n), fmt(r.eventsCounted), String(r.batches), ms(performance.now() - t)]);
  }
  table(["new events", "rolled up", "batches", "ms"], rows);
}

// ---------------------------------------------------------------------------
// Search and the stuck list

async function searchBench(db: Database, floors: ReadFloors, args: Args) {
  const n = await db.sql.query<{ max: bigint }>(`SELECT max(id) AS max FROM idempotency_records`);
  // A record in the middle of the table, or from the start when none past the middle has a
  // provider reference (a 20k-record run on MariaDB found none and stopped here).
  const sampleFrom = async (mid: bigint) => {
    const q = floors.sample(mid);
    return (await db.sql.query<{ key: string; scope: string; ref: string | null }>(q.text, q.values))[0];
  };
  const sample = (await sampleFrom(BigInt(n[0].max ?? 0) / 2n)) ?? (await sampleFrom(0n));
  const without = floors.withoutIndexes;
  console.log(`\nsearch — lib/records/search.ts searchRecords vs hand-written SQL (first page, 50 rows; median of ${args.runs})`);
  const rows: string[][] = [];
  for (const [label, input, sql, params] of floors.search(sample)) {
    const lib = await time(args.runs, () => searchRecords(db.sql, input));
    const raw = await time(args.runs, () => db.sql.query(sql, params));
    const scan = without ? ms((await time(1, () => db.withSession((s) => without(s, () => s.query(sql, params))))).ms) : "—";
    rows.push([label, ms(lib.ms), ms(raw.ms), scan, String(lib.result.items.length)]);
  }
  table(["search", "lib ms", "raw SQL ms", "raw SQL, no index ms", "hits"], rows);
}

async function queueBench(db: Database, floors: ReadFloors, args: Args) {
  const thresholds = readSideConfig().stuck;
  const seconds = thresholds.defaultSeconds;
  const without = floors.withoutIndexes;
  console.log(
    `\nqueue — lib/records/queue.ts vs hand-written SQL for what the screen shows (median of ${args.runs}): the first page (50 records, each with its newest open reconciliation item) and the tab counts (stuck, pending, open items, other records with open items, the oldest pending and stuck)`,
  );
  const rows: string[][] = [];
  for (const kind of ["stuck", "all"] as const) {
    const lib = await time(args.runs, () => queueStore(db.sql).page({ kind, limit: 50 }, thresholds, new Date()));
    const raw = await time(args.runs, () => db.withSession((s) => floors.queuePage(s, kind, seconds)));
    const scan = without ? ms((await time(1, () => db.withSession((s) => without(s, () => floors.queuePage(s, kind, seconds))))).ms) : "—";
    rows.push([kind === "stuck" ? "page: stuck" : "page: stuck + pending + reconciliation", ms(lib.ms), ms(raw.ms), scan, fmt(lib.result.length)]);
  }
  const lib = await time(args.runs, () => queueSummary(db.sql, thresholds, new Date()));
  const raw = await time(args.runs, () => db.withSession((s) => floors.queueCounts(s, seconds)));
  const scan = without ? ms((await time(1, () => db.withSession((s) => without(s, () => floors.queueCounts(s, seconds))))).ms) : "—";
  rows.push(["tab counts", ms(lib.ms), ms(raw.ms), scan, `${fmt(lib.result.stuck)} stuck`]);
  const whole = await time(args.runs, () => stuckAndPending(db.sql, { kind: "stuck", limit: 50 }));
  rows.push(["the screen's call (stuckAndPending: page ∥ counts)", ms(whole.ms), "—", "—", ""]);
  table(["queue", "lib ms", "raw SQL ms", "raw SQL, no index ms", "rows"], rows);
}

async function expiryBench(db: Database, floors: ReadFloors, args: Args) {
  console.log(
    `\nexpiry — GET /api/v1/expiry (lib/stats/expiry.ts expiryStats: expiring per UTC hour of the next 24 h and per UTC day of the next 30 days, expired by operation and status with holds, open items, what a purge would take) vs the same by hand-written SQL (median of ${args.runs}; both run their three statements at once)`,
  );
  const lib = await time(args.runs, () => expiryStats(db, {}));
  // Before the hand-written SQL, whose read of every expired record leaves the cache cold for what follows.
  const one = await time(args.runs, () => expiryStats(db, { operation: "capture_payment" }));
  // A legal hold on the largest tenant: its expired records are read by the scope (lib/retention/eligibility.ts heldScopeRecordsSql).
  const p = paramList(db.sql.dialect);
  await db.sql.query(`INSERT INTO legal_holds (scope, reason, set_by_label) VALUES (${p.add("tenant:acme")}, 'bench: a held tenant', 'bench')`, p.values);
  const held = await time(args.runs, () => expiryStats(db, {})).finally(() => db.sql.query(`DELETE FROM legal_holds WHERE reason = 'bench: a held tenant'`));
  const raw = await time(args.runs, () => floors.expiry(db.sql));
  const expired = (r: Awaited<ReturnType<typeof expiryStats>>) => `${fmt(r.expired.total)} expired`;
  table(
    ["expiry", "lib ms", "raw SQL ms", "records"],
    [
      ["the page", ms(lib.ms), ms(raw.ms), expired(lib.result)],
      ["the page, operation=capture_payment", ms(one.ms), "—", expired(one.result)],
      ["the page, tenant:acme under a legal hold", ms(held.ms), ms(raw.ms), expired(held.result)],
    ],
  );
}

async function metricsBench(db: Database, floors: ReadFloors, args: Args) {
  console.log(`\nmetrics — GET /api/metrics (lib/stats/metrics.ts renderMetrics) vs raw counts (median of ${args.runs})`);
  const lib = await time(args.runs, () => db.withSession((s) => renderMetrics(s)));
  const raw = await time(args.runs, () => db.withSession((s) => floors.metrics(s)));
  table(["metrics", "lib ms", "raw SQL ms", "bytes"], [["scrape", ms(lib.ms), ms(raw.ms), fmt(lib.result.text.length)]]);
}

// ---------------------------------------------------------------------------

/** A small tenant beside bulk.ts's five large ones: the overview's scope filter at its size. */
const SMALL_SCOPE = { scope: "tenant:small", records: 10_000 };

/** SMALL_SCOPE's records, written through the writers' library (begin + complete, 8 at a time), unless there. */
async function addSmallScope(db: Database): Promise<void> {
  const [{ n }] = await db.sql.query<{ n: bigint | number }>(`SELECT count(*) AS n FROM idempotency_records WHERE scope = ${db.dialect.param(1)}`, [
    SMALL_SCOPE.scope,
  ]);
  if (Number(n) > 0) return;
  const store = new IdempotencyStore(db);
  const t = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < SMALL_SCOPE.records) {
        const i = next++;
        const r = await store.begin({ scope: SMALL_SCOPE.scope, operation: "create_order", key: `small-${i}`, payload: { order: i } });
        if (r.outcome === "owner") await store.complete(r.record.id, { code: 201, body: `{"order":${i}}` });
      }
    }),
  );
  console.log(
    `added ${fmt(SMALL_SCOPE.records)} records in scope ${SMALL_SCOPE.scope} through the writers' library in ${((performance.now() - t) / 1000).toFixed(1)} s`,
  );
}

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  return withBenchDatabase("bench:read", { keep: args.keep, poolSize: Math.max(4, args.fillConcurrency + 2) }, async (db) => {
    const floors = readFloors(db);
    const [{ n: existing }] = await db.sql.query<{ n: bigint | number }>(floors.anyRecord);
    const loadedHere = Number(existing) === 0;
    if (loadedHere) {
      console.log(`\nloading ${fmt(args.records)} records × ${args.eventsPerRecord} events (lib/demo/bulk.ts, ${args.fillConcurrency} batches at a time)…`);
      // Secondary indexes are built once after the load (what a 10M-row restore does too).
      let fill!: Awaited<ReturnType<typeof bulkGenerate>>;
      await withDeferredIndexes(db, ["idempotency_records", "idempotency_events"], async () => {
        fill = await bulkGenerate(db.sql, {
          records: args.records,
          eventsPerRecord: args.eventsPerRecord,
          seed: args.seed,
          concurrency: args.fillConcurrency,
          onProgress: (p) => {
            if (p.batch % 10 === 0 || p.batch === p.batches)
              console.log(`  batch ${p.batch}/${p.batches}: ${fmt(p.records)} records, ${fmt(p.events)} events, ${(p.elapsedMs / 1000).toFixed(1)} s`);
          },
        });
        if (args.scopesPerTenant > 1) {
          // Scope = tenant#n: a record and its events keep one scope; tenant:acme stays whole (the scope filter's case).
          const n = args.scopesPerTenant;
          await db.sql.query(`UPDATE idempotency_records SET scope = concat(scope, '#', id % ${n}) WHERE scope <> 'tenant:acme'`);
          await db.sql.query(
            `UPDATE idempotency_events SET scope = concat(scope, '#', record_id % ${n}) WHERE scope <> 'tenant:acme' AND record_id IS NOT NULL`,
          );
          console.log(`  every tenant but tenant:acme split into ${fmt(n)} scopes (tenant#0 … tenant#${n - 1}, by record id)`);
        }
      });
      console.log(
        `loaded ${fmt(fill.records)} records + ${fmt(fill.events)} events in ${(fill.elapsedMs / 1000).toFixed(1)} s; status mix ${JSON.stringify(fill.byStatus)}`,
      );
    } else {
      console.log("\nthe database already holds records: measuring it as it is");
    }
    await addSmallScope(db);
    let t = performance.now();
    // Big batches for the initial load: bulk events span the whole history, so each batch
    // touches every day/hour bucket again (the background refresher's 50,000 suits live traffic).
    const rolled = await db.withSession((s) => refreshRollups(s, { batchSize: args.rollupBatch }));
    console.log(
      `refreshRollups: ${fmt(rolled.eventsCounted)} events rolled up (and their records counted into the census) in ${((performance.now() - t) / 1000).toFixed(1)} s (${rolled.batches} batches)`,
    );
    if (loadedHere && rolled.gapsOpen > 0) {
      // The bulk load's id holes (MySQL/MariaDB reserve auto-increment ids for multi-row inserts):
      // no writer holds them, and the refresher would forget them after GAP_GRACE_SECONDS. Measured
      // with them open, every event count reads them (docs/scale.md, MariaDB 1M, 2026-12-05 evening).
      const after = await db.withSession((s) => refreshRollups(s, { gapGraceSeconds: 0 }));
      console.log(`  the load left ${fmt(rolled.gapsOpen)} ids unused (rollup gaps); forgotten as after the grace period: ${fmt(after.gapsOpen)} open`);
    }
    t = performance.now();
    const checkpoint = await settle(db, [
      "idempotency_records",
      "idempotency_events",
      "reconciliation_items",
      "event_rollups",
      "event_rollup_tiers",
      "record_census",
    ]);
    const [size] = await db.sql.query<{ records: bigint; events: bigint }>(
      `SELECT (SELECT count(*) FROM idempotency_records) AS records, (SELECT count(*) FROM idempotency_events) AS events`,
    );
    const tiers = await db.sql.query<{ grain: number; rows: bigint; totals: bigint }>(floors.tiers);
    const settled = db.dialect.name === "mysql" ? checkpoint : `VACUUM (ANALYZE) + ${checkpoint}`;
    console.log(`${settled}: ${((performance.now() - t) / 1000).toFixed(1)} s; database ${await databaseSize(db)}`);
    console.log(
      `rows: ${fmt(Number(size.records))} records, ${fmt(Number(size.events))} events; rollup rows per tier (operation × scope × kind per bucket), and over every scope (operation × kind per bucket: what a read without a scope filter reads, ADR 0019):`,
    );
    for (const r of tiers) {
      const name = { 60: "minute", 900: "15 minutes", 3600: "hour", 86400: "day" }[Number(r.grain)] ?? `${r.grain} s`;
      console.log(
        `  ${name.padEnd(10)} ${fmt(Number(r.rows)).padStart(11)} rows, ${(Number(size.events) / Math.max(1, Number(r.rows))).toFixed(1)} events per row; over every scope ${fmt(Number(r.totals)).padStart(9)} rows`,
      );
    }

    // The census check operators run from cron (npm run stats -- verify): O(records), off the overview's path.
    t = performance.now();
    const drift = await db.withSession((s) => verifyRecordCensus(s));
    const [{ n: censusRows }] = await db.sql.query<{ n: bigint }>(`SELECT count(*) AS n FROM record_census`);
    console.log(
      `record census: ${fmt(Number(censusRows))} rows (operation × expiry hour); verifyRecordCensus recounted every record in ${((performance.now() - t) / 1000).toFixed(1)} s: ${drift.length ? `DRIFT in ${drift.length} hours` : "no drift"}`,
    );

    await overviewBench(db, floors, args);
    await recordCountsBench(db, floors, args);
    await searchBench(db, floors, args);
    await queueBench(db, floors, args);
    await expiryBench(db, floors, args);
    await metricsBench(db, floors, args);
    await refreshBench(db, floors);
  });
}

runBench(main);
