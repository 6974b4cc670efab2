import type { Database } from "./client";
import { isServerMode } from "./config";
import { migrate, migrationStatus } from "./migrate";

/** What opening found: `created` when this open migrated a new (empty) embedded database. */
export interface Preparation {
  created: boolean;
}

/**
 * Runs once per server process, right after the database is opened: the data layer
 * opens and migrates, nothing more. Embedded mode (the zero-configuration demo) is
 * created and migrated here; on a database server (PostgreSQL, MySQL/MariaDB) the operator
 * migrates explicitly (`npm run db:migrate`) and the server only reports what is missing.
 * Seeding (demo traffic, the default retention policy, demo users) is the server's decision,
 * made with `created` by the composition root (lib/demo/embedded.ts), not the data layer's.
 */
export async function prepareDatabase(db: Database, log: (line: string) => void = console.log): Promise<Preparation> {
  if (isServerMode(db.mode)) {
    const status = await db.withSession((s) => migrationStatus(s));
    if (status.state !== "up_to_date") {
      log(`warning: database migrations are ${status.state} (pending: ${status.pending.join(", ") || "none"}); run npm run db:migrate`);
    }
    return { created: false };
  }
  return db.withSession(async (s) => {
    const before = await migrationStatus(s);
    const result = await migrate(s, { log: (l) => log(`embedded database: ${l}`) });
    return { created: before.applied.length === 0 && result.applied.length > 0 };
  });
}
