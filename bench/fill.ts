/**
 * Volume benchmark against a real Postgres or MySQL/MariaDB server.
 *
 *   DATABASE_URL=postgresql://… npm run bench:fill -- [--records 1000000] [--events-per-record 3]
 *       [--fill-concurrency N] [--requests 5000] [--concurrency 8] [--seed 1] [--keep]
 *   DATABASE_URL=mysql://root@127.0.0.1:3306/x npm run bench:fill -- …   (the same on MySQL/MariaDB)
 *
 * 1. Creates a throwaway database `ic_bench_<timestamp>` on the DATABASE_URL server
 *    (or uses BENCH_DATABASE_URL as is: never created nor dropped) and migrates it.
 * 2. Fills it with lib/demo/bulk.ts (set-based SQL): records/s and events/s.
 * 3. On that filled database, compares the writers' protocol library
 *    (IdempotencyStore: begin + complete through Prisma) with the raw-SQL
 *    equivalent through the driver (pg; mariadb on MySQL) at the same concurrency: the same
 *    statements (record + event row), the bare minimum (INSERT [ON CONFLICT] + UPDATE, no
 *    events), and the replay path.
 * 4. Drops the throwaway database unless --keep.
 */
import { availableParallelism } from "node:os";
import type * as mariadb from "mariadb";
import pg from "pg";
import type { Database } from "@/lib/db/client";
import { createMysqlPool } from "@/lib/db/mysql";
import { bulkGenerate } from "@/lib/demo/bulk";
import { databaseSize, fmt, parseBenchArgs, runBench, serverModeOf, settle, withBenchDatabase } from "./common";
import { IdempotencyStore, payloadHash } from "@/lib/idempotency";

interface Args {
  records: number;
  eventsPerRecord: number;
  fillConcurrency: number;
  requests: number;
  concurrency: number;
  seed: number;
  keep: boolean;
}

const USAGE = "usage: npm run bench:fill -- [--records N] [--events-per-record N] [--fill-concurrency N] [--requests N] [--concurrency N] [--seed N] [--keep]";

function parseArgs(argv: string[]): Args {
  const defaults: Args = {
    records: 1_000_000,
    eventsPerRecord: 3,
    fillConcurrency: Math.min(4, availableParallelism()),
    requests: 5000,
    concurrency: 8,
    seed: 1,
    keep: false,
  };
  const numeric: Record<string, keyof Args> = {
    "--records": "records",
    "--events-per-record": "eventsPerRecord",
    "--fill-concurrency": "fillConcurrency",
    "--requests": "requests",
    "--concurrency": "concurrency",
    "--seed": "seed",
  };
  return parseBenchArgs(argv, defaults, numeric, USAGE, ["records", "seed"]);
}

// ---------------------------------------------------------------------------
// Protocol throughput

interface Measured {
  name: string;
  requests: number;
  ms: number;
  latencies: number[];
  queries: string;
}

async function measure(name: string, queries: string, n: number, concurrency: number, one: (i: number) => Promise<void>): Promise<Measured> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        const i = next++;
        const t = performance.now();
        await one(i);
        latencies.push(performance.now() - t);
      }
    }),
  );
  return { name, requests: n, ms: performance.now() - started, latencies, queries };
}

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

