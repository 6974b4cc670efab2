import path from "node:path";

/** postgres: a PostgreSQL server; mysql: a MySQL or MariaDB server (ADR 0012); embedded: PGlite in this process. */
export type DatabaseMode = "postgres" | "mysql" | "embedded";

export interface DatabaseConfig {
  mode: DatabaseMode;
  /** Connection string (modes "postgres" and "mysql"). */
  url?: string;
  /**
   * A streaming replica of that server for the read side (DATABASE_READ_URL; ADR 0013), the same
   * kind of server as `url`. Unset: the read side reads the primary.
   */
  readUrl?: string;
  /** PGlite data directory (mode "embedded"); "memory://" keeps it in memory. */
  dataDir?: string;
}

/** A database server other processes can reach (PostgreSQL or MySQL), as opposed to the embedded one. */
export const isServerMode = (mode: DatabaseMode | "unknown"): boolean => mode === "postgres" || mode === "mysql";

const serverModeOf = (url: string): "postgres" | "mysql" | null =>
  /^postgres(ql)?:\/\//.test(url) ? "postgres" : /^(mysql|mariadb):\/\//.test(url) ? "mysql" : null;

/**
 * DATABASE_URL set → that server: postgres:// or postgresql:// (PostgreSQL), mysql:// or
 * mariadb:// (MySQL/MariaDB); unset → embedded PGlite in PGLITE_DIR (.data/pglite).
 * DATABASE_READ_URL → a streaming replica of that server for the read side (ADR 0013).
 */
export function databaseConfigFromEnv(env: NodeJS.ProcessEnv = process.env): DatabaseConfig {
  const url = env.DATABASE_URL?.trim();
  const readUrl = env.DATABASE_READ_URL?.trim() || undefined;
  if (url) {
    const mode = serverModeOf(url);
    if (!mode) throw new Error("DATABASE_URL must be a postgres://, postgresql://, mysql:// or mariadb:// connection string");
    if (readUrl && serverModeOf(readUrl) !== mode) {
      throw new Error(
        `DATABASE_READ_URL must be a replica of the DATABASE_URL server: a ${mode === "postgres" ? "postgres://" : "mysql:// or mariadb://"} connection string`,
      );
    }
    return readUrl ? { mode, url, readUrl } : { mode, url };
  }
  if (readUrl) throw new Error("DATABASE_READ_URL names a replica of the DATABASE_URL server: set DATABASE_URL too (the embedded database has no replica)");
  return { mode: "embedded", dataDir: env.PGLITE_DIR?.trim() || path.resolve(".data/pglite") };
}

/** The connection string with any password hidden, for logs and /api/health. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return "(unparseable DATABASE_URL)";
  }
}
