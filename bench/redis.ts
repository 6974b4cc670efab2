/**
 * Redis key store census benchmark (a benchmark, not a timed test).
 *
 *   npm run bench:redis -- [--keys 1000000] [--db 15] [--scan-count 100] [--pause-ms 2] [--writers 4] [--window-ms 1000] [--keep]
 *
 * REDIS_BENCH_URL (default redis://127.0.0.1:6379) names the server; database --db (15)
 * is FLUSHED at the start and at the end (unless --keep): give it one nobody else uses.
 *
 * 1. Fills --keys keys the way the seed's PHP handler leaves them (JSON {status, body} for
 *    ~95 %, 'processing' for the rest, 1 % of all set an hour ago: wedged) plus 5 % unrelated
 *    keys (sessions), in pipelines; prints keys/s.
 * 2. A concurrent writer — a separate process doing the service's own commands (SET NX EX
 *    'processing', then SET the answer EX, new keys) on --writers lanes — while the console's
 *    census (lib/redis/census.ts takeCensus: SCAN COUNT --scan-count, one pipeline of GET +
 *    PTTL per round, --pause-ms after each) runs in windows of --window-ms alternating with
 *    idle windows of the same length, so both see the same machine load: p50 / p99 / max of
 *    the writer's commands started in census windows against those in idle windows (the
 *    floor); and, for contrast, during one KEYS of the pattern (what the console never does).
 * 3. Keys/s: the census, next to the raw floor in the same run — a bare SCAN loop with the
 *    same COUNT (no reads), and SCAN + the same pipelined GET + PTTL without decoding.
 */
import { spawn } from "node:child_process";
import { Redis } from "ioredis";
import { parseRedisConfig } from "@/lib/redis/config";
import { takeCensus } from "@/lib/redis/census";
import { fmt, parseBenchArgs, runBench, table } from "./common";

const USAGE =
  "usage: npm run bench:redis -- [--keys N (1000000)] [--db N (15)] [--scan-count N (100)] [--pause-ms N (2)] [--writers N (4)] [--window-ms N (1000)] [--keep]";

/** The writer process: lanes of the seed's two commands on fresh keys; prints [start time, latency] pairs (ms) when told to stop. */
const WRITER = `
import { Redis } from "ioredis";
const [url, lanes, prefix] = process.argv.slice(1);
const samples = [];
let stop = false;
process.stdin.on("data", () => { stop = true; });
const now = () => performance.timeOrigin + performance.now();
const lane = async (n) => {
  const r = new Redis(url);
  let i = 0;
  while (!stop) {
    const k = prefix + n + "-" + i++;
    let t = now();
    await r.set(k, "processing", "EX", 30, "NX");
    samples.push(t, now() - t);
    t = now();
    await r.set(k, '{"status":201,"body":{"id":"ch_w"}}', "EX", 30);
    samples.push(t, now() - t);
  }
  r.disconnect();
};
console.log("ready");
await Promise.all(Array.from({ length: Number(lanes) }, (_, n) => lane(n)));
console.log(JSON.stringify(samples));
`;

interface Latency {
  ops: number;
  p50: number;
  p99: number;
  max: number;
}

function summarize(lat: number[]): Latency {
  const s = [...lat].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? 0;
  return { ops: s.length, p50: q(0.5), p99: q(0.99), max: s[s.length - 1] ?? 0 };
}

const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs the writer process around `during`; returns its samples as [start, latency] pairs. */
async function withWriter(url: string, lanes: number, prefix: string, during: () => Promise<void>): Promise<[number, number][]> {
  const child = spawn(process.execPath, ["--input-type=module", "-e", WRITER, url, String(lanes), prefix], {
    stdio: ["pipe", "pipe", "inherit"],
    cwd: process.cwd(),
  });
  let out = "";
  child.stdout.setEncoding("utf8");
  const ready = new Promise<void>((resolve) => {
    child.stdout.on("data", (c: string) => {
      out += c;
      if (out.includes("ready")) resolve();
    });
  });
  const done = new Promise<number[]>((resolve, reject) => {
    child.on("close", (code) => (code === 0 ? resolve(JSON.parse(out.trim().split("\n").at(-1)!)) : reject(new Error(`writer exited ${code}`))));
  });
  await ready;
  await sleep(500); // connected and warm
  await during();
  child.stdin.end("stop\n");
  const flat = await done;
  const pairs: [number, number][] = [];
  for (let i = 0; i < flat.length; i += 2) pairs.push([flat[i], flat[i + 1]]);
  return pairs;
}