function printTable(rows: Measured[], concurrency: number) {
  const header = ["variant", "round trips", "requests", "req/s", "p50 ms", "p95 ms", "p99 ms"];
  const data = rows.map((r) => {
    const s = [...r.latencies].sort((a, b) => a - b);
    return [r.name, r.queries, fmt(r.requests), fmt(r.requests / (r.ms / 1000)), pct(s, 50).toFixed(2), pct(s, 95).toFixed(2), pct(s, 99).toFixed(2)];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...data.map((d) => d[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  ");
  console.log(`\nprotocol throughput, concurrency ${concurrency} (latency per request: begin + complete, or begin for replays)`);
  console.log(line(header));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const d of data) console.log(line(d));
}

const RAW_BEGIN_WITH_EVENT = `
  WITH ins AS (
    INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, provider, amount_minor, currency,
                                     created_at, updated_at, expires_at)
    VALUES ($1, $2, $3, $4, 'processing', $5, $6, $7, now(), now(), now() + interval '30 days')
    ON CONFLICT (scope, operation, idempotency_key) DO NOTHING
    RETURNING *
  ), ev AS (
    INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind, payload_hash, occurred_at)
    SELECT id, scope, operation, idempotency_key, 'reserved', payload_hash, now() FROM ins
  )
  SELECT id FROM ins`;
const RAW_COMPLETE_WITH_EVENT = `
  WITH upd AS (
    UPDATE idempotency_records SET status = 'completed', response_code = $2, response_headers = $3::jsonb, response_body = $4,
           provider_reference = $5, updated_at = now(), version = version + 1
     WHERE id = $1 AND status = 'processing'
    RETURNING *
  ), ev AS (
    INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind, payload_hash, response_code, occurred_at)
    SELECT id, scope, operation, idempotency_key, 'completed', payload_hash, response_code, now() FROM upd
  )
  SELECT id FROM upd`;
const RAW_BEGIN = `
  INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, provider, amount_minor, currency,
                                   created_at, updated_at, expires_at)
  VALUES ($1, $2, $3, $4, 'processing', $5, $6, $7, now(), now(), now() + interval '30 days')
  ON CONFLICT (scope, operation, idempotency_key) DO NOTHING
  RETURNING id`;
const RAW_COMPLETE = `
  UPDATE idempotency_records SET status = 'completed', response_code = $2, response_headers = $3::jsonb, response_body = $4,
         provider_reference = $5, updated_at = now(), version = version + 1
   WHERE id = $1 AND status = 'processing'`;
const RAW_SELECT = `
  SELECT id, payload_hash, status, response_code, response_headers, response_body
    FROM idempotency_records WHERE scope = $1 AND operation = $2 AND idempotency_key = $3`;
const RAW_REPLAY_EVENT = `
  INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind, payload_hash, response_code, occurred_at)
  VALUES ($1, $2, $3, $4, 'replayed', $5, $6, now())`;

/** A request of the protocol, as the raw-SQL variants send it. */
interface RawRequest {
  scope: string;
  operation: string;
  key: string;
  hash: string;
  provider: string;
  amountMinor: number;
  currency: string;
}

/** The raw-SQL writer the library is compared with, in the server's SQL through its driver. */
interface RawWriter {
  name: string;
  /** Round trips of begin + complete, with and without the event rows, and of a replay. */
  trips: { events: string; minimal: string; replay: string };
  /** Reserves the key: the new record's id, or null when the key exists. */
  begin(r: RawRequest, withEvents: boolean): Promise<string | null>;
  complete(id: string, code: number, headers: string, body: string, reference: string, withEvents: boolean): Promise<void>;
  /** A replay of a completed record: the insert attempt, the read, the event. */
  replay(r: RawRequest): Promise<void>;
  end(): Promise<void>;
}

function pgRawWriter(url: string, concurrency: number): RawWriter {
  const pool = new pg.Pool({ connectionString: url, max: concurrency });
  const params = (r: RawRequest) => [r.scope, r.operation, r.key, r.hash, r.provider, r.amountMinor, r.currency];
  return {
    name: "raw pg",
    trips: { events: "2", minimal: "2", replay: "3" },
    async begin(r, withEvents) {
      const ins = await pool.query<{ id: string }>(withEvents ? RAW_BEGIN_WITH_EVENT : RAW_BEGIN, params(r));
      return ins.rows[0]?.id ?? null;
    },
    async complete(id, code, headers, body, reference, withEvents) {
      await pool.query(withEvents ? RAW_COMPLETE_WITH_EVENT : RAW_COMPLETE, [id, code, headers, body, reference]);
    },
    async replay(r) {
      const ins = await pool.query(RAW_BEGIN_WITH_EVENT, params(r));
      if (ins.rows.length) throw new Error("expected an existing record");
      const { rows } = await pool.query<{ id: string; payload_hash: string; status: string; response_code: number }>(RAW_SELECT, [r.scope, r.operation, r.key]);
      if (rows[0]?.payload_hash !== r.hash || rows[0].status !== "completed") throw new Error("expected a completed record with the same hash");
      await pool.query(RAW_REPLAY_EVENT, [rows[0].id, r.scope, r.operation, r.key, r.hash, rows[0].response_code]);
    },
    end: () => pool.end(),
  };
}

// MySQL/MariaDB (ADR 0012): no RETURNING and no data-modifying CTE, so a change and its event are
// two statements sent in one round trip (the pool allows multi-statement text); the unique key
// decides who owns a key (a duplicate is error 1062). Times are UTC_TIMESTAMP(6).
const MY_BEGIN = `
  INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, provider, amount_minor, currency,
                                   created_at, updated_at, expires_at)
  VALUES (?, ?, ?, ?, 'processing', ?, ?, ?, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) + INTERVAL 30 DAY)`;
const MY_RESERVED_EVENT = `
  INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind, payload_hash, occurred_at)
  SELECT id, scope, operation, idempotency_key, 'reserved', payload_hash, created_at FROM idempotency_records WHERE id = LAST_INSERT_ID()`;
const MY_COMPLETE = `
  UPDATE idempotency_records SET status = 'completed', response_code = ?, response_headers = ?, response_body = ?,
         provider_reference = ?, updated_at = UTC_TIMESTAMP(6), version = version + 1
   WHERE id = ? AND status = 'processing'`;
const MY_COMPLETED_EVENT = `
  INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind, payload_hash, response_code, occurred_at)
  SELECT id, scope, operation, idempotency_key, 'completed', payload_hash, response_code, updated_at FROM idempotency_records
   WHERE id = ? AND ROW_COUNT() > 0`;
const MY_SELECT = `
  SELECT id, payload_hash, status, response_code, response_headers, response_body
    FROM idempotency_records WHERE scope = ? AND operation = ? AND idempotency_key = ?`;
const MY_REPLAY_EVENT = `
  INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind, payload_hash, response_code, occurred_at)
  VALUES (?, ?, ?, ?, 'replayed', ?, ?, UTC_TIMESTAMP(6))`;

const isDuplicate = (err: unknown) => (err as { errno?: number }).errno === 1062;

function mysqlRawWriter(url: string, concurrency: number): RawWriter {
  const pool = createMysqlPool(url, concurrency);
  const params = (r: RawRequest) => [r.scope, r.operation, r.key, r.hash, r.provider, r.amountMinor, r.currency];
  const insertId = (result: unknown) => {
    const first = (Array.isArray(result) ? result[0] : result) as mariadb.UpsertResult;
    return String(first.insertId);
  };
  return {
    name: "raw mysql",
    trips: { events: "2 (4 statements)", minimal: "2", replay: "3" },
    async begin(r, withEvents) {
      try {
        return insertId(await pool.query(withEvents ? `${MY_BEGIN}; ${MY_RESERVED_EVENT}` : MY_BEGIN, params(r)));
      } catch (err) {
        if (isDuplicate(err)) return null;
        throw err;
      }
    },
    async complete(id, code, headers, body, reference, withEvents) {
      const values = [code, headers, body, reference, id];
      await pool.query(withEvents ? `${MY_COMPLETE}; ${MY_COMPLETED_EVENT}` : MY_COMPLETE, withEvents ? [...values, id] : values);
    },
    async replay(r) {
      try {
        await pool.query(`${MY_BEGIN}; ${MY_RESERVED_EVENT}`, params(r));
        throw new Error("expected an existing record");
      } catch (err) {
        if (!isDuplicate(err)) throw err;
      }
      const rows = (await pool.query(MY_SELECT, [r.scope, r.operation, r.key])) as {
        id: bigint;
        payload_hash: string;
        status: string;
        response_code: number;
      }[];
      if (rows[0]?.payload_hash !== r.hash || rows[0].status !== "completed") throw new Error("expected a completed record with the same hash");
      await pool.query(MY_REPLAY_EVENT, [rows[0].id, r.scope, r.operation, r.key, r.hash, rows[0].response_code]);
    },
    end: () => pool.end(),
  };
}

async function protocolBench(db: Database, url: string, args: Args): Promise<void> {
  const runId = Date.now().toString(36);
  // The library as services use it: given the database handle, its statements go straight to the driver.
  const store = new IdempotencyStore(db);
  // Given only the Prisma client, the same statements go through Prisma's raw queries.
  const viaPrisma = new IdempotencyStore(db.prisma);
  const writer = serverModeOf(url) === "mysql" ? mysqlRawWriter(url, args.concurrency) : pgRawWriter(url, args.concurrency);
  const headers: [string, string][] = [["Content-Type", "application/json"]];
  const req = (variant: string, i: number) => {
    const payload = { order_id: `ord_${variant}_${i}`, amount_minor: 1000 + (i % 5000), currency: "EUR", payment_method: "pm_card_visa" };
    return {
      scope: `tenant:bench${i % 5}`,
      operation: "capture_payment",
      key: `bench-${runId}-${variant}-${i}`,
      payload,
      provider: "mockpay",
      amountMinor: payload.amount_minor,
      currency: "EUR",
    };
  };
  const body = (i: number) => JSON.stringify({ id: `pay_${i}`, status: "captured" });

  const lib = async (variant: string, i: number, through = store) => {
    const r = await through.begin(req(variant, i));
    if (r.outcome !== "owner") throw new Error(`expected to own ${variant} ${i}, got ${r.outcome}`);
    await through.complete(r.record.id, { code: 201, headers, body: body(i), providerReference: `mp_ch_${i}` });
  };
  const rawRequest = (variant: string, i: number): RawRequest => {
    const r = req(variant, i);
    return {
      scope: r.scope,
      operation: r.operation,
      key: r.key,
      hash: payloadHash(r.payload),
      provider: r.provider,
      amountMinor: r.amountMinor,
      currency: r.currency,
    };
  };
  const raw = async (variant: string, i: number, withEvents: boolean) => {
    const id = await writer.begin(rawRequest(variant, i), withEvents);
    if (!id) throw new Error(`expected to own ${variant} ${i}`);
    await writer.complete(id, 201, JSON.stringify(headers), body(i), `mp_ch_${i}`, withEvents);
  };
  const libReplay = async (variant: string, i: number) => {
    const r = await store.begin(req(variant, i));
    if (r.outcome !== "replay") throw new Error(`expected a replay, got ${r.outcome}`);
  };
  const rawReplay = (variant: string, i: number) => writer.replay(rawRequest(variant, i));

  try {
    // Warm up connections, plans and the JIT of this process (not measured).
    const warm = Math.min(300, args.requests);
    await measure("warm", "", warm, args.concurrency, (i) => lib("warmlib", i));
    await measure("warm", "", warm, args.concurrency, (i) => lib("warmlibprisma", i, viaPrisma));
    await measure("warm", "", warm, args.concurrency, (i) => raw("warmraw", i, true));
    await measure("warm", "", warm, args.concurrency, (i) => raw("warmmin", i, false));

    const n = args.requests;
    const c = args.concurrency;
    const rows: Measured[] = [];
    const library = await measure("library: IdempotencyStore begin+complete (the handle)", "2", n, c, (i) => lib("lib", i));
    const same = await measure(`${writer.name}: same statements (record + event rows)`, writer.trips.events, n, c, (i) => raw("rawev", i, true));
    rows.push(library, same);
    rows.push(await measure("library through the Prisma client only", "2", n, c, (i) => lib("libprisma", i, viaPrisma)));
    const minimal = writer.name === "raw pg" ? "INSERT ON CONFLICT + UPDATE" : "INSERT + UPDATE";
    rows.push(await measure(`${writer.name}: ${minimal}, no events`, writer.trips.minimal, n, c, (i) => raw("rawmin", i, false)));
    rows.push(await measure("library: replay (insert attempt, then read + event in one)", "2", n, c, (i) => libReplay("lib", i)));
    rows.push(await measure(`${writer.name}: replay (insert attempt, select, event)`, writer.trips.replay, n, c, (i) => rawReplay("rawev", i)));
    printTable(rows, c);
    const rate = (m: Measured) => m.requests / (m.ms / 1000);
    console.log(`library / raw SQL, same statements: ${Math.round((100 * rate(library)) / rate(same))} % of the raw throughput (issue 16's floor: 80 %)`);
  } finally {
    await writer.end();
  }
}

// ---------------------------------------------------------------------------

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  return withBenchDatabase("bench:fill", { keep: args.keep, poolSize: Math.max(args.concurrency, args.fillConcurrency) + 2 }, async (db, url) => {
    console.log(`\nfilling ${fmt(args.records)} records × ${args.eventsPerRecord} events (batches of 100,000, ${args.fillConcurrency} at a time)…`);
    const fill = await bulkGenerate(db.sql, {
      records: args.records,
      eventsPerRecord: args.eventsPerRecord,
      seed: args.seed,
      concurrency: args.fillConcurrency,
      onProgress: (p) =>
        console.log(`  batch ${p.batch}/${p.batches}: ${fmt(p.records)} records, ${fmt(p.events)} events, ${(p.elapsedMs / 1000).toFixed(1)} s`),
    });
    const secs = fill.elapsedMs / 1000;
    console.log(
      `filled ${fmt(fill.records)} records + ${fmt(fill.events)} events + ${fmt(fill.reconciliationItems)} reconciliation items in ${secs.toFixed(1)} s` +
        (fill.skipped ? ` (${fmt(fill.skipped)} keys already present, skipped)` : ""),
    );
    console.log(`  ${fmt(fill.recordsPerSecond)} records/s, ${fmt(fill.eventsPerSecond)} events/s, ${fmt((fill.records + fill.events) / secs)} rows/s in all`);
    console.log(`  status mix: ${JSON.stringify(fill.byStatus)}; events: ${JSON.stringify(fill.eventsByKind)}; double submits: ${fill.doubleSubmits}`);
    // Settle before measuring: without this, autovacuum (1M fresh inserts) and the checkpoint
    // flushing the fill compete with the protocol benchmark below.
    const t = performance.now();
    const settled = await settle(db, ["idempotency_records", "idempotency_events", "reconciliation_items"]);
    const done = db.dialect.name === "mysql" ? settled : `VACUUM (ANALYZE) + ${settled}`;
    console.log(`  ${done}: ${((performance.now() - t) / 1000).toFixed(1)} s; database size ${await databaseSize(db)}`);

    await protocolBench(db, url, args);
  });
}

runBench(main);
