/**
 * Insights benchmark against a real Postgres server (a benchmark, not a timed test).
 *
 *   DATABASE_URL=postgresql://… npm run bench:insights -- [--records 1000000] [--events-per-record 3]
 *       [--fill-concurrency N] [--runs 3] [--seed 1] [--rollup-batch 500000] [--keep]
 *   DATABASE_URL=postgresql://… npm run bench:insights -- --records 10000000     # the issue's 10M / 30M
 *   BENCH_DATABASE_URL=postgresql://…/ic_bench_x npm run bench:insights          # measure a filled database again
 *
 * 1. A throwaway database (bench/common.ts), N records × 3 events from lib/demo/bulk.ts (whose keys,
 *    `bulk-<seed>-<n>`, are a counter: key quality flags every scope), the demo's planted insight
 *    cases on top (lib/demo/insight-cases.ts), rolled up, VACUUM (ANALYZE) + CHECKPOINT.
 * 2. Each insight as the API computes it (median of --runs after a warm-up) beside its raw-SQL
 *    floor — the plain statement that answers the same question from the whole tables without
 *    the console's rollups, census or sampling:
 *    - retention advisor (30 days) vs every retry event of the range joined to its record;
 *    - key quality (7 days) vs reading every key created in the range plus a GROUP BY of the
 *      range's events by scope, operation and kind;
 *    - alerts vs the raw conflict counts of window + baseline, the stuck/pending GROUP BY and
 *      every retry after expiry of 7 days;
 *    - the story of a record vs its events by record id;
 *    - the insights' part of a /api/metrics scrape (console rows only).
 * 3. Drops the throwaway database unless --keep.
 */
import { availableParallelism } from "node:os";
import type { Database } from "@/lib/db/client";
import { bulkGenerate } from "@/lib/demo/bulk";
import { plantInsightCases } from "@/lib/demo/insight-cases";
import { computeAlerts, evaluateAlerts } from "@/lib/insights/alerts";
import { parseInsightsConfig } from "@/lib/insights/config";
import { keyQuality } from "@/lib/insights/key-quality";
import { insightMetricsText } from "@/lib/insights/metrics";
import { retentionAdvice } from "@/lib/insights/retention";
import { recordStory } from "@/lib/insights/story";
import { refreshRollups } from "@/lib/stats/rollups";
import { fmt, parseBenchArgs, runBench, settle, table, withBenchDatabase, withDeferredIndexes } from "./common";

interface Args {
  records: number;
  eventsPerRecord: number;
  fillConcurrency: number;
  runs: number;
  seed: number;
  rollupBatch: number;
  keep: boolean;
}

const USAGE =
  "usage: npm run bench:insights -- [--records N (default 1000000; the issue's figure: 10000000)] [--events-per-record N (3)] [--fill-concurrency N] [--runs N (3)] [--seed N] [--rollup-batch N (500000)] [--keep]";

function parseArgs(argv: string[]): Args {
  return parseBenchArgs(
    argv,
    { records: 1_000_000, eventsPerRecord: 3, fillConcurrency: Math.min(4, availableParallelism()), runs: 3, seed: 1, rollupBatch: 500_000, keep: false },
    {
      "--records": "records",
      "--events-per-record": "eventsPerRecord",
      "--fill-concurrency": "fillConcurrency",
      "--runs": "runs",
      "--seed": "seed",
      "--rollup-batch": "rollupBatch",
    },
    USAGE,
    ["seed"],
  );
}

const ms = (n: number) => (n >= 100 ? fmt(n) : n.toFixed(1));
const DAY = 86_400_000;
const HOUR = 3_600_000;

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

