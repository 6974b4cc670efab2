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
 * Uses DATABASE_URL (Postgres) or the embedded PGlite directory, like the app.
 * The database must be migrated first (npm run db:migrate). Re-running with the
 * same seed adds only replay/in-progress/conflict events, never duplicate records;
 * use another --seed for more history.
 */
import { openDatabase, type Database } from "@/lib/db/client";
import { databaseConfigFromEnv, redactUrl } from "@/lib/db/config";
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

async function isMigrated(db: Database): Promise<boolean> {
  const [row] = await db.sql.query<{ t: string | null }>(`SELECT to_regclass('idempotency_records')::text AS t`);
  return Boolean(row?.t);
}

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  const config = databaseConfigFromEnv();
  console.log(`database: ${config.mode === "postgres" ? redactUrl(config.url!) : `embedded PGlite at ${config.dataDir}`}`);
  const db = await openDatabase(config);
  try {
    if (!(await isMigrated(db))) {
      console.error("table idempotency_records does not exist: run npm run db:migrate first");
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
      const summary = await generateDemoTraffic(db, { seed: args.seed, days: args.days, requests: args.requests, log: (l) => console.log(l) });
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
