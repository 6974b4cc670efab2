/**
 * Runs once in the server process before it takes requests:
 * 1. sign-in configuration — in production (DATABASE_URL set) the server refuses
 *    to start without NEXTAUTH_SECRET (≥ 32 characters) and NEXTAUTH_URL; in
 *    embedded demo mode a missing secret is read from (or created in)
 *    .data/nextauth-secret; likewise the audit chain's HMAC key (AUDIT_HMAC_KEY,
 *    .data/audit-hmac-key for the demo) and the trusted-proxy settings;
 * 2. the database — opened here first, through the composition root
 *    (lib/demo/embedded.ts): in embedded mode this is where PGlite is created,
 *    migrated (lib/db) and filled with demo data and demo users (lib/demo) — the
 *    server process is the only one allowed to open the PGlite folder;
 * 3. the background rollup refresher (lib/stats/refresher.ts; ROLLUP_REFRESH_SECONDS);
 * 4. the demo provider's ledger (only when `npm start` runs the local provider service;
 *    in the embedded demo also its live traffic, lib/demo/live.ts),
 *    the background reconciler, the purge worker (resumes a run a crash left behind)
 *    the audit anchor publisher (the chain's head in the log every AUDIT_ANCHOR_MINUTES)
 *    and the insight alert evaluator (lib/insights/worker.ts; INSIGHTS_ALERTS_SECONDS);
 * 5. the Redis key stores' background census (lib/redis/census.ts; REDIS_CENSUS_SECONDS).
 *    In embedded mode the first refresh runs before requests are served (the demo
 *    data is rolled up while PGlite's one connection is not shared yet); on a database
 *    server it runs in the background (the first one may have millions of events to do).
 */
export async function register() {
  if (process.env.NEXT_RUNTIME !== "nodejs") return;
  const { enforceAuthConfig } = await import("./lib/auth/config");
  enforceAuthConfig();
  // Not while building: the key may be a runtime secret the build never sees.
  if (process.env.NEXT_PHASE !== "phase-production-build") {
    const { enforceAuditKey } = await import("./lib/audit/keys");
    enforceAuditKey();
  }

  const { db } = await import("./lib/db");
  let embedded = false;
  try {
    const { openServerDatabase } = await import("./lib/demo/embedded");
    const database = await openServerDatabase();
    embedded = database.mode === "embedded";
    const { serverIdentity } = await import("./lib/db/health");
    const server = embedded ? null : await serverIdentity(database.mode, database.sql).catch(() => null);
    console.log(`database: ${embedded ? "embedded PGlite" : server ? `${server.engine} ${server.version}` : database.mode} ready`);
  } catch (err) {
    // Keep serving: /api/health reports the failure and pages show it.
    console.error("database: not available at start:", err instanceof Error ? err.message : err);
  }

  // Never fails: the refresher catches and logs its own errors. (Not while building.)
  if (process.env.NEXT_PHASE === "phase-production-build") return;
  const { startRollupRefresher } = await import("./lib/stats/refresher");
  const refresher = startRollupRefresher(db);
  if (refresher && embedded) await refresher.runOnce();

  if (process.env.DEMO_PROVIDER === "1") {
    const { seedDemoProvider } = await import("./lib/providers/demo-seed");
    // The embedded demo's provider answers pending checks later (spread over hours), so the queue does not drain at once.
    await db()
      .then((database) => seedDemoProvider(database, embedded ? { answersFrom: new Date() } : {}))
      .catch((err) => console.error("demo provider: not seeded:", err instanceof Error ? err.message : err));
    if (embedded) {
      const { startDemoLiveTraffic } = await import("./lib/demo/live");
      startDemoLiveTraffic(db, { providerUrl: process.env.PROVIDER_URL });
    }
  }
  const { startReconciler } = await import("./lib/reconcile/worker");
  startReconciler(db);
  const { startPurgeWorker } = await import("./lib/retention/worker");
  startPurgeWorker(db);
  const { startAnchorPublisher } = await import("./lib/audit/anchor");
  startAnchorPublisher(db);
  const { startInsightAlerts } = await import("./lib/insights/worker");
  startInsightAlerts(db);
  try {
    const { startRedisCensus } = await import("./lib/redis/census");
    startRedisCensus();
  } catch (err) {
    // A malformed REDIS_* setting: the rest of the console keeps serving; the Redis screens say why.
    console.error("redis: not started:", err instanceof Error ? err.message : err);
  }
}
