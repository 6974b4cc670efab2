/**
 * Runs once in the server process before it takes requests:
 * 1. sign-in configuration — in production (DATABASE_URL set) the server refuses
 *    to start without NEXTAUTH_SECRET (≥ 32 characters) and NEXTAUTH_URL; in
 *    embedded demo mode a missing secret is read from (or created in)
 *    .data/nextauth-secret;
 * 2. the database — in embedded mode this is where PGlite is created, migrated
 *    and filled with demo data and demo users (the server process is the only
 *    one allowed to open the PGlite folder).
 */
export async function register() {
  if (process.env.NEXT_RUNTIME !== "nodejs") return;
  const { enforceAuthConfig } = await import("./lib/auth/config");
  enforceAuthConfig();

  const { db } = await import("./lib/db");
  try {
    const database = await db();
    console.log(`database: ${database.mode === "embedded" ? "embedded PGlite" : "PostgreSQL"} ready`);
  } catch (err) {
    // Keep serving: /api/health reports the failure and pages show it.
    console.error("database: not available at start:", err instanceof Error ? err.message : err);
  }
}
