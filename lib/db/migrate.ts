import { LOCKS } from "./locks";
import { createHash, randomUUID } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { buildConcurrently, hasUniqueOn, isLockTimeout, planOnline, SHARED_TABLES, splitStatements, withLockRetries, type LockRetry } from "./online-ddl";
import type { SqlExecutor } from "./sql";

/**
 * Applies prisma/migrations/<name>/migration.sql and records them in
 * `_prisma_migrations` exactly as `prisma migrate deploy` does (same table, same
 * SHA-256 checksum of the file bytes, same advisory lock id), so Prisma's own
 * engine can take over wherever it is available. See docs/decisions/0001.
 */


// Statically scoped so the bundler traces only this folder.
export const DEFAULT_MIGRATIONS_DIR = path.join(process.cwd(), "prisma", "migrations");
/** What replaces a migration when the tables it creates already exist (a service adopting the console): prisma/adopt/<name>.sql. */
export const DEFAULT_ADOPT_DIR = path.join(process.cwd(), "prisma", "adopt");
/** The migration that creates the services' tables. */
export const SHARED_TABLES_MIGRATION = "20261130000000_shared_tables";

/** Bounded lock waits on the services' tables (lib/db/online-ddl.ts): MIGRATE_LOCK_TIMEOUT_MS (default 3000), MIGRATE_LOCK_RETRIES (default 20). */
export function lockRetryFromEnv(log: (line: string) => void, env: Record<string, string | undefined> = process.env): LockRetry {
  const int = (v: string | undefined, d: number) => (v !== undefined && /^\d+$/.test(v.trim()) ? Number(v) : d);
  return { lockTimeoutMs: Math.max(1, int(env.MIGRATE_LOCK_TIMEOUT_MS, 3000)), retries: int(env.MIGRATE_LOCK_RETRIES, 20), log };
}

/** The columns the console cannot read a table without; adopting a table that lacks one is refused. */
const REQUIRED_COLUMNS: Record<string, readonly string[]> = {
  idempotency_records: ["id", "scope", "operation", "idempotency_key", "payload_hash", "status", "expires_at"],
  idempotency_events: ["id", "scope", "operation", "idempotency_key", "kind"],
  reconciliation_items: ["id", "record_id", "provider"],
  outbox_messages: ["id", "topic", "payload"],
};

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

export interface LocalMigration {
  name: string;
  checksum: string;
  sql: string;
}

interface AppliedRow {
  id: string;
  migration_name: string;
  checksum: string;
  finished_at: Date | null;
  rolled_back_at: Date | null;
  logs: string | null;
}

export class MigrationError extends Error {
  constructor(message: string, readonly migration?: string) {
    super(message);
    this.name = "MigrationError";
  }
}

export async function readLocalMigrations(dir = DEFAULT_MIGRATIONS_DIR): Promise<LocalMigration[]> {
  const entries = await readdir(/*turbopackIgnore: true*/ dir, { withFileTypes: true });
  const names = entries.filter((e) => e.isDirectory()).map((e) => e.name).sort();
  return Promise.all(
    names.map(async (name) => {
      const bytes = await readFile(path.join(dir, name, "migration.sql"));
      return { name, checksum: createHash("sha256").update(bytes).digest("hex"), sql: bytes.toString("utf8") };
    }),
  );
}

export type MigrationState = "up_to_date" | "pending" | "modified" | "failed" | "unknown_applied";

export interface MigrationStatus {
  state: MigrationState;
  local: number;
  applied: string[];
  pending: string[];
  /** Applied migrations whose file changed since. */
  modified: string[];
  /** Started but never finished nor rolled back (a crashed run outside a transaction). */
  failed: string[];
  /** Recorded in the database but absent here (the database is newer than this code). */
  unknown: string[];
}

async function appliedRows(sql: SqlExecutor): Promise<AppliedRow[]> {
  const exists = await sql.query<{ t: string | null }>(`SELECT to_regclass('"_prisma_migrations"')::text AS t`);
  if (!exists[0]?.t) return [];
  return sql.query<AppliedRow>(
    `SELECT id, migration_name, checksum, finished_at, rolled_back_at, logs
       FROM "_prisma_migrations" ORDER BY started_at, migration_name`,
  );
}

