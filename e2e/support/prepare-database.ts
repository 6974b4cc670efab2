// Creates (or recreates) an e2e server's database — PostgreSQL or MySQL/MariaDB, whichever
// DATABASE_URL names — migrates it with `npm run db:migrate` (as an operator does), fills it with
// demo traffic and creates the demo users (one per role), whose passwords it writes to the
// mode's credentials file for the tests (e2e/support/auth.ts reads it).
import { execFileSync } from "node:child_process";
import * as mariadb from "mariadb";
import pg from "pg";
import { seedDemoUsers } from "../../lib/auth/demo-users";
import { openDatabase } from "../../lib/db/client";
import { databaseConfigFromEnv } from "../../lib/db/config";
import { generateDemoTraffic } from "../../lib/demo/traffic";
import { credentialsFile } from "./env";

const config = databaseConfigFromEnv();
if (config.mode === "embedded") throw new Error("prepare-database.ts needs DATABASE_URL (the embedded server prepares its own database)");
const mode = config.mode;
const url = new URL(config.url!);
const name = decodeURIComponent(url.pathname.slice(1));
if (!/^ic_e2e_\w+$/.test(name)) throw new Error(`refusing to recreate ${name}: the e2e databases are named ic_e2e_*`);

/** Drops the database if it is left from an earlier run and creates it empty, on its server's admin connection. */
async function recreate(): Promise<void> {
  if (mode === "postgres") {
    const admin = new URL(url);
    admin.pathname = "/postgres";
    const client = new pg.Client({ connectionString: admin.toString() });
    await client.connect();
    try {
      await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await client.query(`CREATE DATABASE "${name}"`);
    } finally {
      await client.end();
    }
    return;
  }
  const conn = await mariadb.createConnection({
    host: url.hostname,
    port: url.port ? Number(url.port) : 3306,
    user: decodeURIComponent(url.username) || undefined,
    password: url.password ? decodeURIComponent(url.password) : undefined,
  });
  try {
    await conn.query(`DROP DATABASE IF EXISTS \`${name}\``);
    // The character set and collation the README asks of the services' database (ADR 0012).
    await conn.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
  } finally {
    await conn.end();
  }
}

await recreate();
execFileSync("npm", ["run", "--silent", "db:migrate"], { stdio: "inherit", env: process.env });
const db = await openDatabase(config);
try {
  await generateDemoTraffic(db, { requests: 800, insightCases: true });
  await seedDemoUsers(db.prisma, credentialsFile(mode));
} finally {
  await db.close();
}
console.log(`e2e database ${name} (${mode}) ready`);
