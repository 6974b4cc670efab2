/**
 * Read-side benchmark against a real Postgres server (a benchmark, not a timed test).
 *
 *   DATABASE_URL=postgresql://… npm run bench:read -- [--records 10000000] [--events-per-record 3]
 *       [--fill-concurrency N] [--runs 3] [--seed 1] [--keep]
 *   BENCH_DATABASE_URL=postgresql://…/ic_bench_x npm run bench:read    # measure an already filled database again
 *
 * 1. Creates a throwaway database `ic_bench_<timestamp>` on the DATABASE_URL server (or uses
 *    BENCH_DATABASE_URL as is: never created nor dropped, filled only if it has no records),
 *    migrates it, loads N records and their events with lib/demo/bulk.ts (default 10,000,000
 *    records × 3 events = 30,000,000 events), rolls the events up (lib/stats/rollups.ts),
 *    then VACUUM (ANALYZE) and CHECKPOINT so every variant starts from the same state.
 * 2. Prints side by side, median of --runs after one warm-up run each:
 *    - the overview as the API computes it (lib/stats/overview.ts overviewStats, the function
 *      GET /api/v1/stats/overview calls) vs the same numbers by raw SQL over
 *      idempotency_events/idempotency_records, plus countEvents (lib/stats/rollups.ts), for
 *      24 h / 7 d / 30 d and with filters; the numbers of both are compared;
 *    - a per-statement breakdown of the overview (EXPLAIN ANALYZE: time, scans, rows read);
 *    - search (lib/records/search.ts) vs hand-written SQL, and the same SQL with index scans
 *      disabled (what the indexes buy);
 *    - the record-side counts (by status, expired not purged) vs the plain GROUP BY;
 *    - the stuck list (lib/records/queue.ts) vs hand-written SQL, likewise;
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
import type { SqlExecutor } from "@/lib/db/sql";
import { bulkGenerate } from "@/lib/demo/bulk";
import { fmt, parseBenchArgs, runBench, settle, table, withBenchDatabase, withDeferredIndexes } from "./common";
import { readSideConfig } from "@/lib/records/config";
import { stuckAndPending } from "@/lib/records/queue";
import { searchRecords, type SearchInput } from "@/lib/records/search";
import { renderMetrics } from "@/lib/stats/metrics";
import { inSnapshot, overviewReads, overviewStats, seriesStep, type OverviewInput } from "@/lib/stats/overview";
import { countEvents, refreshRollups, verifyRecordCensus } from "@/lib/stats/rollups";
import { recordCensusSql } from "@/lib/stats/census-store.postgres";
import { eventCountsSql } from "@/lib/stats/rollup-store.postgres";
import { overviewSql, recordTotalsSql, statusCountsSql } from "@/lib/stats/store.postgres";

interface Args {
  records: number;
  eventsPerRecord: number;
  fillConcurrency: number;
  runs: number;
  seed: number;
  /** Event ids per refreshRollups transaction for the initial roll-up. */
  rollupBatch: number;
  keep: boolean;
}

const USAGE =
  "usage: npm run bench:read -- [--records N (default 10000000)] [--events-per-record N (3)] [--fill-concurrency N] [--runs N (3)] [--seed N] [--rollup-batch N (500000)] [--keep]";

