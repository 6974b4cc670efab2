import { generateDemoTraffic } from "../demo/traffic";
import type { Database } from "./client";
import { migrate, migrationStatus } from "./migrate";

/**
 * Runs once per server process, right after the database is opened.
 * Embedded mode is the zero-configuration demo: create, migrate, and fill a new
 * database with demo traffic and one demo user per role (passwords in
 * DEMO_CREDENTIALS_FILE, default .data/demo-credentials.json). On Postgres the operator migrates explicitly
 * (`npm run db:migrate`); the server only reports what is missing.
 */
export async function prepareDatabase(db: Database, log: (line: string) => void = console.log): Promise<void> {
  if (db.mode === "postgres") {
    const status = await db.withSession((s) => migrationStatus(s));
    if (status.state !== "up_to_date") {
      log(`warning: database migrations are ${status.state} (pending: ${status.pending.join(", ") || "none"}); run npm run db:migrate`);
    }
    return;
  }
  const { fresh, result } = await db.withSession(async (s) => {
    const before = await migrationStatus(s);
    return { fresh: before.applied.length === 0, result: await migrate(s, { log: (l) => log(`embedded database: ${l}`) }) };
  });
  if (fresh && result.applied.length > 0) {
    log("embedded database: new — generating demo traffic for the last 30 days…");
    const summary = await generateDemoTraffic(db);
    log(
      `embedded database: demo traffic ready — ${summary.recordsCreated} records, ${summary.requests} requests, ` +
        `${summary.scenarios.pending} pending, ${summary.scenarios.stuckProcessing} stuck, ` +
        `${summary.scenarios.doubleSubmitPairs} planted double charges (${summary.elapsedMs} ms)`,
    );
    // A default retention policy, so the demo's retention screen has something to purge.
    const { DEMO_DEFAULT_POLICY, seedDefaultPolicy } = await import("../retention/policies");
    if (await seedDefaultPolicy(db.prisma)) {
      log(`embedded database: default retention policy — records ${DEMO_DEFAULT_POLICY.keepRecordsDays} days after expiry, events ${DEMO_DEFAULT_POLICY.keepEventsDays} days`);
    }
  }
  // Imported here: lib/auth/users imports the API layer, which imports lib/db.
  const { demoCredentialsPath, seedDemoUsers } = await import("../auth/demo-users");
  const file = demoCredentialsPath();
  const seeded = await seedDemoUsers(db.prisma, file);
  if (seeded) log(`embedded database: ${seeded.length} demo users created; their passwords are in ${file}`);
}
