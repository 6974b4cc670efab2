import { demoCredentialsPath, seedDemoUsers } from "../auth/demo-users";
import { prepareDatabase } from "../db/bootstrap";
import { getDatabase, type Database } from "../db/client";
import { DEMO_DEFAULT_POLICY, seedDefaultPolicy } from "../retention/policies";
import { generateDemoTraffic } from "./traffic";

/**
 * The server's composition root for its database (instrumentation.ts, the process
 * `npm start` runs): open and migrate it (lib/db), then — embedded mode only, the
 * zero-configuration demo — seed it. The data layer never seeds; this is where the
 * server decides to.
 *
 * Must be the process's first opening of the database: a later call returns the
 * database already open (lib/db getDatabase) without seeding it.
 */
export function openServerDatabase(log: (line: string) => void = console.log): Promise<Database> {
  return getDatabase(async (database) => {
    const { created } = await prepareDatabase(database, log);
    if (database.mode === "embedded") await seedEmbeddedDemo(database, { created, log });
  });
}

/**
 * The embedded demo's data: a new database gets a month of demo traffic and a default
 * retention policy; every start makes sure there is one demo user per role (passwords
 * in DEMO_CREDENTIALS_FILE, default .data/demo-credentials.json).
 */
export async function seedEmbeddedDemo(db: Database, { created, log }: { created: boolean; log: (line: string) => void }): Promise<void> {
  if (created) {
    log("embedded database: new — generating demo traffic for the last 30 days…");
    const summary = await generateDemoTraffic(db, { insightCases: true });
    log(
      `embedded database: demo traffic ready — ${summary.recordsCreated} records, ${summary.requests} requests, ` +
        `${summary.scenarios.pending} pending, ${summary.scenarios.stuckProcessing} stuck, ` +
        `${summary.scenarios.doubleSubmitPairs} planted double charges (${summary.elapsedMs} ms)`,
    );
    // A default retention policy, so the demo's retention screen has something to purge.
    if (await seedDefaultPolicy(db.prisma)) {
      log(
        `embedded database: default retention policy — records ${DEMO_DEFAULT_POLICY.keepRecordsDays} days after expiry, events ${DEMO_DEFAULT_POLICY.keepEventsDays} days`,
      );
    }
  }
  const file = demoCredentialsPath();
  const seeded = await seedDemoUsers(db.prisma, file);
  if (seeded) log(`embedded database: ${seeded.length} demo users created; their passwords are in ${file}`);
}
