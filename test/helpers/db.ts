import { randomBytes } from "node:crypto";
import pg from "pg";
import { openDatabase, type Database } from "@/lib/db/client";
import { migrate } from "@/lib/db/migrate";

/**
 * A throwaway, migrated database for one test file.
 * DATABASE_URL set → a fresh database on that Postgres server (dropped afterwards);
 * unset → an in-memory embedded PGlite. So `npm test` needs no service, and CI
 * runs the same tests against real Postgres too.
 */
export interface TestDatabase extends Database {
  /** Connection string of the throwaway database (Postgres mode only). */
  url?: string;
  drop(): Promise<void>;
}

export const usingPostgres = Boolean(process.env.DATABASE_URL);

export async function createEmptyTestDatabase(): Promise<TestDatabase> {
  if (!usingPostgres) {
    const db = await openDatabase({ mode: "embedded", dataDir: "memory://" });
    return { ...db, drop: () => db.close() };
  }
  const admin = new URL(process.env.DATABASE_URL!);
  const name = `ic_test_${Date.now().toString(36)}_${randomBytes(4).toString("hex")}`;
  await withAdmin(admin, (c) => c.query(`CREATE DATABASE "${name}"`));
  const url = new URL(admin);
  url.pathname = `/${name}`;
  const db = await openDatabase({ mode: "postgres", url: url.toString() }, { poolSize: 60 });
  return {
    ...db,
    url: url.toString(),
    async drop() {
      await db.close().catch(() => {});
      await withAdmin(admin, async (c) => {
        // pool.end() resolves before its sockets are gone; FORCE would then kill them mid-close.
        for (let i = 0; i < 100; i++) {
          const { rows } = await c.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`,
            [name],
          );
          if (rows[0].n === 0) break;
          await new Promise((r) => setTimeout(r, 20));
        }
        await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      });
    },
  };
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const db = await createEmptyTestDatabase();
  await db.withSession((s) => migrate(s));
  return db;
}

async function withAdmin<T>(url: URL, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}
