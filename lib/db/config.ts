import path from "node:path";

export type DatabaseMode = "postgres" | "embedded";

export interface DatabaseConfig {
  mode: DatabaseMode;
  /** Postgres connection string (mode "postgres"). */
  url?: string;
  /** PGlite data directory (mode "embedded"); "memory://" keeps it in memory. */
  dataDir?: string;
}

/** DATABASE_URL set → real Postgres; unset → embedded PGlite in PGLITE_DIR (.data/pglite). */
export function databaseConfigFromEnv(env: NodeJS.ProcessEnv = process.env): DatabaseConfig {
  const url = env.DATABASE_URL?.trim();
  if (url) {
    if (!/^postgres(ql)?:\/\//.test(url)) {
      throw new Error("DATABASE_URL must be a postgres:// or postgresql:// connection string");
    }
    return { mode: "postgres", url };
  }
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
