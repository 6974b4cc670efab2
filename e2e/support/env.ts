import path from "node:path";

/**
 * The Postgres database the e2e "postgres" project uses: a database named
 * ic_e2e_<suffix> on the server of DATABASE_URL. Without DATABASE_URL that
 * project is skipped and only the embedded one runs.
 */
export function e2eDatabaseUrl(): string | undefined {
  const base = process.env.DATABASE_URL;
  if (!base) return undefined;
  const url = new URL(base);
  url.pathname = `/ic_e2e_${process.env.E2E_DB_SUFFIX || "smoke"}`;
  return url.toString();
}

/**
 * Where each e2e server's demo users' passwords are written: the embedded server
 * writes it on first start (DEMO_CREDENTIALS_FILE), the Postgres one in
 * prepare-postgres.ts. Outside test-results/e2e, which Playwright empties.
 */
export function credentialsFile(mode: "embedded" | "postgres"): string {
  return path.resolve(import.meta.dirname, "..", "..", "test-results", `e2e-credentials-${mode}.json`);
}

/**
 * The Redis database each e2e server reads as its key store "default" (REDIS_URL):
 * E2E_REDIS_URL's server, database 12 (embedded) or 13 (postgres). e2e/redis.spec.ts
 * writes its keys there and flushes only that database.
 */
export function e2eRedisUrl(mode: "embedded" | "postgres"): string {
  const url = new URL(process.env.E2E_REDIS_URL || "redis://127.0.0.1:6379");
  url.pathname = `/${mode === "embedded" ? 12 : 13}`;
  return url.toString();
}

/** The local OpenID provider the e2e servers sign in with (playwright.config.ts starts it on E2E_PORT_BASE + 2). */
export function oidcIssuer(): string {
  return `http://127.0.0.1:${Number(process.env.E2E_PORT_BASE || 3100) + 2}`;
}
