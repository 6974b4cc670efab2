// What every benchmark script shares: flags, a throwaway Postgres database, settling before timing.
import { availableParallelism } from "node:os";
import pg from "pg";
import { openDatabase, type Database } from "@/lib/db/client";
import { redactUrl } from "@/lib/db/config";
import { migrate } from "@/lib/db/migrate";

export const fmt = (n: number) => Math.round(n).toLocaleString("en-US");

/**
 * `--name N` / `--name=N` whole-number flags into `defaults`, plus `--keep` and `--help`.
 * `numeric` maps each flag to its field; fields in `zeroAllowed` may be 0, others must be ≥ 1.
 */
/** A plain-text table: the first column left-aligned, the others right-aligned (figures). */
export function table(header: string[], rows: string[][]) {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  ");
  console.log(line(header));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const r of rows) console.log(line(r));
}

export function parseBenchArgs<A extends { keep: boolean }>(
  argv: string[],
  defaults: A,
  numeric: Record<string, keyof A>,
  usage: string,
  zeroAllowed: (keyof A)[] = [],
): A {
  const args = { ...defaults };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split("=", 2);
    if (flag === "--keep") {
      args.keep = true;
      continue;
    }
    if (flag === "--help" || flag === "-h") {
      console.log(usage);
      process.exit(0);
    }
    const field = numeric[flag];
    if (!field) throw new Error(`unknown option ${argv[i]}\n${usage}`);
    const value = Number(inline ?? argv[++i]);
    if (!Number.isInteger(value) || value < (zeroAllowed.includes(field) ? 0 : 1)) throw new Error(`${flag} needs a whole number\n${usage}`);
    (args as Record<keyof A, unknown>)[field] = value;
  }
  return args;
}

async function withAdmin<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/**
 * Runs `fn` on a migrated Postgres database: BENCH_DATABASE_URL as is, or a throwaway
 * `ic_bench_<time>` on the DATABASE_URL server, dropped afterwards unless `keep`.
 * Returns the exit code (2 when no server is configured).
 */
export async function withBenchDatabase(
  name: string,
  opts: { keep: boolean; poolSize: number },
  fn: (db: Database, url: string) => Promise<void>,
): Promise<number> {
  const given = process.env.BENCH_DATABASE_URL?.trim();
  const server = process.env.DATABASE_URL?.trim();
  if (!given && !server) {
    console.error(`${name} needs a Postgres server: set DATABASE_URL (a throwaway database is created on it) or BENCH_DATABASE_URL (used as is)`);
    return 2;
  }
  let url: string;
  let dropName: string | null = null;
  if (given) url = given;
  else {
    dropName = `ic_bench_${new Date().toISOString().replace(/\D/g, "").slice(0, 14)}`;
    await withAdmin(server!, (c) => c.query(`CREATE DATABASE "${dropName}"`));
    const u = new URL(server!);
    u.pathname = `/${dropName}`;
    url = u.toString();
  }
  console.log(`database: ${redactUrl(url)}${dropName ? (opts.keep ? " (throwaway, kept: --keep)" : " (throwaway, dropped at the end)") : " (BENCH_DATABASE_URL, kept)"}`);

  let db: Database | null = null;
  try {
    db = await openDatabase({ mode: "postgres", url }, { poolSize: opts.poolSize });
    const [version] = await db.sql.query<{ v: string; jit: string }>(`SELECT current_setting('server_version') AS v, current_setting('jit') AS jit`);
    // Library and raw SQL alike run on the console's connections (lib/db/client.ts turns JIT off).
    console.log(`server: PostgreSQL ${version.v}, client cores: ${availableParallelism()}; every statement on the console's connections (jit=${version.jit})`);
    await db.withSession((s) => migrate(s, { log: (l) => console.log(`  ${l}`) }));
    await fn(db, url);
    return 0;
  } finally {
    await db?.close();
    if (dropName && !opts.keep) {
      await withAdmin(server!, (c) => c.query(`DROP DATABASE IF EXISTS "${dropName}" WITH (FORCE)`));
      console.log(`\ndropped ${dropName}`);
    } else if (dropName) {
      console.log(`\nkept ${dropName}: DROP DATABASE "${dropName}" when done`);
    }
  }
}

/** VACUUM (ANALYZE) the given tables and CHECKPOINT, so autovacuum and the flush of a fill don't compete with timing. */
export async function settle(db: Database, tables: string[]): Promise<string> {
  for (const table of tables) await db.sql.query(`VACUUM (ANALYZE) ${table}`);
  return db.sql.query(`CHECKPOINT`).then(
    () => "CHECKPOINT",
    () => "no CHECKPOINT (needs superuser or pg_checkpoint)",
  );
}

/** Exit with main's code; print the stack of an unexpected error. */
export function runBench(main: () => Promise<number>): void {
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      console.error(err instanceof Error ? (err.stack ?? err.message) : err);
      process.exit(1);
    },
  );
}

/**
 * Loads with the tables' secondary indexes dropped and rebuilds them afterwards
 * (CREATE INDEX sorts once; maintaining a dozen random-key b-trees row by row is what
 * makes a 10M-row fill slow). Primary keys, unique indexes and constraint indexes stay,
 * so ON CONFLICT and foreign keys keep working during the load. Returns the rebuild time.
 */
export async function withDeferredIndexes(db: Database, tables: string[], load: () => Promise<void>): Promise<number> {
  const indexes = await db.sql.query<{ name: string; def: string }>(
    `SELECT i.relname AS name, pg_get_indexdef(x.indexrelid) AS def
       FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
      WHERE t.relname = ANY($1::text[]) AND NOT x.indisunique AND NOT x.indisprimary
        AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid)`,
    [tables],
  );
  for (const ix of indexes) await db.sql.query(`DROP INDEX "${ix.name.replace(/"/g, '""')}"`);
  console.log(`  deferred ${indexes.length} secondary indexes on ${tables.join(", ")} until after the load`);
  await load();
  const started = performance.now();
  await db.withSession(async (s) => {
    await s.query(`SET maintenance_work_mem = '1GB'`);
    await s.query(`SET max_parallel_maintenance_workers = 2`);
    for (const ix of indexes) await s.query(ix.def);
  });
  const ms = performance.now() - started;
  console.log(`  rebuilt ${indexes.length} indexes in ${(ms / 1000).toFixed(1)} s`);
  return ms;
}
