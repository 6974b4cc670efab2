import * as mariadb from "mariadb";
import { fairPool } from "./fair-pool";

/**
 * MySQL / MariaDB connections (ADR 0012): one `mariadb` pool shared by Prisma's adapter and
 * the raw executor, every connection with the same session settings whatever the server's
 * defaults — UTC, a fixed sql_mode with ANSI_QUOTES, READ COMMITTED.
 */

/** The server's defaults vary (MariaDB adds NO_AUTO_CREATE_USER, MySQL 8 refuses it): ours is fixed. */
export const MYSQL_SQL_MODE =
  "STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION,ONLY_FULL_GROUP_BY,ANSI_QUOTES";

/** Run on every new connection, before any statement (the pool keeps sessions as they are: no reset after use). */
export const MYSQL_SESSION_SQL = [
  // DATETIME columns hold UTC: NOW() and CURRENT_TIMESTAMP must be UTC too.
  "SET time_zone = '+00:00'",
  `SET SESSION sql_mode = '${MYSQL_SQL_MODE}'`,
  // PostgreSQL's default, and no gap locks on the services' tables; snapshots ask for REPEATABLE READ.
  "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
];

/** Oldest servers the console runs on: CHECK enforcement (MySQL 8.0.16), SKIP LOCKED and atomic DDL (MariaDB 10.6). */
export const MYSQL_MINIMUM = { MySQL: [8, 0, 16], MariaDB: [10, 6, 0] } as const;

export interface MysqlServer {
  engine: "MySQL" | "MariaDB";
  /** e.g. "10.11.19", "8.0.36" */
  version: string;
}

/** Reads VERSION() ("10.11.19-MariaDB-0+deb12u1", "8.0.36", "8.4.2-log"). */
export function parseMysqlVersion(text: string): MysqlServer {
  const version = /^\d+\.\d+\.\d+/.exec(text)?.[0] ?? text;
  return { engine: /mariadb/i.test(text) ? "MariaDB" : "MySQL", version };
}

/** Why this server is too old for the console, or null. */
export function unsupportedMysql(server: MysqlServer): string | null {
  const want = MYSQL_MINIMUM[server.engine];
  const have = server.version.split(".").map(Number);
  for (let i = 0; i < 3; i++) {
    if ((have[i] ?? 0) > want[i]) return null;
    if ((have[i] ?? 0) < want[i]) {
      return `${server.engine} ${server.version} is too old: the console needs ${server.engine} ${want.join(".")} or newer (ADR 0012: CHECK constraints, SKIP LOCKED, atomic DDL)`;
    }
  }
  return null;
}

/**
 * How the console's own statements read values (pool options; Prisma's adapter passes its own with
 * each statement): DATETIME/TIMESTAMP as UTC whatever the process's TZ (the driver would read
 * local time); BIGINT stays bigint, DECIMAL a string, JSON columns parsed (the driver's defaults).
 */
const readUtcTimes: mariadb.TypeCastFunction = (field, next) => {
  if (field.type === "DATETIME" || field.type === "TIMESTAMP" || field.type === "DATE") {
    const text = field.string();
    if (text === null || text.startsWith("0000-00-00")) return null;
    return new Date(field.type === "DATE" ? `${text}T00:00:00Z` : `${text.replace(" ", "T")}Z`);
  }
  return next();
};
const READ_OPTIONS = { typeCast: readUtcTimes, bigIntAsNumber: false, decimalAsNumber: false, insertIdAsNumber: false } as const;

/** How long a caller waits for a connection before failing, by default (the driver's). */
const ACQUIRE_TIMEOUT_MS = 10_000;

/**
 * A pool for a mysql:// or mariadb:// URL (user, password, host, port, database; ?ssl=true, ?socketPath=…).
 * `readOnly`: every session's transactions are read-only (the read side, ADR 0013). Callers
 * get connections in the order they asked (fair-pool.ts).
 */
export function createMysqlPool(url: string, connectionLimit: number, opts: { readOnly?: boolean; acquireTimeoutMs?: number } = {}): mariadb.Pool {
  const acquireTimeout = opts.acquireTimeoutMs ?? ACQUIRE_TIMEOUT_MS;
  const u = new URL(url);
  const database = decodeURIComponent(u.pathname.replace(/^\//, ""));
  if (!database) throw new Error("DATABASE_URL for MySQL must name a database (mysql://user@host:3306/payments)");
  const ssl = u.searchParams.get("ssl");
  const pool = mariadb.createPool({
    host: u.hostname.replace(/^\[|\]$/g, "") || "localhost",
    port: u.port ? Number(u.port) : 3306,
    user: decodeURIComponent(u.username) || undefined,
    password: u.password ? decodeURIComponent(u.password) : undefined,
    database,
    socketPath: u.searchParams.get("socketPath") ?? undefined,
    ssl: ssl === "true" ? {} : undefined,
    connectionLimit,
    acquireTimeout,
    initSql: opts.readOnly ? [...MYSQL_SESSION_SQL, "SET SESSION TRANSACTION READ ONLY"] : MYSQL_SESSION_SQL,
    // Migrations and scripts (exec) are multi-statement; parameters are always bound, never spliced in.
    multipleStatements: true,
    // As @prisma/adapter-mariadb does for its own pools: no server-side statement cache per connection.
    prepareCacheLength: 0,
    ...READ_OPTIONS,
  });
  // A failure to open a connection is also emitted as 'error' on the pool (missing from its
  // types); unhandled, it would crash the process. The caller's query fails with it anyway.
  (pool as unknown as NodeJS.EventEmitter).on("error", (err: Error & { code?: string }) =>
    console.warn(`database: cannot open a connection (${err.code ?? err.message})`),
  );
  return fairPool(pool, connectionLimit, acquireTimeout);
}
