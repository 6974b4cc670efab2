import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { LOCKS } from "./locks";
import { appliedRowsMysql, migrateMysql } from "./migrate-mysql";
import {
  adoptDirFor,
  compare,
  lockRetryFromEnv,
  MigrationError,
  migrationsDirFor,
  missingColumnsError,
  refusal,
  REQUIRED_COLUMNS,
  SHARED_TABLES_MIGRATION,
  readLocalMigrations,
  type AppliedRow,
  type LocalMigration,
  type MigrateResult,
  type MigrationStatus,
} from "./migration-history";
import { buildConcurrently, hasUniqueOn, isLockTimeout, planOnline, SHARED_TABLES, splitStatements, withLockRetries, type LockRetry } from "./online-ddl";
import type { SqlExecutor } from "./sql";

/**
 * Applies prisma/migrations/<name>/migration.sql (PostgreSQL; prisma/mysql/migrations on
 * MySQL/MariaDB, lib/db/migrate-mysql.ts) and records them in `_prisma_migrations` exactly as
 * `prisma migrate deploy` does (same table, same SHA-256 checksum of the file bytes, same
 * lock), so Prisma's own engine can take over wherever it is available. See docs/decisions/0001
 * and 0012.
 */

export {
  DEFAULT_ADOPT_DIR,
  DEFAULT_MIGRATIONS_DIR,
  lockRetryFromEnv,
  MigrationError,
  MYSQL_ADOPT_DIR,
  MYSQL_MIGRATIONS_DIR,
  migrationsDirFor,
  readLocalMigrations,
  SHARED_TABLES_MIGRATION,
  type LocalMigration,
  type MigrateResult,
  type MigrationState,
  type MigrationStatus,
} from "./migration-history";

// The bookkeeping table as Prisma's schema engine creates it on PostgreSQL.
const CREATE_MIGRATIONS_TABLE = `
CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    "id"                    VARCHAR(36) PRIMARY KEY NOT NULL,
    "checksum"              VARCHAR(64) NOT NULL,
    "finished_at"           TIMESTAMPTZ,
    "migration_name"        VARCHAR(255) NOT NULL,
    "logs"                  TEXT,
    "rolled_back_at"        TIMESTAMPTZ,
    "started_at"            TIMESTAMPTZ NOT NULL DEFAULT now(),
    "applied_steps_count"   INTEGER NOT NULL DEFAULT 0
)`;

async function appliedRows(sql: SqlExecutor): Promise<AppliedRow[]> {
  if (sql.dialect.name === "mysql") return appliedRowsMysql(sql);
  const exists = await sql.query<{ t: string | null }>(`SELECT to_regclass('"_prisma_migrations"')::text AS t`);
  if (!exists[0]?.t) return [];
  return sql.query<AppliedRow>(
    `SELECT id, migration_name, checksum, finished_at, rolled_back_at, logs
       FROM "_prisma_migrations" ORDER BY started_at, migration_name`,
  );
}

/** Read-only: what `migrate` would do (from the dialect's folder unless `dir`). Used by /api/health. */
export async function migrationStatus(sql: SqlExecutor, dir?: string): Promise<MigrationStatus> {
  return compare(await readLocalMigrations(dir ?? migrationsDirFor(sql.dialect)), await appliedRows(sql));
}

/**
 * Applies pending migrations. `sql` must be one session (one connection): the
 * advisory lock that serialises concurrent runners belongs to it.
 * PostgreSQL: each migration runs in its own transaction; a failure rolls it back and
 * marks the row rolled back with the error in `logs`, so a fixed file can be re-run.
 * MySQL has no transactional DDL: a failure leaves the row failed, as Prisma does (ADR 0012).
 */
export interface MigrateOptions {
  /** Default: the dialect's folder (prisma/migrations, prisma/mysql/migrations). */
  dir?: string;
  adoptDir?: string;
  log?: (line: string) => void;
}

