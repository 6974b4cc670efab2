import { mkdirSync } from "node:fs";
import { PGlite } from "@electric-sql/pglite";
import { PrismaMariaDb } from "@prisma/adapter-mariadb";
import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { PrismaPGlite } from "pglite-prisma-adapter";
import { PrismaClient } from "../generated/prisma/client";
import { PrismaClient as MysqlPrismaClient } from "../generated/prisma-mysql/client";
import { databaseConfigFromEnv, type DatabaseConfig, type DatabaseMode } from "./config";
import { MYSQL, POSTGRES, type Dialect } from "./dialect";
import { createMysqlPool } from "./mysql";
import { execute, mysqlExecutor, pgExecutor, pgliteExecutor, type SpareSession, type SqlExecutor } from "./sql";

export type Prisma = PrismaClient;

/** One server's handles: its dialect and the ways to run statements on it. */
export interface DatabaseHandle {
  mode: DatabaseMode;
  /** The SQL the database speaks (lib/db/dialect.ts). */
  dialect: Dialect;
  prisma: PrismaClient;
  /** Pooled raw SQL for set-based work. */
  sql: SqlExecutor;
  /** Runs `fn` on one dedicated session (needed for advisory locks and migrations). */
  withSession<T>(fn: (session: SqlExecutor) => Promise<T>): Promise<T>;
  /** A second session if one is free now, for reading alongside a held one in a shared snapshot (sql.ts SpareSession); PostgreSQL only. */
  withSpareSession?: SpareSession;
}

/**
 * The read side (ADR 0013): a streaming replica's handles when DATABASE_READ_URL is set, the
 * primary's own otherwise. Its sessions are read-only: a write through it fails, whatever server
 * the URL names. The route wrapper hands it to the routes that declare `reads: "replica"`.
 */
export interface ReadDatabase extends DatabaseHandle {
  /** A server of its own (DATABASE_READ_URL): its data may lag the primary's (lib/db/replica.ts). */
  replica: boolean;
}

/**
 * One handle on the database, whichever mode it runs in. Its own members are the primary's:
 * every action, audit entry, session and worker uses them; only `read` may be a replica.
 */
export interface Database extends DatabaseHandle {
  read: ReadDatabase;
  close(): Promise<void>;
}

type OpenedHandle = DatabaseHandle & { close(): Promise<void> };

/**
 * A MySQL session that notes whether any statement it sent could take a user lock (only GET_LOCK
 * takes one), so a session that took none goes back to the pool without a round trip to release
 * them (the writers' protocol runs a session per step: bench/fill.ts).
 */
function lockWatchingExecutor(ex: SqlExecutor): SqlExecutor & { mayHoldLocks(): boolean } {
  let locks = false;
  const watch = (text: string) => {
    if (/GET_LOCK/i.test(text)) locks = true;
  };
  return {
    dialect: ex.dialect,
    query: (text, params) => (watch(text), ex.query(text, params)),
    exec: (script) => (watch(script), ex.exec(script)),
    execute: (text, params) => (watch(text), execute(ex, text, params)),
    mayHoldLocks: () => locks,
  };
}

function openMysql(url: string, poolSize: number, readOnly: boolean): OpenedHandle {
  const pool = createMysqlPool(url, poolSize, { readOnly });
  // The MySQL client is generated from prisma/mysql/schema.prisma, derived from the PostgreSQL
  // schema (ADR 0012): the same models, fields and model API. The code is typed against the
  // PostgreSQL client; the one difference it can meet is that String[] fields (roles, scopes)
  // are Json on MySQL — the same arrays in and out, but the list filters (`has`) do not exist.
  const prisma = new MysqlPrismaClient({ adapter: new PrismaMariaDb(pool) }) as unknown as PrismaClient;
  return {
    mode: "mysql",
    dialect: MYSQL,
    prisma,
    sql: mysqlExecutor(pool),
    async withSession(fn) {
      const conn = await pool.getConnection();
      const session = lockWatchingExecutor(mysqlExecutor(conn));
      try {
        return await fn(session);
      } finally {
        // GET_LOCK locks belong to the connection and outlive the work: none goes back to the pool.
        if (session.mayHoldLocks()) await conn.query("DO RELEASE_ALL_LOCKS()").catch(() => {});
        await conn.release().catch(() => {});
      }
    },
    async close() {
      await prisma.$disconnect();
      await pool.end().catch(() => {});
    },
  };
}

