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