/** Splits samples by whether they started inside one of the windows. */
function split(samples: [number, number][], windows: [number, number][]): { inside: Latency; outside: Latency } {
  const inside: number[] = [];
  const outside: number[] = [];
  for (const [t, lat] of samples) (windows.some(([a, b]) => t >= a && t < b) ? inside : outside).push(lat);
  return { inside: summarize(inside), outside: summarize(outside) };
}

async function fill(r: Redis, keys: number): Promise<number> {
  const started = performance.now();
  const batch = 10_000;
  for (let from = 0; from < keys; from += batch) {
    const p = r.pipeline();
    for (let i = from; i < Math.min(keys, from + batch); i++) {
      const k = `idempotency:${i.toString(36).padStart(6, "0")}-${(i * 2654435761) % 1e9}`;
      const kind = i % 100;
      if (kind === 0)
        p.set(k, "processing", "EX", 86400 - 3600); // crashed an hour ago: wedged
      else if (kind < 5) p.set(k, "processing", "EX", 86400 - (i % 60));
      else {
        const status = kind < 90 ? 201 : kind < 98 ? 402 : 503;
        p.set(
          k,
          JSON.stringify({ status, body: { id: `ch_${i}`, amount: 1000 + (i % 5000), currency: "EUR", customer: `cus_${i % 50_000}` } }),
          "EX",
          3600 + (i % 82_800),
        );
      }
      if (i % 20 === 0) p.hset(`session:${i}`, { user: String(i), csrf: "x".repeat(32) });
    }
    await p.exec();
  }
  return performance.now() - started;
}

async function rawScan(r: Redis, pattern: string, count: number, read: boolean): Promise<{ keys: number; ms: number }> {
  const started = performance.now();
  let cursor = "0";
  let n = 0;
  do {
    const [next, batch] = await r.scan(cursor, "MATCH", pattern, "COUNT", count);
    cursor = next;
    n += batch.length;
    if (read && batch.length) {
      const p = r.pipeline();
      for (const k of batch) p.get(k).pttl(k);
      await p.exec();
    }
  } while (cursor !== "0");
  return { keys: n, ms: performance.now() - started };
}