function compare(local: LocalMigration[], rows: AppliedRow[]): MigrationStatus {
  const live = rows.filter((r) => r.rolled_back_at === null);
  const finished = new Map(live.filter((r) => r.finished_at !== null).map((r) => [r.migration_name, r]));
  const failed = live.filter((r) => r.finished_at === null).map((r) => r.migration_name);
  const localNames = new Set(local.map((m) => m.name));
  const modified = local.filter((m) => finished.has(m.name) && finished.get(m.name)!.checksum !== m.checksum).map((m) => m.name);
  const pending = local.filter((m) => !finished.has(m.name) && !failed.includes(m.name)).map((m) => m.name);
  const unknown = [...finished.keys()].filter((n) => !localNames.has(n));
  const state: MigrationState = failed.length
    ? "failed"
    : modified.length
      ? "modified"
      : pending.length
        ? "pending"
        : unknown.length
          ? "unknown_applied"
          : "up_to_date";
  return { state, local: local.length, applied: [...finished.keys()], pending, modified, failed, unknown };
}

/** Read-only: what `migrate` would do. Used by /api/health. */
export async function migrationStatus(sql: SqlExecutor, dir = DEFAULT_MIGRATIONS_DIR): Promise<MigrationStatus> {
  return compare(await readLocalMigrations(dir), await appliedRows(sql));
}

export interface MigrateResult {
  applied: string[];
  status: MigrationStatus;
}

/**
 * Applies pending migrations. `sql` must be one session (one connection): the
 * advisory lock that serialises concurrent runners belongs to it.
 * Each migration runs in its own transaction; a failure rolls it back and marks
 * the row rolled back with the error in `logs`, so a fixed file can be re-run.
 */
export interface MigrateOptions {
  dir?: string;
  adoptDir?: string;
  log?: (line: string) => void;
}

export function migrate(sql: SqlExecutor, opts: MigrateOptions = {}): Promise<MigrateResult> {
  // Advisory locks are re-entrant within a session, and embedded PGlite has a single
  // session: two runners sharing it would both "hold" the lock and interleave (the
  // second one then sees the first one's unfinished row). Queue them in-process.
  const run = (sessionQueues.get(sql) ?? Promise.resolve()).then(() => migrateLocked(sql, opts));
  sessionQueues.set(sql, run.catch(() => {}));
  return run;
}

const sessionQueues = new WeakMap<SqlExecutor, Promise<unknown>>();

async function migrateLocked(sql: SqlExecutor, opts: MigrateOptions): Promise<MigrateResult> {
  const log = opts.log ?? (() => {});
  const local = await readLocalMigrations(opts.dir);
  await acquireMigrateLock(sql, log);
  try {
    await sql.exec(CREATE_MIGRATIONS_TABLE);
    const before = compare(local, await appliedRows(sql));
    if (before.failed.length) {
      throw new MigrationError(
        `migration ${before.failed[0]} started but never finished; inspect the database, then mark it rolled back ` +
          `(UPDATE "_prisma_migrations" SET rolled_back_at = now() WHERE migration_name = '${before.failed[0]}') or resolve it with prisma migrate resolve`,
        before.failed[0],
      );
    }
    if (before.modified.length) {
      throw new MigrationError(
        `migration ${before.modified[0]} was modified after it was applied (checksum differs); ` +
          `restore the original file and put the change in a new migration`,
        before.modified[0],
      );
    }
    for (const name of before.unknown) log(`warning: migration ${name} is applied in the database but missing here`);

    const applied: string[] = [];
    const retry = lockRetryFromEnv(log);
    for (const m of local.filter((l) => before.pending.includes(l.name))) {
      const existing = await existingSharedTables(sql);
      if (m.name === SHARED_TABLES_MIGRATION && existing.has("idempotency_records")) {
        await adopt(sql, m, opts.adoptDir ?? DEFAULT_ADOPT_DIR, retry);
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
  const present = new Set(columns.map((r) => `${r.t}.${r.c}`));
  const tables = new Set(columns.map((r) => r.t));
  const missing = Object.entries(REQUIRED_COLUMNS).flatMap(([t, cols]) => (tables.has(t) ? cols.filter((c) => !present.has(`${t}.${c}`)).map((c) => `${t}.${c}`) : []));
  if (missing.length) {
    throw new MigrationError(
      `cannot adopt the existing tables: the console needs the column(s) ${missing.join(", ")} (see the README, "For services that write these tables"); add or rename them, then run the migration again`,
      m.name,
    );
  }
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
