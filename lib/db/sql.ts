import { createHash } from "node:crypto";
import type { PGlite, Transaction } from "@electric-sql/pglite";
import type * as mariadb from "mariadb";
import pg from "pg";
import type { Prisma } from "../generated/prisma/client";
import { MYSQL, POSTGRES, type Dialect } from "./dialect";
import { splitMysqlStatements } from "./mysql-script";

/**
 * The smallest raw-SQL surface the console needs outside Prisma: multi-statement
 * scripts (migrations), session-level advisory locks and set-based bulk loading.
 * Both database modes implement it, so the code above it never branches on mode.
 */
export interface SqlExecutor {
  /** The SQL it speaks (lib/db/dialect.ts): stores pick their statements by it. */
  readonly dialect: Dialect;
  query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
  /** Runs a script of several statements (no parameters). */
  exec(script: string): Promise<void>;
  /**
   * A write, reporting what it did: rows matched (PostgreSQL's row count; MySQL's with
   * foundRows) and the AUTO_INCREMENT id an INSERT took (MySQL; null elsewhere). MySQL has no
   * RETURNING (ADR 0012). Every executor lib/db makes has it; call it through `execute()`.
   */
  execute?(text: string, params?: unknown[]): Promise<WriteResult>;
  /**
   * `query` as a named prepared statement (parsed and planned once per connection), for the few
   * fixed statements run on every request (the writers' protocol). pgExecutor only; call it
   * through `queryPrepared()`.
   */
  prepared?<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
}

/**
 * Runs a statement whose text never varies as a prepared statement where the executor has them
 * (PostgreSQL's pool and sessions), else as a plain query. Only for statements whose plan does
 * not depend on the values (a row by key or id): after five runs PostgreSQL may keep one plan.
 */
export function queryPrepared<T>(ex: SqlExecutor, text: string, params: unknown[] = []): Promise<T[]> {
  return ex.prepared ? ex.prepared<T>(text, params) : ex.query<T>(text, params);
}

export interface WriteResult {
  affectedRows: number;
  /** MySQL: the first AUTO_INCREMENT id the INSERT took (LAST_INSERT_ID()); null when none. */
  insertId: bigint | null;
}

/** Runs a write through `ex` and reports the rows it matched and the id it inserted (see SqlExecutor.execute). */
export function execute(ex: SqlExecutor, text: string, params: unknown[] = []): Promise<WriteResult> {
  if (!ex.execute) throw new Error("this executor does not report affected rows (use one from lib/db)");
  return ex.execute(text, params);
}

/**
 * The dialect a Prisma client or transaction speaks. Functions that are handed only a client
 * (`audit(db.prisma, …)`, `new IdempotencyStore(db.prisma)`) learn it here rather than from
 * every caller. `_activeProvider` is the generated client's provider name ("postgresql",
 * "mysql"); test/mysql-foundation.test.ts checks it on both clients.
 */
export function dialectOfPrisma(client: Prisma.TransactionClient): Dialect {
  const provider = (client as { _activeProvider?: string })._activeProvider;
  if (provider === "mysql") return MYSQL;
  if (provider === undefined || provider === "postgresql") return POSTGRES;
  throw new Error(`no dialect for the Prisma provider ${provider}`);
}

/**
 * The one transaction handle for raw statements inside a Prisma interactive transaction
 * (`db.prisma.$transaction(async (tx) => …)`): the same SqlExecutor the stores take, so a
 * module mixes Prisma's model API and named statements in one transaction.
 */
export function txExecutor(tx: Prisma.TransactionClient, dialect: Dialect = dialectOfPrisma(tx)): SqlExecutor {
  const mysql = dialect.name === "mysql";
  return {
    dialect,
    query: <T>(text: string, params: unknown[] = []) => tx.$queryRawUnsafe<T[]>(text, ...params),
    async exec(script: string) {
      // Prisma's MySQL adapter prepares each statement (binary protocol): one at a time.
      for (const statement of mysql ? splitMysqlStatements(script) : [script]) await tx.$executeRawUnsafe(statement);
    },
    async execute(text: string, params: unknown[] = []) {
      const inserts = mysql && /^\s*(INSERT|REPLACE)\b/i.test(text);
      if (!inserts) return { affectedRows: await tx.$executeRawUnsafe(text, ...params), insertId: null };
      // LAST_INSERT_ID() is per connection: the reset, the INSERT and the read must share one. A
      // transaction has one; the bare client would take each from the pool, so it gets a transaction.
      const withInsertId = async (c: Prisma.TransactionClient) => {
        // LAST_INSERT_ID() keeps the previous value when a table has no AUTO_INCREMENT: zero it first.
        await c.$queryRawUnsafe("SELECT LAST_INSERT_ID(0) AS reset");
        const affectedRows = await c.$executeRawUnsafe(text, ...params);
        const [{ id }] = await c.$queryRawUnsafe<{ id: bigint | number }[]>("SELECT LAST_INSERT_ID() AS id");
        return { affectedRows, insertId: BigInt(id) === 0n ? null : BigInt(id) };
      };
      const root = tx as { $transaction?: <T>(fn: (c: Prisma.TransactionClient) => Promise<T>) => Promise<T> };
      return typeof root.$transaction === "function" ? root.$transaction(withInsertId) : withInsertId(tx);
    },
  };
}

