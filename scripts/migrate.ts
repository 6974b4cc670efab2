/**
 * npm run db:migrate            apply pending migrations to the database in env
 * npm run db:migrate -- --status print what is applied/pending; exit 0 only if up to date
 *
 * DATABASE_URL postgres:// → that PostgreSQL (prisma/migrations); mysql:// or mariadb:// → that
 * MySQL/MariaDB (prisma/mysql/migrations, ADR 0012); unset → embedded PGlite in PGLITE_DIR (.data/pglite).
 */
import { openDatabase } from "../lib/db/client";
import { databaseConfigFromEnv, redactUrl } from "../lib/db/config";
import { migrate, migrationStatus, type MigrationStatus } from "../lib/db/migrate";

function describe(s: MigrationStatus): string {
  const list = (label: string, names: string[]) => (names.length ? `\n  ${label}: ${names.join(", ")}` : "");
  return (
    `${s.state}: ${s.applied.length} applied, ${s.pending.length} pending (of ${s.local} local)` +
    list("pending", s.pending) +
    list("modified after applying", s.modified) +
    list("started but never finished", s.failed) +
    list("applied but missing here", s.unknown)
  );
}

async function main(): Promise<number> {
  const statusOnly = process.argv.includes("--status");
  const config = databaseConfigFromEnv();
  if (config.mode !== "embedded") {
    console.log(`database: ${config.mode} ${redactUrl(config.url!)}`);
  } else {
    console.log(`database: embedded PGlite in ${config.dataDir}`);
    if (!statusOnly) {
      console.warn("warning: stop the console server first — PGlite does not lock its folder, two processes on it corrupt it");
    }
  }
  const db = await openDatabase(config, { poolSize: 1 });
  try {
    return await db.withSession(async (session) => {
      if (statusOnly) {
        const status = await migrationStatus(session);
        console.log(describe(status));
        return status.state === "up_to_date" ? 0 : 1;
      }
      const { applied, status } = await migrate(session, { log: (line) => console.log(line) });
      if (applied.length === 0) console.log("no pending migrations");
      console.log(status.state === "up_to_date" ? `${status.applied.length} applied, database up to date` : describe(status));
      return 0;
    });
  } catch (err) {
    console.error(err instanceof Error ? `${err.name}: ${err.message}` : String(err));
    return 1;
  } finally {
    await db.close(); // PGlite would otherwise keep the process alive
  }
}

main().then(
  (code) => (process.exitCode = code),
  (err) => {
    console.error(err);
    process.exitCode = 1;
  },
);