export function migrate(sql: SqlExecutor, opts: MigrateOptions = {}): Promise<MigrateResult> {
  // Advisory locks are re-entrant within a session, and embedded PGlite has a single
  // session: two runners sharing it would both "hold" the lock and interleave (the
  // second one then sees the first one's unfinished row). Queue them in-process.
  const run = (sessionQueues.get(sql) ?? Promise.resolve()).then(() => migrateLocked(sql, opts));
  sessionQueues.set(
    sql,
    run.catch(() => {}),
  );
  return run;
}

const sessionQueues = new WeakMap<SqlExecutor, Promise<unknown>>();

async function migrateLocked(sql: SqlExecutor, opts: MigrateOptions): Promise<MigrateResult> {
  const log = opts.log ?? (() => {});
  const local = await readLocalMigrations(opts.dir ?? migrationsDirFor(sql.dialect));
  if (sql.dialect.name === "mysql") return migrateMysql(sql, local, { adoptDir: opts.adoptDir ?? adoptDirFor(sql.dialect), log });
  await acquireMigrateLock(sql, log);
  try {
    await sql.exec(CREATE_MIGRATIONS_TABLE);
    const rows = await appliedRows(sql);
    const before = compare(local, rows);
    const refused = refusal(before, rows, (name) => `UPDATE "_prisma_migrations" SET rolled_back_at = now() WHERE migration_name = '${name}'`);
    if (refused) throw refused;
    for (const name of before.unknown) log(`warning: migration ${name} is applied in the database but missing here`);

    const applied: string[] = [];
    const retry = lockRetryFromEnv(log);
    for (const m of local.filter((l) => before.pending.includes(l.name))) {
      const existing = await existingSharedTables(sql);
      if (m.name === SHARED_TABLES_MIGRATION && existing.has("idempotency_records")) {
        await adopt(sql, m, opts.adoptDir ?? adoptDirFor(sql.dialect), retry);
        applied.push(m.name);
        log(`applied ${m.name} (adopted the existing tables)`);
        continue;
      }
      // Indexes on the services' tables that hold rows: built concurrently first, out of the
      // transaction (on an empty table a plain CREATE INDEX in the transaction blocks nobody).
      const plan = planOnline(m.sql, await withRows(sql, existing));
      for (const b of plan.builds) {
        const outcome = await buildConcurrently(sql, b, retry);
        if (outcome !== "kept") log(`${m.name}: index ${b.name} ${outcome} concurrently on ${b.table} (writers went on)`);
      }
      const script = plan.builds.length ? plan.transactional : m.sql;
      await withLockRetries(m.name, retry, () => applyOne(sql, m, script, retry.lockTimeoutMs));
      applied.push(m.name);
      log(`applied ${m.name}`);
    }
    return { applied, status: compare(local, await appliedRows(sql)) };
  } finally {
    await sql.query(`SELECT pg_advisory_unlock($1)`, [LOCKS.migrate]);
  }
}

async function existingSharedTables(sql: SqlExecutor): Promise<Set<string>> {
  const rows = await sql.query<{ t: string }>(
    `SELECT c.relname AS t FROM pg_class c WHERE c.relname = ANY ($1::text[]) AND c.relkind IN ('r', 'p') AND c.relnamespace = current_schema()::regnamespace`,
    [[...SHARED_TABLES]],
  );
  return new Set(rows.map((r) => r.t));
}

/**
 * One migration in one transaction, recorded like prisma migrate deploy: a row when it
 * starts, finished (applied_steps_count 1) when it commits, rolled back with the error in
 * `logs` when it fails. Every lock it waits for is bounded by lock_timeout.
 */