/** The read-only snapshot the read side reads many statements in, so that their numbers agree (PostgreSQL's; any dialect: inSnapshot). */
export const SNAPSHOT = POSTGRES.snapshot;

/** Runs `fn` on `session` in one read-only transaction whose plain reads see one snapshot (dialect.snapshot). */
export function inSnapshot<T>(session: SqlExecutor, fn: () => Promise<T>): Promise<T> {
  return inTransaction(session, fn, session.dialect.snapshot);
}

/**
 * A second session for reading alongside the one a caller holds, if the pool has one free now
 * (an idle connection, or room to open one), else null — never a wait: callers that hold a
 * session and waited for another could deadlock a busy pool (DatabaseHandle.withSpareSession).
 */
export type SpareSession = <T>(fn: (session: SqlExecutor | null) => Promise<T>) => Promise<T>;

/**
 * Runs `fn` in one read-only snapshot on `session` (inSnapshot) and, where the database can share
 * it (dialect.sharedSnapshot: PostgreSQL) and `spare` has a session free, with a second session in
 * a transaction of its own that imports that very snapshot — two connections, one snapshot, so a
 * page's statements can run side by side and still agree. `fn` gets the second session or null
 * (then everything runs on `session`). `prepare` runs first in each transaction.
 */
export function inSharedSnapshot<T>(
  session: SqlExecutor,
  spare: SpareSession | undefined,
  fn: (other: SqlExecutor | null) => Promise<T>,
  prepare: (s: SqlExecutor) => Promise<unknown> = async () => {},
): Promise<T> {
  return inSnapshot(session, async () => {
    await prepare(session);
    const shared = session.dialect.sharedSnapshot;
    if (!shared || !spare) return fn(null);
    return spare(async (other) => {
      if (!other) return fn(null);
      const [{ id }] = await session.query<{ id: string }>(shared.exportSql);
      return inTransaction(
        other,
        async () => {
          await prepare(other);
          return fn(other);
        },
        `${other.dialect.snapshot}; ${shared.importSql(id)}`,
      );
    });
  });
}

/**
 * Runs `fn` in one transaction on `session` (one connection: Database.withSession):
 * `begin` (default BEGIN), then COMMIT, or ROLLBACK if `fn` throws.
 */
export async function inTransaction<T>(session: SqlExecutor, fn: () => Promise<T>, begin = "BEGIN"): Promise<T> {
  await session.exec(begin);
  try {
    const out = await fn();
    await session.exec("COMMIT");
    return out;
  } catch (err) {
    await session.exec("ROLLBACK").catch(() => {});
    throw err;
  }
}

// BIGINT as BigInt, like Prisma. Per query: a global parser would break the Prisma
// adapter sharing the pool, which expects pg's default strings.
const PG_TYPES = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === 20 ? (v: string) => BigInt(v) : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

/** Part of every prepared statement's name: a new one after a table's columns changed type under them. */
let preparedGeneration = 0;

/** "cached plan must not change result type" (by its code and the server function, whatever lc_messages says). */
const isStalePreparedPlan = (err: unknown) => {
  const e = err as { code?: string; routine?: string };
  return e?.code === "0A000" && e.routine === "RevalidateCachedQuery";
};

/**
 * Runs the calls given to it one after another, in the order they were given, each after the
 * last has settled. A connection runs one statement at a time; a page that starts several at once
 * on its session (Promise.all, when no spare session is free) queues them here — pg 8 would queue
 * them itself but deprecates it ("Calling client.query() when the client is already executing a
 * query"), and pg 9 drops it.
 */
export function oneAtATime(): <T>(call: () => Promise<T>) => Promise<T> {
  let last: Promise<unknown> = Promise.resolve();
  return (call) => {
    const next = last.then(call);
    last = next.catch(() => {});
    return next;
  };
}

