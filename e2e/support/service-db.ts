import type { TestInfo } from "@playwright/test";
import * as mariadb from "mariadb";
import pg from "pg";
import { e2eDatabaseUrl, type E2eServerMode } from "./env";

/** A statement as each database spells it (PostgreSQL's $1…, MySQL's ? bound in order), or one text both run. */
export type Statement = string | Record<E2eServerMode, string>;

/**
 * A connection to a server project's database, as a payment service has one: it writes the
 * services' tables directly, never through the console. The embedded server has none (its
 * PGlite lives inside the console's process).
 */
export interface ServiceDatabase {
  query<T>(statement: Statement, params?: unknown[]): Promise<T[]>;
  /** Runs an INSERT and returns the id it took: PostgreSQL's statement ends in `RETURNING id::text`; MySQL's AUTO_INCREMENT id. */
  insert(statement: Statement, params?: unknown[]): Promise<string>;
  close(): Promise<void>;
}

/** A plain connection, without the console's session settings: a writer's default session. */
export async function serviceDatabase(testInfo: TestInfo): Promise<ServiceDatabase> {
  const mode = testInfo.project.metadata.mode as E2eServerMode;
  const url = e2eDatabaseUrl(mode);
  if (!url) throw new Error(`no database URL for the ${mode} project`);
  const text = (s: Statement) => (typeof s === "string" ? s : s[mode]);
  if (mode === "postgres") {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    return {
      query: async <T>(s: Statement, params: unknown[] = []) => (await client.query(text(s), params)).rows as T[],
      insert: async (s, params = []) => String((await client.query<{ id: string }>(text(s), params)).rows[0].id),
      close: () => client.end(),
    };
  }
  const u = new URL(url);
  const conn = await mariadb.createConnection({
    host: u.hostname,
    port: u.port ? Number(u.port) : 3306,
    user: decodeURIComponent(u.username) || undefined,
    password: u.password ? decodeURIComponent(u.password) : undefined,
    database: decodeURIComponent(u.pathname.slice(1)),
  });
  return {
    query: async <T>(s: Statement, params: unknown[] = []) => (await conn.query(text(s), params)) as T[],
    insert: async (s, params = []) => String(((await conn.query(text(s), params)) as mariadb.UpsertResult).insertId),
    close: () => conn.end(),
  };
}
