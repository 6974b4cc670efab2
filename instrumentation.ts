/**
 * Opens and prepares the database before the server takes requests: in embedded
 * mode this is where PGlite is created, migrated and filled with demo data — in
 * the server process, the only one allowed to open the PGlite folder.
 */
export async function register() {
  if (process.env.NEXT_RUNTIME !== "nodejs") return;
  const { db } = await import("./lib/db");
  try {
    const database = await db();
    console.log(`database: ${database.mode === "embedded" ? "embedded PGlite" : "PostgreSQL"} ready`);
  } catch (err) {
    // Keep serving: /api/health reports the failure and pages show it.
    console.error("database: not available at start:", err instanceof Error ? err.message : err);
  }
}