/** A session on a single pg connection (advisory locks are per session), or the pool. */
export function pgExecutor(client: pg.ClientBase | pg.Pool): SqlExecutor {
  // The pool hands each statement a free connection; a session's statements wait their turn.
  const inTurn: <T>(call: () => Promise<T>) => Promise<T> = client instanceof pg.Pool ? (call) => call() : oneAtATime();
  return {
    dialect: POSTGRES,
    query: <T>(text: string, params: unknown[] = []) => inTurn(async () => (await client.query({ text, values: params, types: PG_TYPES })).rows as T[]),
    exec: (script: string) =>
      inTurn(async () => {
        // Without parameters pg uses the simple query protocol, which accepts many statements.
        await client.query(script);
      }),
    execute: (text: string, params: unknown[] = []) =>
      inTurn(async () => {
        const result = await client.query({ text, values: params, types: PG_TYPES });
        return { affectedRows: result.rowCount ?? 0, insertId: null };
      }),
    prepared: <T>(text: string, params: unknown[] = []) =>
      inTurn(async () => {
        // pg prepares a name once per connection; the name is the text's digest, so one text, one name.
        const digest = createHash("sha256").update(text).digest("hex").slice(0, 40);
        const run = () => client.query({ name: `ic_${preparedGeneration}_${digest}`, text, values: params, types: PG_TYPES });
        try {
          return (await run()).rows as T[];
        } catch (err) {
          // A column it returns changed type (the writers own the tables): PostgreSQL refuses the
          // statement before running it, on every connection that prepared it. Prepare anew, by new names.
          if (!isStalePreparedPlan(err)) throw err;
          preparedGeneration++;
          return (await run()).rows as T[];
        }
      }),
  };
}

// BIGINT as BigInt in both modes (see PG_TYPES). Per query,
// so the Prisma adapter sharing this PGlite instance keeps its own parsing.
const PGLITE_PARSERS = { 20: (v: string) => BigInt(v) };

export function pgliteExecutor(db: PGlite | Transaction): SqlExecutor {
  return {
    dialect: POSTGRES,
    async query<T>(text: string, params: unknown[] = []) {
      const result = await db.query<T>(text, params, { parsers: PGLITE_PARSERS });
      return result.rows;
    },
    async exec(script: string) {
      await db.exec(script);
    },
    async execute(text: string, params: unknown[] = []) {
      const result = await db.query(text, params, { parsers: PGLITE_PARSERS });
      return { affectedRows: result.affectedRows ?? 0, insertId: null };
    },
  };
}

// --- MySQL / MariaDB (ADR 0012) ------------------------------------------------------

/** A Date as DATETIME text in UTC ("2026-12-01 09:00:00.123"): the driver would write the process's local time. */
export const utcDateTime = (d: Date): string => d.toISOString().replace("T", " ").replace("Z", "");

function mysqlParam(value: unknown): unknown {
  if (value instanceof Date) return utcDateTime(value);
  if (value !== null && typeof value === "object" && !Buffer.isBuffer(value)) {
    // The driver would expand an array into a list and write an object as JSON, which Prisma's
    // raw queries (txExecutor) do not: say which is meant.
    throw new TypeError("MySQL parameters are scalars: bind JSON as JSON.stringify(value) and lists with Params.list");
  }
  return value;
}

/**
 * One MySQL connection (a session: GET_LOCK is per connection), or the pool — of createMysqlPool
 * (lib/db/mysql.ts), whose options say how values are read. A statement goes as plain text: with
 * per-query options the driver copies all the connection's options for every statement.
 */
export function mysqlExecutor(client: mariadb.Pool | mariadb.Connection): SqlExecutor {
  const run = (text: string, params: unknown[]) => client.query(text, params.map(mysqlParam));
  return {
    dialect: MYSQL,
    async query<T>(text: string, params: unknown[] = []) {
      const result: unknown = await run(text, params);
      return Array.isArray(result) ? ([...result] as T[]) : []; // a write answers an OkPacket, not rows
    },
    async exec(script: string) {
      await client.query(script); // the pool allows multipleStatements
    },
    async execute(text: string, params: unknown[] = []) {
      const ok = (await run(text, params)) as { affectedRows?: number; insertId?: bigint | number };
      const id = ok.insertId === undefined ? 0n : BigInt(ok.insertId);
      return { affectedRows: ok.affectedRows ?? 0, insertId: id === 0n ? null : id };
    },
  };
}
