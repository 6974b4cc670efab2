import { createHash, randomUUID } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import type { SqlExecutor } from "./sql";

/**
 * Applies prisma/migrations/<name>/migration.sql and records them in
 * `_prisma_migrations` exactly as `prisma migrate deploy` does (same table, same
 * SHA-256 checksum of the file bytes, same advisory lock id), so Prisma's own
 * engine can take over wherever it is available. See docs/decisions/0001.
 */

/** Prisma's advisory lock key: our runner and `prisma migrate` exclude each other. */
export const PRISMA_MIGRATE_LOCK_ID = 72707369;

// Statically scoped so the bundler traces only this folder.
export const DEFAULT_MIGRATIONS_DIR = path.join(process.cwd(), "prisma", "migrations");

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
export function migrate(
  sql: SqlExecutor,
  opts: { dir?: string; log?: (line: string) => void } = {},
): Promise<MigrateResult> {
  // Advisory locks are re-entrant within a session, and embedded PGlite has a single
  // session: two runners sharing it would both "hold" the lock and interleave (the
  // second one then sees the first one's unfinished row). Queue them in-process.
  const run = (sessionQueues.get(sql) ?? Promise.resolve()).then(() => migrateLocked(sql, opts));
  sessionQueues.set(sql, run.catch(() => {}));
  return run;
}

const sessionQueues = new WeakMap<SqlExecutor, Promise<unknown>>();

async function migrateLocked(
  sql: SqlExecutor,
  opts: { dir?: string; log?: (line: string) => void },
): Promise<MigrateResult> {
  const log = opts.log ?? (() => {});
  const local = await readLocalMigrations(opts.dir);
  await sql.query(`SELECT pg_advisory_lock($1)`, [PRISMA_MIGRATE_LOCK_ID]);
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
    for (const m of local.filter((l) => before.pending.includes(l.name))) {
      const id = randomUUID();
      await sql.query(
        `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at, applied_steps_count)
         VALUES ($1, $2, $3, now(), 0)`,
        [id, m.checksum, m.name],
      );
      try {
        await sql.exec(`BEGIN;\n${m.sql}\n;COMMIT;`);
      } catch (err) {
        await sql.exec("ROLLBACK").catch(() => {});
        const message = err instanceof Error ? err.message : String(err);
        await sql.query(`UPDATE "_prisma_migrations" SET logs = $2, rolled_back_at = now() WHERE id = $1`, [id, message]);
        throw new MigrationError(`migration ${m.name} failed and was rolled back: ${message}`, m.name);
      }
      await sql.query(
        `UPDATE "_prisma_migrations" SET finished_at = now(), applied_steps_count = 1 WHERE id = $1`,
        [id],
      );
      applied.push(m.name);
      log(`applied ${m.name}`);
    }
    return { applied, status: compare(local, await appliedRows(sql)) };
  } finally {
    await sql.query(`SELECT pg_advisory_unlock($1)`, [PRISMA_MIGRATE_LOCK_ID]);
  }
}
