import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { MYSQL_MIGRATE_LOCK } from "./locks";
import {
  compare,
  lockRetryFromEnv,
  MigrationError,
  missingColumnsError,
  refusal,
  REQUIRED_COLUMNS,
  SHARED_TABLES_MIGRATION,
  type AppliedRow,
  type LocalMigration,
  type MigrateResult,
} from "./migration-history";
import { parseMysqlVersion, unsupportedMysql } from "./mysql";
import { splitMysqlStatements, withoutComments } from "./mysql-script";
import { SHARED_TABLES, withLockRetries, type LockRetry } from "./online-ddl";
import { paramList } from "./params";
import { MYSQL } from "./dialect";
import type { SqlExecutor } from "./sql";

/**
 * The migration runner on MySQL / MariaDB (ADR 0012), called by lib/db/migrate.ts: the same
 * folders' format, the same bookkeeping as Prisma's schema engine on MySQL, Prisma's lock. There
 * is no transactional DDL, so a migration is applied statement by statement and a failure is
 * left as Prisma leaves it: started, neither finished nor rolled back, the error in `logs`.
 */

// The bookkeeping table exactly as Prisma's schema engine creates it on MySQL
// (prisma-engines, sql-schema-connector flavour/mysql.rs, create_migrations_table).
const CREATE_MIGRATIONS_TABLE = `
CREATE TABLE IF NOT EXISTS _prisma_migrations (
    id                      VARCHAR(36) PRIMARY KEY NOT NULL,
    checksum                VARCHAR(64) NOT NULL,
    finished_at             DATETIME(3),
    migration_name          VARCHAR(255) NOT NULL,
    logs                    TEXT,
    rolled_back_at          DATETIME(3),
    started_at              DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    applied_steps_count     INTEGER UNSIGNED NOT NULL DEFAULT 0
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`;

const rolledBack = (name: string) => `UPDATE _prisma_migrations SET rolled_back_at = UTC_TIMESTAMP(3) WHERE migration_name = '${name}' AND finished_at IS NULL`;

export async function appliedRowsMysql(sql: SqlExecutor): Promise<AppliedRow[]> {
  const [{ n }] = await sql.query<{ n: bigint }>(
    `SELECT COUNT(*) AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '_prisma_migrations'`,
  );
  if (!Number(n)) return [];
  return sql.query<AppliedRow>(
    `SELECT id, migration_name, checksum, finished_at, rolled_back_at, logs FROM _prisma_migrations ORDER BY started_at, migration_name`,
  );
}

export async function migrateMysql(sql: SqlExecutor, local: LocalMigration[], opts: { adoptDir: string; log: (line: string) => void }): Promise<MigrateResult> {
  const { log } = opts;
  const [{ v }] = await sql.query<{ v: string }>("SELECT VERSION() AS v");
  const old = unsupportedMysql(parseMysqlVersion(v));
  if (old) throw new MigrationError(old);
  await acquireMigrateLock(sql, log);
  const retry = lockRetryFromEnv(log);
  // Every lock wait bounded (metadata locks: lock_wait_timeout; rows: innodb_lock_wait_timeout, in
  // seconds); READ COMMITTED so a backfill reads the services' tables without locking them.
  const seconds = Math.max(1, Math.ceil(retry.lockTimeoutMs / 1000));
  await sql.exec(
    `SET SESSION lock_wait_timeout = ${seconds}; SET SESSION innodb_lock_wait_timeout = ${seconds}; SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED`,
  );
  try {
    await sql.exec(CREATE_MIGRATIONS_TABLE);
    const rows = await appliedRowsMysql(sql);
    const before = compare(local, rows);
    const refused = refusal(before, rows, rolledBack);
    if (refused) throw refused;
    for (const name of before.unknown) log(`warning: migration ${name} is applied in the database but missing here`);

    const applied: string[] = [];
    for (const m of local.filter((l) => before.pending.includes(l.name))) {
      if (m.name === SHARED_TABLES_MIGRATION && (await existingSharedTables(sql)).has("idempotency_records")) {
        await adopt(sql, m, opts.adoptDir, retry);
        applied.push(m.name);
        log(`applied ${m.name} (adopted the existing tables)`);
        continue;
      }
      await applyOne(sql, m, retry);
      applied.push(m.name);
      log(`applied ${m.name}`);
    }
    return { applied, status: compare(local, await appliedRowsMysql(sql)) };
  } finally {
    await sql.exec("SET SESSION lock_wait_timeout = DEFAULT; SET SESSION innodb_lock_wait_timeout = DEFAULT").catch(() => {});
    await sql.query(`SELECT RELEASE_LOCK('${MYSQL_MIGRATE_LOCK}') AS released`).catch(() => {});
  }
}

