/**
 * Fills the shared tables with demo data.
 *
 *   npm run demo:traffic -- [--seed N] [--days N] [--requests N] [--bulk N]
 *
 * Without --bulk: about --requests (default 3000) realistic requests over the last
 * --days (default 30), written through the writers' protocol library (every
 * scenario the console shows: replays, conflicts, pending, stuck, double charges …).
 * With --bulk N: N records (+ events) generated set-based in SQL, for volume.
 *
 * The requests come with the insights' planted cases (lib/demo/insight-cases.ts), as in the
 * embedded demo.
 *
 * Uses DATABASE_URL (PostgreSQL, MySQL/MariaDB) or the embedded PGlite in PGLITE_DIR, like the
 * app (stop the server first: one process per PGlite folder). The database must be migrated
 * first (npm run db:migrate). Re-running with the same seed adds only
 * replay/in-progress/conflict events, never duplicate records; use another --seed for more history.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { openDatabase, type Database } from "@/lib/db/client";
import { databaseConfigFromEnv, redactUrl } from "@/lib/db/config";
import { migrationStatus } from "@/lib/db/migrate";
import { bulkGenerate } from "@/lib/demo/bulk";
import { generateDemoTraffic } from "@/lib/demo/traffic";

interface Args {
  seed: number;
  days: number;
  requests: number;
  bulk?: number;
}

const USAGE = "usage: npm run demo:traffic -- [--seed N] [--days N] [--requests N] [--bulk N]";

function parseArgs(argv: string[]): Args {
  const args: Args = { seed: 1, days: 30, requests: 3000 };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    if (flag === "--help" || flag === "-h") {
      console.log(USAGE);
      process.exit(0);
    }
    const [name, inline] = flag.split("=", 2);
    const value = inline ?? argv[++i];
    const n = Number(value);
    if (!["--seed", "--days", "--requests", "--bulk"].includes(name)) throw new Error(`unknown option ${flag}\n${USAGE}`);
    if (value === undefined || !Number.isInteger(n) || n < (name === "--seed" ? -2147483648 : 1)) {
      throw new Error(`${name} needs ${name === "--seed" ? "an integer" : "a positive integer"}\n${USAGE}`);
    }
    if (name === "--seed") args.seed = n;
    else if (name === "--days") args.days = n;
    else if (name === "--requests") args.requests = n;
    else args.bulk = n;
  }
  return args;
}

/** Why the database cannot take the traffic yet (pending or edited migrations), or null. The migration runner reads its dialect's history. */
async function notMigrated(db: Database): Promise<string | null> {
  const status = await db.withSession((s) => migrationStatus(s));
  if (status.state === "up_to_date") return null;
  const pending = status.pending.length ? ` (pending: ${status.pending.join(", ")})` : "";
  return `the database is not migrated: migrations are ${status.state}${pending}; run npm run db:migrate first`;
}

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  const config = databaseConfigFromEnv();
  if (config.mode !== "embedded") {
    console.log(`database: ${config.mode} ${redactUrl(config.url!)}`);
  } else {
    console.log(`database: embedded PGlite in ${config.dataDir}`);
    if (!existsSync(path.join(config.dataDir!, "PG_VERSION"))) {
      console.error(`no embedded database in ${config.dataDir}: start the console once (npm start) or run npm run db:migrate first`);
      return 1;
    }
    console.warn("warning: stop the console server first — PGlite does not lock its folder, two processes on it corrupt it");
  }
  const db = await openDatabase(config);
  try {
    const refusal = await notMigrated(db);
    if (refusal) {
      console.error(refusal);
      return 1;
    }
    if (args.bulk) {
      const result = await bulkGenerate(db.sql, {
        records: args.bulk,
        seed: args.seed,
        days: args.days,
        onProgress: (p) => console.log(`  batch ${p.batch}/${p.batches}: ${p.records} records, ${p.events} events, ${p.elapsedMs} ms`),
      });
      console.log(JSON.stringify(result, null, 2));
    } else {
      const summary = await generateDemoTraffic(db, {
        seed: args.seed,
        days: args.days,
        requests: args.requests,
        insightCases: true,
        log: (l) => console.log(l),
      });
      console.log(JSON.stringify(summary, null, 2));
    }
    return 0;
  } finally {
    // PGlite keeps the process alive until it is closed.
    await db.close();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  },
);
