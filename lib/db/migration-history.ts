import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import type { Dialect } from "./dialect";
import type { LockRetry } from "./online-ddl";

/**
 * What both dialects' migration runners share (lib/db/migrate.ts, lib/db/migrate-mysql.ts):
 * the folders, reading them, comparing them with `_prisma_migrations`, the refusals.
 */

// Statically scoped so the bundler traces only these folders.
export const DEFAULT_MIGRATIONS_DIR = path.join(process.cwd(), "prisma", "migrations");
/** What replaces a migration when the tables it creates already exist (a service adopting the console): prisma/adopt/<name>.sql. */
export const DEFAULT_ADOPT_DIR = path.join(process.cwd(), "prisma", "adopt");
/** MySQL / MariaDB (ADR 0012): their own migrations and adoption script. */
export const MYSQL_MIGRATIONS_DIR = path.join(process.cwd(), "prisma", "mysql", "migrations");
export const MYSQL_ADOPT_DIR = path.join(process.cwd(), "prisma", "mysql", "adopt");
/** The migration that creates the services' tables (the same name in both folders). */
export const SHARED_TABLES_MIGRATION = "20261130000000_shared_tables";

/** The migrations folder of a dialect. */
export const migrationsDirFor = (dialect: Dialect) => (dialect.name === "mysql" ? MYSQL_MIGRATIONS_DIR : DEFAULT_MIGRATIONS_DIR);
export const adoptDirFor = (dialect: Dialect) => (dialect.name === "mysql" ? MYSQL_ADOPT_DIR : DEFAULT_ADOPT_DIR);

/** Bounded lock waits on the services' tables (lib/db/online-ddl.ts): MIGRATE_LOCK_TIMEOUT_MS (default 3000), MIGRATE_LOCK_RETRIES (default 20). */
export function lockRetryFromEnv(log: (line: string) => void, env: Record<string, string | undefined> = process.env): LockRetry {
  const int = (v: string | undefined, d: number) => (v !== undefined && /^\d+$/.test(v.trim()) ? Number(v) : d);
  return { lockTimeoutMs: Math.max(1, int(env.MIGRATE_LOCK_TIMEOUT_MS, 3000)), retries: int(env.MIGRATE_LOCK_RETRIES, 20), log };
}

/** The columns the console cannot read a table without; adopting a table that lacks one is refused. */
export const REQUIRED_COLUMNS: Record<string, readonly string[]> = {
  idempotency_records: ["id", "scope", "operation", "idempotency_key", "payload_hash", "status", "expires_at"],
  idempotency_events: ["id", "scope", "operation", "idempotency_key", "kind"],
  reconciliation_items: ["id", "record_id", "provider"],
  outbox_messages: ["id", "topic", "payload"],
};

/** The refusal when adopted tables lack required columns ("table.column" each), or null. */
export function missingColumnsError(present: ReadonlySet<string>, tables: ReadonlySet<string>, migration: string): MigrationError | null {
  const missing = Object.entries(REQUIRED_COLUMNS).flatMap(([t, cols]) =>
    tables.has(t) ? cols.filter((c) => !present.has(`${t}.${c}`)).map((c) => `${t}.${c}`) : [],
  );
  if (!missing.length) return null;
  return new MigrationError(
    `cannot adopt the existing tables: the console needs the column(s) ${missing.join(", ")} (see the README, "For services that write these tables"); add or rename them, then run the migration again`,
    migration,
  );
}

export interface LocalMigration {
  name: string;
  checksum: string;
  sql: string;
}

export interface AppliedRow {
  id: string;
  migration_name: string;
  checksum: string;
  finished_at: Date | null;
  rolled_back_at: Date | null;
  logs: string | null;
}

export class MigrationError extends Error {
  constructor(
    message: string,
    readonly migration?: string,
  ) {
    super(message);
    this.name = "MigrationError";
  }
}

export async function readLocalMigrations(dir = DEFAULT_MIGRATIONS_DIR): Promise<LocalMigration[]> {
  const entries = await readdir(/*turbopackIgnore: true*/ dir, { withFileTypes: true });
  const names = entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
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
  /** Started but never finished nor rolled back (a crashed run outside a transaction; on MySQL any failed migration). */
  failed: string[];
  /** Recorded in the database but absent here (the database is newer than this code). */
  unknown: string[];
}

export interface MigrateResult {
  applied: string[];
  status: MigrationStatus;
}

export function compare(local: LocalMigration[], rows: AppliedRow[]): MigrationStatus {
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

/**
 * Why migrating must not go on (a failed or an edited migration), or null. `rolledBack` is the
 * dialect's statement that marks a failed migration rolled back, for the message.
 */
export function refusal(before: MigrationStatus, rows: AppliedRow[], rolledBack: (name: string) => string): MigrationError | null {
  if (before.failed.length) {
    const name = before.failed[0];
    const logs = rows.find((r) => r.migration_name === name && r.finished_at === null && r.rolled_back_at === null)?.logs?.trim();
    const why = logs ? ` (it failed: ${/Database error:\n([^\n]*)/.exec(logs)?.[1] ?? logs.split("\n")[0]})` : "";
    return new MigrationError(
      `migration ${name} started but never finished${why}; inspect the database, then mark it rolled back ` +
        `(${rolledBack(name)}) or resolve it with prisma migrate resolve`,
      name,
    );
  }
  if (before.modified.length) {
    return new MigrationError(
      `migration ${before.modified[0]} was modified after it was applied (checksum differs); ` +
        `restore the original file and put the change in a new migration`,
      before.modified[0],
    );
  }
  return null;
}