function parseArgs(argv: string[]): Args {
  const defaults: Args = {
    records: 10_000_000,
    eventsPerRecord: 3,
    fillConcurrency: Math.min(4, availableParallelism()),
    runs: 3,
    seed: 1,
    rollupBatch: 500_000,
    keep: false,
  };
  const numeric: Record<string, keyof Args> = {
    "--records": "records",
    "--events-per-record": "eventsPerRecord",
    "--fill-concurrency": "fillConcurrency",
    "--runs": "runs",
    "--seed": "seed",
    "--rollup-batch": "rollupBatch",
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

/** Runs `fn` with index and bitmap scans disabled (one transaction): the cost of the same SQL without its indexes. */
async function withoutIndexes<T>(s: SqlExecutor, fn: () => Promise<T>): Promise<T> {
  await s.exec("BEGIN; SET LOCAL enable_indexscan = off; SET LOCAL enable_indexonlyscan = off; SET LOCAL enable_bitmapscan = off;");
  try {
    return await fn();
  } finally {
    await s.exec("ROLLBACK");
  }
}

// ---------------------------------------------------------------------------
// Overview: the lib function vs the same numbers from the raw tables

/** The overview's event and record numbers, computed directly (no rollups, one scan each). */
async function rawOverview(s: SqlExecutor, input: OverviewInput, now: Date) {
  const params = [input.from, input.to, input.operation ?? null, input.scope ?? null];
  const f = (a: string) => `($3::text IS NULL OR ${a}.operation = $3) AND ($4::text IS NULL OR ${a}.scope = $4)`;
  const t = readSideConfig().stuck;
  const events = await s.query<{ operation: string; kind: string; n: bigint }>(
    `SELECT operation, kind, count(*)::bigint AS n FROM (
       SELECT date_bin(make_interval(secs => $5), occurred_at, timestamptz '1970-01-01 00:00:00+00') AS b, operation, kind
         FROM idempotency_events e WHERE occurred_at >= $1 AND occurred_at < $2 AND ${f("e")}) x
      GROUP BY 1, 2`,
    [...params, seriesStep(input.from, input.to).seconds],
  );
  const [rec] = await s.query<{ processing: bigint; pending: bigint; completed: bigint; failed: bigint; stuck: bigint; expired: bigint; expiring: bigint }>(
    `SELECT count(*) FILTER (WHERE status = 'processing')::bigint AS processing,
            count(*) FILTER (WHERE status = 'pending')::bigint AS pending,
            count(*) FILTER (WHERE status = 'completed')::bigint AS completed,
            count(*) FILTER (WHERE status = 'failed')::bigint AS failed,
            count(*) FILTER (WHERE status = 'processing' AND updated_at < $1::timestamptz - make_interval(secs => $2))::bigint AS stuck,
            count(*) FILTER (WHERE expires_at < $1)::bigint AS expired,
            count(*) FILTER (WHERE expires_at >= $1 AND expires_at < $1::timestamptz + interval '24 hours')::bigint AS expiring
       FROM idempotency_records r WHERE ($3::text IS NULL OR r.operation = $3) AND ($4::text IS NULL OR r.scope = $4)`,
    [now, t.defaultSeconds, input.operation ?? null, input.scope ?? null],
  );
  return { events, rec };
}

interface ScanSummary {
  ms: number;
  scans: string;
  rowsRead: number;
}

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Index Name"?: string;
  "Actual Rows": number;
  "Actual Loops": number;
  Plans?: PlanNode[];
}

/** EXPLAIN ANALYZE one statement: execution time, its scan nodes and the rows they returned. */
async function explain(s: SqlExecutor, q: { text: string; values: unknown[] }): Promise<ScanSummary> {
  const [row] = await s.query<{ "QUERY PLAN": { Plan: PlanNode; "Execution Time": number }[] }>(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${q.text}`, q.values);
  const plan = row["QUERY PLAN"][0];
  const scans = new Map<string, number>();
  let rowsRead = 0;
  const walk = (n: PlanNode) => {
    if (n["Node Type"].includes("Scan") && (n["Relation Name"] || n["Index Name"])) {
      const name = `${n["Node Type"].replace(" Scan", "")}:${n["Index Name"] ?? n["Relation Name"]}`;
      const rows = n["Actual Rows"] * n["Actual Loops"];
      scans.set(name, (scans.get(name) ?? 0) + rows);
      // A bitmap index scan feeds its heap scan: count the rows once.
      if (!n["Node Type"].startsWith("Bitmap Index")) rowsRead += rows;
    }
    n.Plans?.forEach(walk);
  };
  walk(plan.Plan);
  return {
    ms: plan["Execution Time"],
    scans: [...scans.entries()].map(([k, v]) => `${k} (${fmt(v)})`).join(", "),
    rowsRead,
  };
}

async function overviewBench(db: Database, args: Args) {
  const now = new Date();
  const H = 3_600_000;
  const D = 24 * H;
  const cases: [string, OverviewInput][] = [
    ["last 24 h", { from: new Date(now.getTime() - D), to: now }],
    ["last 7 d", { from: new Date(now.getTime() - 7 * D), to: now }],
    ["last 30 d", { from: new Date(now.getTime() - 30 * D), to: now }],
    ["last 24 h, operation=capture_payment", { from: new Date(now.getTime() - D), to: now, operation: "capture_payment" }],
    ["last 24 h, scope=tenant:acme", { from: new Date(now.getTime() - D), to: now, scope: "tenant:acme" }],
  ];
  console.log(`\noverview — GET /api/v1/stats/overview's function vs the same numbers by raw SQL (median of ${args.runs})`);
  console.log("  lib: lib/stats/overview.ts overviewStats (rollup tiers + raw remainder; every record-side number too)");
  console.log("  raw: events counted straight from idempotency_events + one pass over idempotency_records");
  console.log("  countEvents: lib/stats/rollups.ts countEvents for the same range (what conflicts.ts uses)");
  const rows: string[][] = [];
  for (const [label, input] of cases) {
    const lib = await time(args.runs, () => db.withSession((s) => overviewStats(s, input, { now })));
    const raw = await time(args.runs, () => db.withSession((s) => rawOverview(s, input, now)));
    const ce = await time(args.runs, () => db.withSession((s) => countEvents(s, input)));
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

  for (const [label, input] of [cases[0], cases[2], cases[3]]) {
    console.log(`\n  breakdown, ${label} (EXPLAIN ANALYZE of each statement overviewStats runs; rows = rows returned by scan nodes)`);
    const parts = overviewSql(overviewReads(input, now, readSideConfig().stuck));
    const out: string[][] = [];
    let total = 0;
    for (const [name, q] of Object.entries(parts)) {
      const e = await db.withSession((s) => explain(s, q));
      total += e.ms;
      out.push([name, ms(e.ms), fmt(e.rowsRead), e.scans.length > 110 ? `${e.scans.slice(0, 107)}…` : e.scans]);
    }
    out.push(["(sum)", ms(total), "", ""]);
    // The same series from the minute tier alone (what the overview read before the coarse tiers).
    const minutes = await db.withSession((s) => explain(s, eventCountsSql(input, { stepSeconds: seriesStep(input.from, input.to).seconds, grains: [60] })));
    out.push([
      "series, minute tier only",
      ms(minutes.ms),
      fmt(minutes.rowsRead),
      minutes.scans.length > 110 ? `${minutes.scans.slice(0, 107)}…` : minutes.scans,
    ]);
    table(["statement", "ms", "rows read", "scans (rows)"], out);
  }
}

// ---------------------------------------------------------------------------
// Record-side counts: what the overview reads per refresh (docs/decisions/0006, 0007)

async function recordCountsBench(db: Database, args: Args) {
  const now = new Date();
  const p = (text: string, values: unknown[] = []) => ({ text, values });
  const totals = (operation?: string) => recordTotalsSql(overviewReads({ from: now, to: now, operation }, now, readSideConfig().stuck));
  const cases: [string, { text: string; values: unknown[] }][] = [
    ["all records, expired, 7-day forecast: lib (census)", totals()],
    ["  + by status: lib (3 ranges of the unsettled-status index)", statusCountsSql({})],
    ["by status: GROUP BY status (whole status index)", p(`SELECT status, count(*) FROM idempotency_records GROUP BY status`)],
    ["all, expired, forecast, operation=capture_payment: lib (census)", totals("capture_payment")],
    ["  + by status, operation=capture_payment: lib", statusCountsSql({ operation: "capture_payment" })],
    [
      "by status, operation=capture_payment: GROUP BY",
      p(`SELECT status, count(*) FROM idempotency_records WHERE operation = 'capture_payment' GROUP BY status`),
    ],
    ["expired not purged: lib (census)", recordCensusSql([{ name: "expired", from: null, to: now }])],
    ["expired not purged: GROUP BY operation", p(`SELECT operation, count(*) FROM idempotency_records WHERE expires_at < $1 GROUP BY operation`, [now])],
    [
      "7-day forecast: GROUP BY day",
      p(
        `SELECT floor(extract(epoch FROM expires_at - $1) / 86400), count(*) FROM idempotency_records WHERE expires_at >= $1 AND expires_at < $1::timestamptz + interval '7 days' GROUP BY 1`,
        [now],
      ),
    ],
  ];
  console.log(
    `\nrecord-side counts — the overview's exact counts vs the plain GROUP BY (median of ${args.runs}; rows = index entries read; each in a snapshot, as the overview runs them)`,
  );
  const rows: string[][] = [];
  for (const [label, q] of cases) {
    const run = await time(args.runs, () => db.withSession((s) => inSnapshot(s, true, () => s.query(q.text, q.values))));
    const e = await db.withSession((s) => explain(s, q));
    rows.push([label, ms(run.ms), fmt(e.rowsRead), e.scans.length > 90 ? `${e.scans.slice(0, 87)}…` : e.scans]);
  }
  table(["count", "ms", "rows read", "scans (rows)"], rows);
}

// ---------------------------------------------------------------------------
// Steady-state refresh: what the background refresher pays per tick

async function refreshBench(db: Database) {
  if (process.env.BENCH_DATABASE_URL) {
    console.log("\nrefreshRollups on live traffic: skipped (it adds events; only on a throwaway database)");
    return;
  }
  console.log("\nrefreshRollups on live traffic — N new events in the last minute, rolled into every tier (minute, 15 min, hour, day)");
  const rows: string[][] = [];
  for (const n of [1_000, 10_000, 50_000]) {
    await db.sql.query(
      `INSERT INTO idempotency_events (scope, operation, idempotency_key, kind, occurred_at)
       SELECT 'tenant:' || (ARRAY['acme', 'globex', 'initech', 'umbrella', 'hooli'])[1 + i % 5],
              (ARRAY['create_order', 'capture_payment', 'accept_webhook', 'issue_invoice', 'refund_payment'])[1 + (i / 5) % 5],
              'bench-refresh-' || $1::int || '-' || i, (ARRAY['reserved', 'completed', 'replayed', 'conflict'])[1 + i % 4],
              now() - make_interval(secs => 60 * i::float8 / $1::int)
         FROM generate_series(1, $1::int) AS i`,
      [n],
    );
    const t = performance.now();
    const r = await db.withSession((s) => refreshRollups(s));
    rows.push([fmt(n), fmt(r.eventsCounted), String(r.batches), ms(performance.now() - t)]);
  }
  table(["new events", "rolled up", "batches", "ms"], rows);
}

// ---------------------------------------------------------------------------
// Search and the stuck list

async function searchBench(db: Database, args: Args) {
  const n = await db.sql.query<{ max: bigint }>(`SELECT max(id) AS max FROM idempotency_records`);
  const [sample] = await db.sql.query<{ key: string; scope: string; ref: string | null; corr: string | null }>(
    `SELECT idempotency_key AS key, scope, provider_reference AS ref, correlation_id AS corr FROM idempotency_records
      WHERE id >= $1 AND provider_reference IS NOT NULL ORDER BY id LIMIT 1`,
    [n[0].max / 2n],
  );
  const cols = `id, scope, operation, idempotency_key, status, provider_reference, created_at, updated_at, expires_at`;
  const order = `ORDER BY created_at DESC, id DESC LIMIT 51`;
  const cases: [string, SearchInput, string, unknown[]][] = [
    ["key, exact", { q: sample.key, field: "key" }, `SELECT ${cols} FROM idempotency_records WHERE idempotency_key = $1 ${order}`, [sample.key]],
    [
      "any of the six fields, exact",
      { q: sample.key },
      `SELECT ${cols} FROM idempotency_records WHERE idempotency_key = $1 OR scope = $1 OR provider_reference = $1 OR provider_request_id = $1
         OR correlation_id = $1 OR resource_id = $1 ${order}`,
      [sample.key],
    ],
    [
      "provider reference, prefix",
      { q: (sample.ref ?? "x").slice(0, 8), field: "provider_reference", match: "prefix" },
      `SELECT ${cols} FROM idempotency_records WHERE provider_reference LIKE $1 || '%' ${order}`,
      [(sample.ref ?? "x").slice(0, 8)],
    ],
    ["scope, exact (newest first)", { q: sample.scope, field: "scope" }, `SELECT ${cols} FROM idempotency_records WHERE scope = $1 ${order}`, [sample.scope]],
    ["newest records, status=pending", { status: "pending" }, `SELECT ${cols} FROM idempotency_records WHERE status = 'pending' ${order}`, []],
  ];
  console.log(`\nsearch — lib/records/search.ts searchRecords vs hand-written SQL (first page, 50 rows; median of ${args.runs})`);
  const rows: string[][] = [];
  for (const [label, input, sql, params] of cases) {
    const lib = await time(args.runs, () => searchRecords(db.sql, input));
    const raw = await time(args.runs, () => db.sql.query(sql, params));
    const scan = await time(1, () => db.withSession((s) => withoutIndexes(s, () => s.query(sql, params))));
    rows.push([label, ms(lib.ms), ms(raw.ms), ms(scan.ms), String(lib.result.items.length)]);
  }
  table(["search", "lib ms", "raw SQL ms", "raw SQL, no index ms", "hits"], rows);
}

async function queueBench(db: Database, args: Args) {
  const t = readSideConfig().stuck;
  console.log(`\nstuck list — lib/records/queue.ts stuckAndPending vs hand-written SQL (first page + the queue's counts; median of ${args.runs})`);
  const rawStuck = async (s: SqlExecutor, kind: "stuck" | "all") => {
    const stuck = `SELECT * FROM idempotency_records WHERE status = 'processing' AND updated_at < now() - make_interval(secs => $1)`;
    const page = await s.query(
      kind === "stuck"
        ? `${stuck} ORDER BY updated_at, id LIMIT 51`
        : `SELECT * FROM (
             (${stuck} ORDER BY updated_at, id LIMIT 51)
             UNION ALL (SELECT * FROM idempotency_records WHERE status = 'pending' ORDER BY updated_at, id LIMIT 51)
             UNION ALL (SELECT r.* FROM idempotency_records r WHERE r.status NOT IN ('processing', 'pending')
                          AND r.id IN (SELECT record_id FROM reconciliation_items WHERE state IN ('open', 'checking', 'needs_manual'))
                        ORDER BY updated_at, id LIMIT 51)
           ) q ORDER BY updated_at, id LIMIT 51`,
      [t.defaultSeconds],
    );
    const [counts] = await s.query(
      `SELECT (SELECT count(*) FROM idempotency_records WHERE status = 'processing' AND updated_at < now() - make_interval(secs => $1)) AS stuck,
              (SELECT count(*) FROM idempotency_records WHERE status = 'pending') AS pending,
              (SELECT count(*) FROM reconciliation_items WHERE state IN ('open', 'checking', 'needs_manual')) AS open`,
      [t.defaultSeconds],
    );
    return { page, counts };
  };
  const rows: string[][] = [];
  for (const kind of ["stuck", "all"] as const) {
    const lib = await time(args.runs, () => stuckAndPending(db.sql, { kind, limit: 50 }));
    const raw = await time(args.runs, () => db.withSession((s) => rawStuck(s, kind)));
    const scan = await time(1, () => db.withSession((s) => withoutIndexes(s, () => rawStuck(s, kind))));
    rows.push([kind === "stuck" ? "stuck only" : "stuck + pending + reconciliation", ms(lib.ms), ms(raw.ms), ms(scan.ms), fmt(lib.result.summary.stuck)]);
  }
  table(["queue", "lib ms", "raw SQL ms", "raw SQL, no index ms", "stuck"], rows);
}

async function metricsBench(db: Database, args: Args) {
  console.log(`\nmetrics — GET /api/metrics (lib/stats/metrics.ts renderMetrics) vs raw counts (median of ${args.runs})`);
  const lib = await time(args.runs, () => db.withSession((s) => renderMetrics(s)));
  const raw = await time(args.runs, () =>
    db.sql.query(
      `SELECT (SELECT json_agg(x) FROM (SELECT operation, kind, count(*) FROM idempotency_events GROUP BY 1, 2) x) AS events,
              (SELECT json_agg(y) FROM (SELECT operation, count(*) FILTER (WHERE status = 'pending') AS pending,
                      count(*) FILTER (WHERE expires_at < now()) AS expired FROM idempotency_records GROUP BY 1) y) AS records`,
    ),
  );
  table(["metrics", "lib ms", "raw SQL ms", "bytes"], [["scrape", ms(lib.ms), ms(raw.ms), fmt(lib.result.text.length)]]);
}

// ---------------------------------------------------------------------------

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  return withBenchDatabase("bench:read", { keep: args.keep, poolSize: Math.max(4, args.fillConcurrency + 2) }, async (db) => {
    const [{ n: existing }] = await db.sql.query<{ n: bigint }>(`SELECT count(*)::bigint AS n FROM (SELECT 1 FROM idempotency_records LIMIT 1) x`);
    if (existing === 0n) {
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
      });
      console.log(
        `loaded ${fmt(fill.records)} records + ${fmt(fill.events)} events in ${(fill.elapsedMs / 1000).toFixed(1)} s; status mix ${JSON.stringify(fill.byStatus)}`,
      );
    } else {
      console.log("\nthe database already holds records: measuring it as it is");
    }
    let t = performance.now();
    // Big batches for the initial load: bulk events span the whole history, so each batch
    // touches every day/hour bucket again (the background refresher's 50,000 suits live traffic).
    const rolled = await db.withSession((s) => refreshRollups(s, { batchSize: args.rollupBatch }));
    console.log(
      `refreshRollups: ${fmt(rolled.eventsCounted)} events rolled up (and their records counted into the census) in ${((performance.now() - t) / 1000).toFixed(1)} s (${rolled.batches} batches)`,
    );
    t = performance.now();
    const checkpoint = await settle(db, [
      "idempotency_records",
      "idempotency_events",
      "reconciliation_items",
      "event_rollups",
      "event_rollup_tiers",
      "record_census",
    ]);
    const [size] = await db.sql.query<{ db: string; records: bigint; events: bigint }>(
      `SELECT pg_size_pretty(pg_database_size(current_database())) AS db,
              (SELECT count(*) FROM idempotency_records)::bigint AS records,
              (SELECT count(*) FROM idempotency_events)::bigint AS events`,
    );
    const tiers = await db.sql.query<{ grain: number; rows: bigint }>(
      `SELECT 60 AS grain, count(*)::bigint AS rows FROM event_rollups
       UNION ALL SELECT grain_seconds, count(*)::bigint FROM event_rollup_tiers GROUP BY 1 ORDER BY 1`,
    );
    console.log(`VACUUM (ANALYZE) + ${checkpoint}: ${((performance.now() - t) / 1000).toFixed(1)} s; database ${size.db}`);
    console.log(`rows: ${fmt(Number(size.records))} records, ${fmt(Number(size.events))} events; rollup rows per tier (operation × scope × kind per bucket):`);
    for (const r of tiers) {
      const name = { 60: "minute", 900: "15 minutes", 3600: "hour", 86400: "day" }[r.grain] ?? `${r.grain} s`;
      console.log(
        `  ${name.padEnd(10)} ${fmt(Number(r.rows)).padStart(11)} rows, ${(Number(size.events) / Math.max(1, Number(r.rows))).toFixed(1)} events per row`,
      );
    }

    // The census check operators run from cron (npm run stats -- verify): O(records), off the overview's path.
    t = performance.now();
    const drift = await db.withSession((s) => verifyRecordCensus(s));
    const [{ n: censusRows }] = await db.sql.query<{ n: bigint }>(`SELECT count(*)::bigint AS n FROM record_census`);
    console.log(
      `record census: ${fmt(Number(censusRows))} rows (operation × expiry hour); verifyRecordCensus recounted every record in ${((performance.now() - t) / 1000).toFixed(1)} s: ${drift.length ? `DRIFT in ${drift.length} hours` : "no drift"}`,
    );

    await overviewBench(db, args);
    await recordCountsBench(db, args);
    await searchBench(db, args);
    await queueBench(db, args);
    await metricsBench(db, args);
    await refreshBench(db);
  });
}

runBench(main);