/**
 * Prisma's lock. Prisma waits 10 s in GET_LOCK and goes on without it; ours asks at once, says
 * that it waits, then waits until it has it.
 */
async function acquireMigrateLock(sql: SqlExecutor, log: (line: string) => void): Promise<void> {
  for (let waited = false; ; waited = true) {
    const [{ ok }] = await sql.query<{ ok: number | null }>(`SELECT GET_LOCK('${MYSQL_MIGRATE_LOCK}', ${waited ? 10 : 0}) AS ok`);
    if (Number(ok) === 1) return;
    if (!waited) log("waiting for another migration runner to finish");
  }
}

/** The text Prisma's schema engine writes to `logs` when a migration fails (P3018), with the statement number. */
function prismaFailureLogs(name: string, err: unknown, statement: number): string {
  const e = err as { errno?: number; sqlMessage?: string; message?: string };
  return (
    "A migration failed to apply. New migrations cannot be applied before the error is recovered from. Read more about how to resolve migration issues in a production database: https://pris.ly/d/migrate-resolve\n\n" +
    `Migration name: ${name}\n\nDatabase error code: ${e.errno ?? "none"}\n\nDatabase error:\n${e.sqlMessage ?? e.message ?? String(err)}\n\n` +
    `Please check the query number ${statement} from the migration file.`
  );
}

/**
 * One migration, statement by statement on this session, recorded like Prisma: a row when it
 * starts; applied_steps_count 1 and finished_at when every statement went through; on a failure
 * the error in `logs` and nothing else (the statements before it stay applied).
 */
async function applyOne(sql: SqlExecutor, m: LocalMigration, retry: LockRetry): Promise<void> {
  const id = randomUUID();
  await sql.query(`INSERT INTO _prisma_migrations (id, checksum, migration_name, started_at, applied_steps_count) VALUES (?, ?, ?, UTC_TIMESTAMP(3), 0)`, [
    id,
    m.checksum,
    m.name,
  ]);
  const statements = splitMysqlStatements(m.sql);
  let inTransaction = false;
  for (let i = 0; i < statements.length; i++) {
    const statement = statements[i];
    try {
      // A statement that gave up waiting for a lock did nothing (atomic DDL) and runs again; not
      // inside an explicit transaction, which a deadlock would have rolled back whole.
      if (inTransaction) await sql.exec(statement);
      else await withLockRetries(`${m.name}: statement ${i + 1}`, retry, () => sql.exec(statement));
    } catch (err) {
      if (inTransaction) await sql.exec("ROLLBACK").catch(() => {});
      await sql.query(`UPDATE _prisma_migrations SET logs = ? WHERE id = ?`, [prismaFailureLogs(m.name, err, i + 1), id]);
      const message = (err as { sqlMessage?: string }).sqlMessage ?? (err instanceof Error ? err.message : String(err));
      const kept = i === 0 ? "nothing of it was applied" : `statements 1–${i} were applied and stay`;
      throw new MigrationError(
        `migration ${m.name} failed at statement ${i + 1} of ${statements.length}: ${message}. MySQL has no transactional DDL: ${kept}. ` +
          `Repair the database if needed, then mark it rolled back (${rolledBack(m.name)}) or applied (prisma migrate resolve --applied ${m.name}), and migrate again`,
        m.name,
      );
    }
    const code = withoutComments(statement);
    if (/^(START\s+TRANSACTION|BEGIN)\b/i.test(code)) inTransaction = true;
    else if (/^(COMMIT|ROLLBACK)\b/i.test(code)) inTransaction = false;
  }
  await sql.query(`UPDATE _prisma_migrations SET applied_steps_count = applied_steps_count + 1, finished_at = UTC_TIMESTAMP(3) WHERE id = ?`, [id]);
}

async function existingSharedTables(sql: SqlExecutor): Promise<Set<string>> {
  const p = paramList(MYSQL);
  const rows = await sql.query<{ t: string }>(
    `SELECT TABLE_NAME AS t FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_TYPE = 'BASE TABLE' AND TABLE_NAME IN (${p.list(SHARED_TABLES)})`,
    p.values,
  );
  return new Set(rows.map((r) => r.t));
}

const columnExists = async (sql: SqlExecutor, table: string, column: string) =>
  Number(
    (
      await sql.query<{ n: bigint }>(
        `SELECT COUNT(*) AS n FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = ?`,
        [table, column],
      )
    )[0].n,
  ) > 0;

