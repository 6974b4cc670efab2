import path from "node:path";

/** The e2e servers: the embedded one (PGlite in its process) and one per database server. */
export type E2eMode = "embedded" | "postgres" | "mysql";
export type E2eServerMode = Exclude<E2eMode, "embedded">;

const isMysqlUrl = (url: string) => /^(mysql|mariadb):\/\//.test(url);

/**
 * The database a server project uses: a database named ic_e2e_<suffix> on the server of
 * DATABASE_URL (postgres; a mysql:// DATABASE_URL counts for mysql instead) or E2E_MYSQL_URL
 * (mysql, MySQL or MariaDB). Without that URL the project is skipped.
 */
export function e2eDatabaseUrl(mode: E2eServerMode): string | undefined {
  const database = process.env.DATABASE_URL?.trim() || "";
  const mysqlDatabase = isMysqlUrl(database) ? database : "";
  const base = mode === "mysql" ? process.env.E2E_MYSQL_URL?.trim() || mysqlDatabase : mysqlDatabase ? "" : database;
  if (!base) return undefined;
  const url = new URL(base);
  url.pathname = `/ic_e2e_${process.env.E2E_DB_SUFFIX || "smoke"}`;
  return url.toString();
}

/**
 * Where each e2e server's demo users' passwords are written: the embedded server
 * writes it on first start (DEMO_CREDENTIALS_FILE), the server ones in
 * prepare-database.ts. Outside test-results/e2e, which Playwright empties.
 */
export function credentialsFile(mode: E2eMode): string {
  return path.resolve(import.meta.dirname, "..", "..", "test-results", `e2e-credentials-${mode}.json`);
}

const REDIS_DATABASE: Record<E2eMode, number> = { embedded: 12, postgres: 13, mysql: 14 };

/**
 * The Redis database each e2e server reads as its key store "default" (REDIS_URL):
 * E2E_REDIS_URL's server, database 12 (embedded), 13 (postgres) or 14 (mysql).
 * e2e/redis.spec.ts writes its keys there and flushes only that database.
 */
export function e2eRedisUrl(mode: E2eMode): string {
  const url = new URL(process.env.E2E_REDIS_URL || "redis://127.0.0.1:6379");
  url.pathname = `/${REDIS_DATABASE[mode]}`;
  return url.toString();
}

/** The local OpenID provider the e2e servers sign in with (playwright.config.ts starts it on E2E_PORT_BASE + 2). */
export function oidcIssuer(): string {
  return `http://127.0.0.1:${Number(process.env.E2E_PORT_BASE || 3100) + 2}`;
}
