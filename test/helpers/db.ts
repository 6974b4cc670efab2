import { randomBytes } from "node:crypto";
import * as mariadb from "mariadb";
import pg from "pg";
import { openDatabase, type Database } from "@/lib/db/client";
import { databaseConfigFromEnv } from "@/lib/db/config";
import { migrate } from "@/lib/db/migrate";

/**
 * A throwaway, migrated database for one test file.
 * DATABASE_URL postgres:// → a fresh database on that PostgreSQL server; mysql:// or mariadb://
 * → a fresh database on that MySQL/MariaDB server (ADR 0012); each dropped afterwards; unset →
 * an in-memory embedded PGlite. So `npm test` needs no service, and CI runs the same tests
 * against real servers too.
 */
export interface TestDatabase extends Database {
  /** Connection string of the throwaway database (server modes only). */
  url?: string;
  drop(): Promise<void>;
}

const mode = databaseConfigFromEnv().mode;
/** The tests run against a PostgreSQL server. */
export const usingPostgres = mode === "postgres";
/** The tests run against a MySQL or MariaDB server. */
export const usingMysql = mode === "mysql";
/** The tests run against a database server other processes and connections share (PostgreSQL or MySQL): races, crashes, concurrency. */
export const usingDatabaseServer = usingPostgres || usingMysql;

const throwawayName = () => `ic_test_${Date.now().toString(36)}_${randomBytes(4).toString("hex")}`;

export async function createEmptyTestDatabase(): Promise<TestDatabase> {
  if (usingMysql) return createEmptyMysqlDatabase();
  if (!usingPostgres) {
    const db = await openDatabase({ mode: "embedded", dataDir: "memory://" });
    return { ...db, drop: () => db.close() };
  }
  const admin = new URL(process.env.DATABASE_URL!);
  const name = throwawayName();
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
          const { rows } = await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, [
            name,
          ]);
          if (rows[0].n === 0) break;
          await new Promise((r) => setTimeout(r, 20));
        }
        await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      });
    },
  };
}

/** MySQL/MariaDB: a database in the console's character set; its pool is smaller (max_connections is 151 by default). */
async function createEmptyMysqlDatabase(): Promise<TestDatabase> {
  const admin = new URL(process.env.DATABASE_URL!);
  const name = throwawayName();
  await withMysqlAdmin(admin, (c) => c.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`));
  const url = new URL(admin);
  url.pathname = `/${name}`;
  const db = await openDatabase({ mode: "mysql", url: url.toString() }, { poolSize: 20 });
  return {
    ...db,
    url: url.toString(),
    async drop() {
      await db.close().catch(() => {});
      await withMysqlAdmin(admin, (c) => c.query(`DROP DATABASE IF EXISTS \`${name}\``));
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

async function withMysqlAdmin<T>(url: URL, fn: (c: mariadb.Connection) => Promise<T>): Promise<T> {
  const c = await mariadb.createConnection({
    host: url.hostname,
    port: url.port ? Number(url.port) : 3306,
    user: decodeURIComponent(url.username) || undefined,
    password: url.password ? decodeURIComponent(url.password) : undefined,
  });
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}