async function main(): Promise<number> {
  const args = parseBenchArgs(
    process.argv.slice(2),
    { keys: 1_000_000, db: 15, scanCount: 100, writers: 4, windowMs: 1000, pauseMs: 2, keep: false },
    {
      "--pause-ms": "pauseMs",
      "--keys": "keys",
      "--db": "db",
      "--scan-count": "scanCount",
      "--writers": "writers",
      "--window-ms": "windowMs",
    },
    USAGE,
    ["db", "pauseMs"],
  );
  const base = new URL(process.env.REDIS_BENCH_URL || "redis://127.0.0.1:6379");
  base.pathname = `/${args.db}`;
  const url = base.toString();
  const r = new Redis(url);
  const info = await r.info("server");
  console.log(`redis: ${/redis_version:(\S+)/.exec(info)?.[1]} at ${base.host}, database ${args.db} (flushed)`);
  await r.flushdb();
  try {
    const fillMs = await fill(r, args.keys);
    const dbsize = await r.dbsize();
    const memory = /used_memory_human:(\S+)/.exec(await r.info("memory"))?.[1];
    console.log(
      `filled ${fmt(args.keys)} idempotency keys + ${fmt(dbsize - args.keys)} sessions in ${(fillMs / 1000).toFixed(1)} s (${fmt((args.keys / fillMs) * 1000)} keys/s), used_memory ${memory}\n`,
    );

    const store = parseRedisConfig({ REDIS_URL: url }).stores[0];
    // Census and idle windows alternate (--window-ms each) while the writer runs: both see the
    // same machine, whatever else it is doing meanwhile.
    const windows: [number, number][] = [];
    let census: Awaited<ReturnType<typeof takeCensus>> | undefined;
    const samples = await withWriter(url, args.writers, "writer:", async () => {
      await sleep(args.windowMs);
      windows.push([now(), Infinity]);
      census = await takeCensus(r, store, {
        scanCount: args.scanCount,
        pauseMs: args.pauseMs,
        beforeRound: async () => {
          const open = windows[windows.length - 1];
          if (now() - open[0] < args.windowMs) return;
          open[1] = now();
          await sleep(args.windowMs);
          windows.push([now(), Infinity]);
        },
      });
      windows[windows.length - 1][1] = now();
      await sleep(args.windowMs);
    });
    const { inside: during, outside: idle } = split(samples, windows);
    const keysWindow: [number, number][] = [];
    const keysSamples = await withWriter(url, args.writers, "writer:k", async () => {
      await sleep(2000);
      const t = now();
      await r.keys("idempotency:*");
      keysWindow.push([t, now()]);
      await sleep(2000);
    });
    const duringKeys = split(keysSamples, keysWindow).inside;
    const c = census!;

    console.log(`writer: ${args.writers} lanes of SET NX EX 'processing' + SET answer EX (a separate process), one command per round trip;`);
    console.log(`census and idle windows of ${args.windowMs} ms alternate (${windows.length} census windows) while it runs`);
    const ms = (v: number) => v.toFixed(2);
    table(
      ["writer's commands", "commands", "p50 ms", "p99 ms", "max ms", "p50 ×idle", "p99 ×idle"],
      [
        ["idle windows (floor)", fmt(idle.ops), ms(idle.p50), ms(idle.p99), ms(idle.max), "1.00", "1.00"],
        [
          `census windows (COUNT ${args.scanCount}, pause ${args.pauseMs} ms)`,
          fmt(during.ops),
          ms(during.p50),
          ms(during.p99),
          ms(during.max),
          (during.p50 / idle.p50).toFixed(2),
          (during.p99 / idle.p99).toFixed(2),
        ],
        [
          `during one KEYS idempotency:* (never used; ${ms(keysWindow[0][1] - keysWindow[0][0])} ms)`,
          fmt(duringKeys.ops),
          ms(duringKeys.p50),
          ms(duringKeys.p99),
          ms(duringKeys.max),
          (duringKeys.p50 / idle.p50).toFixed(2),
          (duringKeys.p99 / idle.p99).toFixed(2),
        ],
      ],
    );

    const timed = await takeCensus(r, store, { scanCount: args.scanCount, pauseMs: args.pauseMs });
    const bare = await rawScan(r, "idempotency:*", args.scanCount, false);
    const reads = await rawScan(r, "idempotency:*", args.scanCount, true);
    console.log(`\nkeys/s (same COUNT ${args.scanCount}, same run, no writer):`);
    table(
      ["scan", "keys", "seconds", "keys/s"],
      [
        [
          `census (SCAN + GET/PTTL pipeline + decode + tally, pause ${args.pauseMs} ms)`,
          fmt(timed.scanned),
          (timed.durationMs / 1000).toFixed(2),
          fmt(timed.keysPerSecond),
        ],
        ["raw: SCAN + GET/PTTL pipeline", fmt(reads.keys), (reads.ms / 1000).toFixed(2), fmt((reads.keys / reads.ms) * 1000)],
        ["raw floor: SCAN only", fmt(bare.keys), (bare.ms / 1000).toFixed(2), fmt((bare.keys / bare.ms) * 1000)],
      ],
    );
    console.log(
      `\ncensus: ${fmt(c.records.processing)} processing, ${fmt(c.records.completed)} completed, ${fmt(c.wedged.count)} wedged, ${fmt(c.unrecognised)} unrecognised; ` +
        `by status ${c.byStatus.map((s) => `${s.status}: ${fmt(s.count)}`).join(", ")}`,
    );
    return 0;
  } finally {
    if (!args.keep) await r.flushdb();
    r.disconnect();
  }
}

runBench(main);
