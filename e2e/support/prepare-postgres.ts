// Creates (or recreates) the e2e Postgres database, migrates it, fills it with demo
// traffic and creates the demo users (one per role), whose passwords it writes to
// E2E_CREDENTIALS_FILE for the tests (e2e/support/auth.ts reads it).
import pg from "pg";
import { openDatabase } from "../../lib/db/client";
import { migrate } from "../../lib/db/migrate";
import { generateDemoTraffic } from "../../lib/demo/traffic";
import { seedDemoUsers } from "../../lib/auth/demo-users";
import { credentialsFile } from "./env";

const url = new URL(process.env.DATABASE_URL!);
const name = url.pathname.slice(1);
const admin = new URL(url);
admin.pathname = "/postgres";
const client = new pg.Client({ connectionString: admin.toString() });
await client.connect();
await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
await client.query(`CREATE DATABASE "${name}"`);
await client.end();

const db = await openDatabase({ mode: "postgres", url: url.toString() });
try {
  await db.withSession((s) => migrate(s));
  await generateDemoTraffic(db, { requests: 800 });
  await seedDemoUsers(db.prisma, credentialsFile("postgres"));
} finally {
  await db.close();
}
console.log(`e2e database ${name} ready`);