/** The table's indexes: name → unique, columns in order. */
async function indexesOf(sql: SqlExecutor, table: string): Promise<Map<string, { unique: boolean; columns: string[] }>> {
  const rows = await sql.query<{ name: string; non_unique: number | bigint; col: string }>(
    `SELECT INDEX_NAME AS name, NON_UNIQUE AS non_unique, COLUMN_NAME AS col FROM information_schema.STATISTICS
      WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? ORDER BY INDEX_NAME, SEQ_IN_INDEX`,
    [table],
  );
  const out = new Map<string, { unique: boolean; columns: string[] }>();
  for (const r of rows) {
    const ix = out.get(r.name) ?? { unique: Number(r.non_unique) === 0, columns: [] };
    ix.columns.push(r.col);
    out.set(r.name, ix);
  }
  return out;
}

/**
 * A service adopting the console on tables it already has (ADR 0010 and 0012): the adoption
 * script instead of the first migration, each of its ADD COLUMN and CREATE INDEX statements only
 * where the column or index is absent, every lock wait bounded; recorded as applied with what was
 * done in `logs`. Refused, changing nothing, when a required column is missing or
 * idempotency_records.id is not a signed BIGINT.
 */
async function adopt(sql: SqlExecutor, m: LocalMigration, adoptDir: string, retry: LockRetry): Promise<void> {
  const p = paramList(MYSQL);
  const columns = await sql.query<{ t: string; c: string; type: string }>(
    `SELECT TABLE_NAME AS t, COLUMN_NAME AS c, COLUMN_TYPE AS type FROM information_schema.COLUMNS
      WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN (${p.list(Object.keys(REQUIRED_COLUMNS))})`,
    p.values,
  );
  const missing = missingColumnsError(new Set(columns.map((r) => `${r.t}.${r.c}`)), new Set(columns.map((r) => r.t)), m.name);
  if (missing) throw missing;
  const idType = columns.find((r) => r.t === "idempotency_records" && r.c === "id")!.type;
  if (!/^bigint(\(\d+\))?$/i.test(idType)) {
    throw new MigrationError(
      `cannot adopt the existing tables: idempotency_records.id is ${idType}, and the console's tables reference it as a signed BIGINT; ` +
        "change it (ALTER TABLE idempotency_records MODIFY id BIGINT NOT NULL AUTO_INCREMENT rebuilds the table: in a quiet period), then run the migration again",
      m.name,
    );
  }
  const script = await readFile(/*turbopackIgnore: true*/ path.join(adoptDir, `${m.name}.sql`), "utf8");
  const done: string[] = [];
  try {
    for (const statement of splitMysqlStatements(script)) {
      const code = withoutComments(statement);
      const add = /^ALTER\s+TABLE\s+`(\w+)`\s+ADD\s+COLUMN\s+`(\w+)`/i.exec(code);
      if (add && (await columnExists(sql, add[1], add[2]))) continue;
      const index = /^CREATE\s+(UNIQUE\s+)?INDEX\s+`(\w+)`\s+ON\s+`(\w+)`\s*\(([^)]*)\)/i.exec(code);
      if (index) {
        const [, unique, name, table, cols] = index;
        const existing = await indexesOf(sql, table);
        if (existing.has(name)) continue;
        const wanted = cols.split(",").map((c) => c.trim().replace(/`/g, ""));
        const same = [...existing].find(([, ix]) => ix.unique && ix.columns.join() === wanted.join());
        if (unique && same) {
          done.push(`${name}: kept the table's own unique key ${same[0]}`);
          continue;
        }
      }
      await withLockRetries(`adopt ${m.name}`, retry, () => sql.exec(statement));
      if (add) done.push(`added ${add[1]}.${add[2]}`);
      else if (index) done.push(`${index[2]}: built (online)`);
    }
  } catch (err) {
    const e = err as { sqlMessage?: string };
    throw new MigrationError(`adopting the existing tables failed: ${e.sqlMessage ?? (err instanceof Error ? err.message : String(err))}`, m.name);
  }
  await sql.query(
    `INSERT INTO _prisma_migrations (id, checksum, migration_name, started_at, finished_at, applied_steps_count, logs)
     VALUES (?, ?, ?, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3), 1, ?)`,
    [randomUUID(), m.checksum, m.name, `adopted existing tables with prisma/mysql/adopt/${m.name}.sql; ${done.join("; ") || "nothing was missing"}`],
  );
}