async function measure(db: Database, args: Args) {
  const now = new Date();
  const cfg = { ...parseInsightsConfig({}), webhookUrl: null };
  const rows: string[][] = [];
  const raw = (text: string, values: unknown[]) => () => db.sql.query(text, values);

  const from30 = new Date(now.getTime() - 30 * DAY);
  const advisor = await time(args.runs, () => retentionAdvice(db, { from: from30, to: now, sample: cfg.retrySample }));
  const advisorRaw = await time(
    args.runs,
    raw(
      `SELECT operation, count(*) AS keys, percentile_cont(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP (ORDER BY w) AS p, max(w) AS max,
              sum(late) AS late
         FROM (SELECT e.operation, e.record_id, extract(epoch FROM max(e.occurred_at) - min(r.created_at)) AS w,
                      count(*) FILTER (WHERE e.kind IN ('replayed', 'in_progress') AND e.occurred_at > r.expires_at) AS late
                 FROM idempotency_events e JOIN idempotency_records r ON r.id = e.record_id
                WHERE e.kind IN ('replayed', 'in_progress', 'conflict') AND e.occurred_at >= $1 AND e.occurred_at < $2
                GROUP BY 1, 2) k GROUP BY 1`,
      [from30, now],
    ),
  );
  const sampled = advisor.result.operations.reduce((s, o) => s + o.retries.events, 0);
  rows.push(["retention advisor (30 d)", ms(advisor.ms), ms(advisorRaw.ms), `${fmt(sampled)} retry events sampled (${fmt(cfg.retrySample)} per operation)`]);

  const from7 = new Date(now.getTime() - 7 * DAY);
  const quality = await time(args.runs, () => keyQuality(db.sql, { from: from7, to: now }));
  const qualityRaw = await time(args.runs, async () => {
    await db.sql.query(`SELECT scope, operation, idempotency_key FROM idempotency_records WHERE created_at >= $1 AND created_at < $2`, [from7, now]);
    return db.sql.query(`SELECT scope, operation, kind, count(*) FROM idempotency_events WHERE occurred_at >= $1 AND occurred_at < $2 GROUP BY 1, 2, 3`, [
      from7,
      now,
    ]);
  });
  rows.push([
    "key quality (7 d)",
    ms(quality.ms),
    ms(qualityRaw.ms),
    `${quality.result.sampling.scopes} scopes × ≤ ${fmt(quality.result.sampling.perScope)} keys; ${quality.result.findings.length} findings`,
  ]);

  const alerts = await time(args.runs, () => computeAlerts(db, { now, config: cfg }));
  const alertsRaw = await time(args.runs, async () => {
    await db.sql.query(
      `SELECT scope, operation, count(*) FILTER (WHERE kind = 'conflict' AND occurred_at >= $2) AS c_w, count(*) FILTER (WHERE occurred_at >= $2) AS r_w,
              count(*) FILTER (WHERE kind = 'conflict' AND occurred_at < $2) AS c_b, count(*) FILTER (WHERE occurred_at < $2) AS r_b
         FROM idempotency_events WHERE kind IN ('reserved', 'replayed', 'conflict', 'in_progress') AND occurred_at >= $1 AND occurred_at < $3 GROUP BY 1, 2`,
      [new Date(now.getTime() - HOUR - 7 * DAY), new Date(now.getTime() - HOUR), now],
    );
    await db.sql.query(
      `SELECT operation, count(*) FILTER (WHERE status = 'processing' AND updated_at < now() - interval '5 minutes'), min(updated_at) FILTER (WHERE status = 'pending')
         FROM idempotency_records GROUP BY 1`,
      [],
    );
    return db.sql.query(
      `SELECT e.operation, count(*) FROM idempotency_events e JOIN idempotency_records r ON r.id = e.record_id
        WHERE e.kind IN ('replayed', 'in_progress') AND e.occurred_at >= $1 AND e.occurred_at > r.expires_at GROUP BY 1`,
      [from7],
    );
  });
  rows.push(["alerts (all five kinds)", ms(alerts.ms), ms(alertsRaw.ms), `${alerts.result.alerts.length} firing`]);

  const [busy] = await db.sql.query<{ id: bigint }>(
    `SELECT record_id AS id FROM idempotency_events WHERE kind = 'replayed' AND record_id IS NOT NULL ORDER BY id DESC LIMIT 1`,
  );
  const story = await time(args.runs, () => recordStory(db.sql, busy.id, { bodyAccess: "masked", timeZone: "Europe/Berlin" }));
  const storyRaw = await time(args.runs, raw(`SELECT * FROM idempotency_events WHERE record_id = $1 ORDER BY occurred_at, id`, [busy.id]));
  rows.push(["story of a record", ms(story.ms), ms(storyRaw.ms), `${story.result.sentences.length} sentences (the record page's detail read included)`]);

  await evaluateAlerts(db, { now, config: cfg, notify: false });
  const scrape = await time(args.runs, () => insightMetricsText(db.prisma));
  rows.push(["/api/metrics insight part", ms(scrape.ms), "—", `${fmt(scrape.result.length)} bytes (console rows only)`]);

  console.log("");
  table(["insight", "console ms", "raw SQL ms", "what"], rows);
}

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  return withBenchDatabase("bench:insights", { keep: args.keep, poolSize: Math.max(4, args.fillConcurrency + 2) }, async (db) => {
    const [{ n: existing }] = await db.sql.query<{ n: bigint }>(`SELECT count(*)::bigint AS n FROM (SELECT 1 FROM idempotency_records LIMIT 1) x`);
    if (existing === 0n) {
      console.log(`\nloading ${fmt(args.records)} records × ${args.eventsPerRecord} events (lib/demo/bulk.ts, ${args.fillConcurrency} batches at a time)…`);
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
      console.log(`loaded ${fmt(fill.records)} records + ${fmt(fill.events)} events in ${(fill.elapsedMs / 1000).toFixed(1)} s`);
      const planted = await plantInsightCases(db, { seed: args.seed, now: new Date() });
      console.log(
        `planted the insight cases: counter client ${planted.counter.scope}, conflict spike, ${planted.lateRetries.recordIds.length} retries after expiry`,
      );
    } else {
      console.log("\nthe database already holds records: measuring it as it is");
    }
    let t = performance.now();
    const rolled = await db.withSession((s) => refreshRollups(s, { batchSize: args.rollupBatch }));
    console.log(`refreshRollups: ${fmt(rolled.eventsCounted)} events in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    t = performance.now();
    const checkpoint = await settle(db, ["idempotency_records", "idempotency_events", "event_rollups", "event_rollup_tiers", "record_census"]);
    const [size] = await db.sql.query<{ db: string; records: bigint; events: bigint }>(
      `SELECT pg_size_pretty(pg_database_size(current_database())) AS db, (SELECT count(*) FROM idempotency_records)::bigint AS records,
              (SELECT count(*) FROM idempotency_events)::bigint AS events`,
    );
    console.log(
      `VACUUM (ANALYZE) + ${checkpoint}: ${((performance.now() - t) / 1000).toFixed(1)} s; ${fmt(Number(size.records))} records, ${fmt(Number(size.events))} events, database ${size.db}`,
    );
    console.log(
      `\ninsights, median of ${args.runs} runs after a warm-up (console = what GET /api/v1/insights/… computes; raw SQL = the plain full-table answer):`,
    );
    await measure(db, args);
  });
}

runBench(main);
