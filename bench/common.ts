// What every benchmark script shares: flags, a throwaway database (PostgreSQL or MySQL/MariaDB), settling before timing.
import { availableParallelism } from "node:os";
import * as mariadb from "mariadb";
import pg from "pg";
import { openDatabase, type Database } from "@/lib/db/client";
import { redactUrl, type DatabaseMode } from "@/lib/db/config";
import { migrate } from "@/lib/db/migrate";
import { paramList } from "@/lib/db/params";

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

/** `--flag N` / `--flag=N` for `numeric`, on/off flags (`--keep` and `switches`) without a value. */
export function parseBenchArgs<A extends { keep: boolean }>(
  argv: string[],
  defaults: A,
  numeric: Record<string, keyof A>,
  usage: string,
  zeroAllowed: (keyof A)[] = [],
  switches: Record<string, keyof A> = {},
): A {
  const args = { ...defaults };
  const onOff: Record<string, keyof A> = { "--keep": "keep", ...switches };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split("=", 2);
    if (onOff[flag]) {
      (args as Record<keyof A, unknown>)[onOff[flag]] = true;
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

/** The server's mode by its URL: mysql:// and mariadb:// are MySQL/MariaDB (ADR 0012), anything else PostgreSQL. */
export const serverModeOf = (url: string): Exclude<DatabaseMode, "embedded"> => (/^(mysql|mariadb):\/\//.test(url) ? "mysql" : "postgres");

/** Runs one administrative statement (CREATE/DROP DATABASE) on the server of `url`, outside any database. */
async function onServer(url: string, statement: string): Promise<void> {
  if (serverModeOf(url) === "mysql") {
    const u = new URL(url);
    const c = await mariadb.createConnection({
      host: u.hostname.replace(/^\[|\]$/g, "") || "localhost",
      port: u.port ? Number(u.port) : 3306,
      user: decodeURIComponent(u.username) || undefined,
      password: u.password ? decodeURIComponent(u.password) : undefined,
    });
    try {
      await c.query(statement);
    } finally {
      await c.end();
    }
    return;
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

/**
 * Runs `fn` on a migrated database: BENCH_DATABASE_URL as is, or a throwaway `ic_bench_<time>`
 * on the DATABASE_URL server (PostgreSQL, or MySQL/MariaDB for a mysql:// URL), dropped
 * afterwards unless `keep`. Returns the exit code (2 when no server is configured).
 */
export async function withBenchDatabase(
  name: string,
  opts: { keep: boolean; poolSize: number },
  fn: (db: Database, url: string) => Promise<void>,
): Promise<number> {
  const given = process.env.BENCH_DATABASE_URL?.trim();
  const server = process.env.DATABASE_URL?.trim();
  if (!given && !server) {
    console.error(
      `${name} needs a database server: set DATABASE_URL (postgres:// or mysql://; a throwaway database is created on it) or BENCH_DATABASE_URL (used as is)`,
    );
    return 2;
  }
  let url: string;
  let dropName: string | null = null;
  if (given) url = given;
  else {
    dropName = `ic_bench_${new Date().toISOString().replace(/\D/g, "").slice(0, 14)}`;
    await onServer(
      server!,
      serverModeOf(server!) === "mysql" ? `CREATE DATABASE \`${dropName}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin` : `CREATE DATABASE "${dropName}"`,
    );
    const u = new URL(server!);
    u.pathname = `/${dropName}`;
    url = u.toString();
  }
  console.log(
    `database: ${redactUrl(url)}${dropName ? (opts.keep ? " (throwaway, kept: --keep)" : " (throwaway, dropped at the end)") : " (BENCH_DATABASE_URL, kept)"}`,
  );

  const mode = serverModeOf(url);
  let db: Database | null = null;
  try {
    db = await openDatabase({ mode, url }, { poolSize: opts.poolSize });
    if (mode === "mysql") {
      const [v] = await db.sql.query<{ v: string; pool: bigint | number; flush: bigint | number }>(
        `SELECT VERSION() AS v, @@innodb_buffer_pool_size AS pool, @@innodb_flush_log_at_trx_commit AS flush`,
      );
      console.log(
        `server: ${v.v}, client cores: ${availableParallelism()}; innodb_buffer_pool_size ${fmt(Number(v.pool) / 2 ** 20)} MB, ` +
          `innodb_flush_log_at_trx_commit=${v.flush}; every statement on the console's connections (ADR 0012 session settings)`,
      );
    } else {
      const [version] = await db.sql.query<{ v: string; jit: string }>(`SELECT current_setting('server_version') AS v, current_setting('jit') AS jit`);
      // Library and raw SQL alike run on the console's connections (lib/db/client.ts turns JIT off).
      console.log(
        `server: PostgreSQL ${version.v}, client cores: ${availableParallelism()}; every statement on the console's connections (jit=${version.jit})`,
      );
    }
    await db.withSession((s) => migrate(s, { log: (l) => console.log(`  ${l}`) }));
    await fn(db, url);
    return 0;
  } finally {
    await db?.close();
    const mysql = mode === "mysql";
    if (dropName && !opts.keep) {
      await onServer(server!, mysql ? `DROP DATABASE IF EXISTS \`${dropName}\`` : `DROP DATABASE IF EXISTS "${dropName}" WITH (FORCE)`);
      console.log(`\ndropped ${dropName}`);
    } else if (dropName) {
      console.log(`\nkept ${dropName}: DROP DATABASE ${mysql ? `\`${dropName}\`` : `"${dropName}"`} when done`);
    }
  }
}

/**
 * VACUUM (ANALYZE) the given tables and CHECKPOINT, so autovacuum and the flush of a fill don't
 * compete with timing. MySQL/MariaDB: ANALYZE TABLE (InnoDB purges and flushes in the background;
 * there is no checkpoint to ask for). Says what it did.
 */
export async function settle(db: Database, tables: string[]): Promise<string> {
  if (db.dialect.name === "mysql") {
    await db.sql.query(`ANALYZE TABLE ${tables.join(", ")}`);
    return "ANALYZE TABLE";
  }
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

/** How big the database is, for the log (PostgreSQL's pg_size_pretty; MySQL's data and index lengths, an estimate). */
export async function databaseSize(db: Database): Promise<string> {
  if (db.dialect.name === "mysql") {
    const [row] = await db.sql.query<{ bytes: string | null }>(
      `SELECT SUM(DATA_LENGTH + INDEX_LENGTH) AS bytes FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()`,
    );
    return `${fmt(Number(row.bytes ?? 0) / 2 ** 20)} MB (InnoDB data + indexes)`;
  }
  const [row] = await db.sql.query<{ size: string }>(`SELECT pg_size_pretty(pg_database_size(current_database())) AS size`);
  return row.size;
}

/**
 * Loads with the tables' secondary indexes dropped and rebuilds them afterwards
 * (CREATE INDEX sorts once; maintaining a dozen random-key b-trees row by row is what
 * makes a 10M-row fill slow). Primary keys, unique indexes and constraint indexes stay,
 * so ON CONFLICT and foreign keys keep working during the load. Returns the rebuild time.
 */
export async function withDeferredIndexes(db: Database, tables: string[], load: () => Promise<void>): Promise<number> {
  if (db.dialect.name === "mysql") return withDeferredMysqlIndexes(db, tables, load);
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

/**
 * MySQL/MariaDB: the same, with one ALTER TABLE per table each way (InnoDB builds all of a
 * table's new indexes in one sorted pass). The secondary non-unique indexes are read from
 * information_schema.STATISTICS; those a foreign key needs stay (InnoDB refuses to drop them).
 */
async function withDeferredMysqlIndexes(db: Database, tables: string[], load: () => Promise<void>): Promise<number> {
  const p = paramList(db.dialect);
  const columns = await db.sql.query<{ t: string; name: string; col: string; sub: bigint | number | null; dir: string | null }>(
    `SELECT s.TABLE_NAME AS t, s.INDEX_NAME AS name, s.COLUMN_NAME AS col, s.SUB_PART AS sub, s.COLLATION AS dir
       FROM information_schema.STATISTICS s
      WHERE s.TABLE_SCHEMA = DATABASE() AND s.TABLE_NAME IN (${p.list(tables)}) AND s.NON_UNIQUE = 1
        AND NOT EXISTS (SELECT 1 FROM information_schema.KEY_COLUMN_USAGE k
                         WHERE k.TABLE_SCHEMA = s.TABLE_SCHEMA AND k.TABLE_NAME = s.TABLE_NAME AND k.COLUMN_NAME = s.COLUMN_NAME
                           AND k.REFERENCED_TABLE_NAME IS NOT NULL)
      ORDER BY s.TABLE_NAME, s.INDEX_NAME, s.SEQ_IN_INDEX`,
    p.values,
  );
  const byTable = new Map<string, Map<string, string[]>>();
  for (const c of columns) {
    const indexes = byTable.get(c.t) ?? new Map<string, string[]>();
    const parts = indexes.get(c.name) ?? [];
    parts.push(`\`${c.col}\`${c.sub === null ? "" : `(${Number(c.sub)})`}${c.dir === "D" ? " DESC" : ""}`);
    indexes.set(c.name, parts);
    byTable.set(c.t, indexes);
  }
  let count = 0;
  for (const [table, indexes] of byTable) {
    await db.sql.exec(`ALTER TABLE \`${table}\` ${[...indexes.keys()].map((name) => `DROP INDEX \`${name}\``).join(", ")}`);
    count += indexes.size;
  }
  console.log(`  deferred ${count} secondary indexes on ${tables.join(", ")} until after the load`);
  await load();
  const started = performance.now();
  for (const [table, indexes] of byTable) {
    await db.sql.exec(`ALTER TABLE \`${table}\` ${[...indexes].map(([name, parts]) => `ADD INDEX \`${name}\` (${parts.join(", ")})`).join(", ")}`);
  }
  const ms = performance.now() - started;
  console.log(`  rebuilt ${count} indexes in ${(ms / 1000).toFixed(1)} s`);
  return ms;
}
