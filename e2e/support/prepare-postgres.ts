// Creates (or recreates) the e2e Postgres database, migrates it and fills it with demo traffic.
import pg from "pg";
import { openDatabase } from "../../lib/db/client";
import { migrate } from "../../lib/db/migrate";
import { generateDemoTraffic } from "../../lib/demo/traffic";

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
} finally {
  await db.close();
}
console.log(`e2e database ${name} ready`);