function openPostgres(url: string, poolSize: number, readOnly: boolean): OpenedHandle {
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    // The console reads small index ranges whose row estimates often pass jit_above_cost
    // (a watermark or a clock read at run time): compiling them costs more (~50–100 ms a
    // statement) than reading them. Awaited before the connection is handed out.
    onConnect: async (client: pg.ClientBase) => {
      await client.query("SET jit = off").catch(() => {});
      // The read side's sessions write nothing, even where DATABASE_READ_URL names a writable server.
      if (readOnly) await client.query("SET default_transaction_read_only = on");
    },
  });
  // An idle connection the server drops (restart, failover, pg_terminate_backend)
  // emits 'error' on the pool; unhandled, it would crash the process.
  pool.on("error", (err) =>
    console.warn(`database${readOnly ? " (read replica)" : ""}: idle connection lost (${(err as { code?: string }).code ?? err.message})`),
  );
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
  return {
    mode: "postgres",
    dialect: POSTGRES,
    prisma,
    sql: pgExecutor(pool),
    async withSession(fn) {
      const client = await pool.connect();
      try {
        return await fn(pgExecutor(client));
      } finally {
        client.release();
      }
    },
    withSpareSession(fn) {
      // Checked and taken in the same tick: pool.connect() hands an idle client (or opens one
      // below max) to the caller at once when no one waits. Otherwise no spare, no wait.
      const free = pool.waitingCount === 0 && (pool.idleCount > 0 || pool.totalCount < poolSize);
      if (!free) return fn(null);
      return pool.connect().then(async (client) => {
        try {
          return await fn(pgExecutor(client));
        } finally {
          client.release();
        }
      });
    },
    async close() {
      await prisma.$disconnect();
      await pool.end().catch(() => {});
    },
  };
}

/** The primary's own handles as the read side (no DATABASE_READ_URL; routes that read the primary). */
export function primaryAsRead(db: DatabaseHandle): ReadDatabase {
  return {
    mode: db.mode,
    dialect: db.dialect,
    prisma: db.prisma,
    sql: db.sql,
    withSession: db.withSession,
    withSpareSession: db.withSpareSession,
    replica: false,
  };
}

/** The primary, and the read side: `config.readUrl`'s replica (its own pool, the same size) or the primary again. */
function withReadSide(primary: OpenedHandle, config: DatabaseConfig, poolSize: number): Database {
  const open = config.mode === "mysql" ? openMysql : openPostgres;
  const replica = config.readUrl ? open(config.readUrl, poolSize, true) : null;
  return {
    ...primary,
    read: replica ? { ...replica, replica: true } : primaryAsRead(primary),
    async close() {
      await Promise.all([primary.close(), replica?.close()]);
    },
  };
}

export async function openDatabase(config: DatabaseConfig, opts: { poolSize?: number } = {}): Promise<Database> {
  const poolSize = opts.poolSize ?? 10;
  if (config.mode === "mysql" || config.mode === "postgres") {
    if (!config.url) throw new Error(`${config.mode} mode needs a connection string`);
    return withReadSide((config.mode === "mysql" ? openMysql : openPostgres)(config.url, poolSize, false), config, poolSize);
  }
  if (config.readUrl) throw new Error("the embedded database has no replica: DATABASE_READ_URL needs DATABASE_URL");
  const dataDir = config.dataDir ?? "memory://";
  if (!dataDir.startsWith("memory://")) mkdirSync(dataDir, { recursive: true });
  // PGlite is one connection in this process. A "session" takes PGlite's
  // transaction lock for its whole duration, so no other statement (Prisma's
  // included) can slip into the BEGIN … COMMIT the caller runs. Inside `fn`, use
  // only the session: a query through db.sql or db.prisma would wait for the lock.
  const lite = await PGlite.create(dataDir);
  const prisma = new PrismaClient({ adapter: new PrismaPGlite(lite) });
  const sql = pgliteExecutor(lite);
  const handle: DatabaseHandle = {
    mode: "embedded",
    dialect: POSTGRES,
    prisma,
    sql,
    withSession: (fn) =>
      lite.transaction(async (tx) => {
        await tx.exec("COMMIT"); // start in autocommit, like a fresh connection; callers BEGIN themselves
        return fn(pgliteExecutor(tx));
      }),
  };
  return {
    ...handle,
    read: primaryAsRead(handle),
    async close() {
      await prisma.$disconnect();
      await lite.close();
    },
  };
}

type Holder = { promise?: Promise<Database> };
// Survives Next's module reloading in dev, so one process opens PGlite once.
const holder: Holder = ((globalThis as { __idempotencyConsoleDb?: Holder }).__idempotencyConsoleDb ??= {});

/**
 * The process-wide database, opened lazily (next build imports route modules and
 * must not connect). `prepare` runs once after opening (bootstrap: migrate; the embedded demo seeds in lib/demo/embedded.ts).
 */
export function getDatabase(prepare?: (db: Database) => Promise<void>): Promise<Database> {
  holder.promise ??= (async () => {
    const db = await openDatabase(databaseConfigFromEnv());
    if (prepare) await prepare(db);
    return db;
  })().catch((err) => {
    holder.promise = undefined;
    throw err;
  });
  return holder.promise;
}

/** Makes an already-open database the process-wide one (tests and scripts that open their own). */
export function provideDatabase(database: Database): void {
  holder.promise = Promise.resolve(database);
}

export async function closeDatabase(): Promise<void> {
  const p = holder.promise;
  holder.promise = undefined;
  if (p) await (await p).close();
}