async function applyOne(sql: SqlExecutor, m: LocalMigration, script: string, lockTimeoutMs: number): Promise<void> {
  const id = randomUUID();
  await sql.query(
    `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at, applied_steps_count)
     VALUES ($1, $2, $3, now(), 0)`,
    [id, m.checksum, m.name],
  );
  try {
    await sql.exec(`BEGIN;\nSET LOCAL lock_timeout = '${lockTimeoutMs}ms';\n${script}\n;COMMIT;`);
  } catch (err) {
    await sql.exec("ROLLBACK").catch(() => {});
    const message = err instanceof Error ? err.message : String(err);
    await sql.query(`UPDATE "_prisma_migrations" SET logs = $2, rolled_back_at = now() WHERE id = $1`, [id, message]);
    if (isLockTimeout(err)) throw err; // withLockRetries tries again
    throw new MigrationError(`migration ${m.name} failed and was rolled back: ${message}`, m.name);
  }
  await sql.query(`UPDATE "_prisma_migrations" SET finished_at = now(), applied_steps_count = 1 WHERE id = $1`, [id]);
}

/**
 * A service adopting the console on tables it already has (DESIGN: the console is a guest):
 * instead of the migration that creates them, prisma/adopt/<name>.sql adds what is missing
 * statement by statement (no rewrite; each lock bounded), then the migration's indexes are
 * built concurrently (the unique key only if the table has none on the same columns). The
 * migration is recorded as applied, with what was done in `logs`.
 */
async function adopt(sql: SqlExecutor, m: LocalMigration, adoptDir: string, retry: LockRetry): Promise<void> {
  const columns = await sql.query<{ t: string; c: string }>(
    `SELECT table_name AS t, column_name AS c FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ANY ($1::text[])`,
    [Object.keys(REQUIRED_COLUMNS)],
  );
  const missing = missingColumnsError(new Set(columns.map((r) => `${r.t}.${r.c}`)), new Set(columns.map((r) => r.t)), m.name);
  if (missing) throw missing;
  const script = await readFile(/*turbopackIgnore: true*/ path.join(adoptDir, `${m.name}.sql`), "utf8");
  await sql.exec(`SET lock_timeout = '${retry.lockTimeoutMs}ms'`);
  try {
    for (const statement of splitStatements(script)) await withLockRetries(`adopt ${m.name}`, retry, () => sql.exec(statement));
  } catch (err) {
    throw new MigrationError(`adopting the existing tables failed: ${err instanceof Error ? err.message : String(err)}`, m.name);
  } finally {
    await sql.exec("RESET lock_timeout").catch(() => {});
  }
  const done: string[] = [];
  for (const b of planOnline(m.sql, await existingSharedTables(sql)).builds) {
    if (b.unique && b.name === "idempotency_records_scope_operation_key_key" && (await hasUniqueOn(sql, b.table, ["scope", "operation", "idempotency_key"]))) {
      done.push(`${b.name}: kept the table's own unique key`);
      continue;
    }
    done.push(`${b.name}: ${await buildConcurrently(sql, b, retry)}`);
  }
  await sql.query(
    `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at, finished_at, applied_steps_count, logs)
     VALUES ($1, $2, $3, now(), now(), 1, $4)`,
    [randomUUID(), m.checksum, m.name, `adopted existing tables with prisma/adopt/${m.name}.sql; indexes (concurrently): ${done.join("; ")}`],
  );
}

async function withRows(sql: SqlExecutor, tables: ReadonlySet<string>): Promise<Set<string>> {
  const out = new Set<string>();
  for (const t of tables) if ((await sql.query<{ rows: boolean }>(`SELECT EXISTS (SELECT 1 FROM "${t}") AS rows`))[0].rows) out.add(t);
  return out;
}

/**
 * Prisma's migration lock (the same key as prisma migrate deploy). Asked for again every
 * 200 ms rather than waited for: a session waiting inside pg_advisory_lock holds a snapshot,
 * and CREATE INDEX CONCURRENTLY in the runner that has the lock waits for every older
 * snapshot — a deadlock PostgreSQL would break by cancelling one of them.
 */
async function acquireMigrateLock(sql: SqlExecutor, log: (line: string) => void): Promise<void> {
  for (let waited = false; ; waited = true) {
    const [{ ok }] = await sql.query<{ ok: boolean }>(`SELECT pg_try_advisory_lock($1) AS ok`, [LOCKS.migrate]);
    if (ok) return;
    if (!waited) log("waiting for another migration runner to finish");
    await new Promise((r) => setTimeout(r, 200));
  }
}
