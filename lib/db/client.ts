import { mkdirSync } from "node:fs";
import { PGlite } from "@electric-sql/pglite";
import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { PrismaPGlite } from "pglite-prisma-adapter";
import { PrismaClient } from "../generated/prisma/client";
import { databaseConfigFromEnv, type DatabaseConfig, type DatabaseMode } from "./config";
import { POSTGRES, type Dialect } from "./dialect";
import { pgExecutor, pgliteExecutor, type SqlExecutor } from "./sql";

export type Prisma = PrismaClient;

/** One handle on the database, whichever mode it runs in. */
export interface Database {
  mode: DatabaseMode;
  /** The SQL the database speaks (lib/db/dialect.ts). */
  dialect: Dialect;
  prisma: PrismaClient;
  /** Pooled raw SQL for set-based work. */
  sql: SqlExecutor;
  /** Runs `fn` on one dedicated session (needed for advisory locks and migrations). */
  withSession<T>(fn: (session: SqlExecutor) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export async function openDatabase(config: DatabaseConfig, opts: { poolSize?: number } = {}): Promise<Database> {
  if (config.mode === "postgres") {
    if (!config.url) throw new Error("postgres mode needs a connection string");
    const pool = new pg.Pool({
      connectionString: config.url,
      max: opts.poolSize ?? 10,
      // The console reads small index ranges whose row estimates often pass jit_above_cost
      // (a watermark or a clock read at run time): compiling them costs more (~50–100 ms a
      // statement) than reading them. Awaited before the connection is handed out.
      onConnect: async (client: pg.ClientBase) => {
        await client.query("SET jit = off").catch(() => {});
      },
    });
    // An idle connection the server drops (restart, failover, pg_terminate_backend)
    // emits 'error' on the pool; unhandled, it would crash the process.
    pool.on("error", (err) => console.warn(`database: idle connection lost (${(err as { code?: string }).code ?? err.message})`));
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
      async close() {
        await prisma.$disconnect();
        await pool.end().catch(() => {});
      },
    };
  }
  const dataDir = config.dataDir ?? "memory://";
  if (!dataDir.startsWith("memory://")) mkdirSync(dataDir, { recursive: true });
  // PGlite is one connection in this process. A "session" takes PGlite's
  // transaction lock for its whole duration, so no other statement (Prisma's
  // included) can slip into the BEGIN … COMMIT the caller runs. Inside `fn`, use
  // only the session: a query through db.sql or db.prisma would wait for the lock.
  const lite = await PGlite.create(dataDir);
  const prisma = new PrismaClient({ adapter: new PrismaPGlite(lite) });
  const sql = pgliteExecutor(lite);
  return {
    mode: "embedded",
    dialect: POSTGRES,
    prisma,
    sql,
    withSession: (fn) =>
      lite.transaction(async (tx) => {
        await tx.exec("COMMIT"); // start in autocommit, like a fresh connection; callers BEGIN themselves
        return fn(pgliteExecutor(tx));
      }),
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
 * must not connect). `prepare` runs once after opening (bootstrap: migrate + seed).
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
