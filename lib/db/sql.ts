import type { PGlite, Transaction } from "@electric-sql/pglite";
import pg from "pg";
import type { Prisma } from "../generated/prisma/client";
import { POSTGRES, type Dialect } from "./dialect";

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
}

/**
 * The one transaction handle for raw statements inside a Prisma interactive transaction
 * (`db.prisma.$transaction(async (tx) => …)`): the same SqlExecutor the stores take, so a
 * module mixes Prisma's model API and named statements in one transaction.
 */
export function txExecutor(tx: Prisma.TransactionClient, dialect: Dialect = POSTGRES): SqlExecutor {
  return {
    dialect,
    query: <T>(text: string, params: unknown[] = []) => tx.$queryRawUnsafe<T[]>(text, ...params),
    async exec(script: string) {
      await tx.$executeRawUnsafe(script);
    },
  };
}

/** The read-only snapshot the read side reads many statements in, so that their numbers agree. */
export const SNAPSHOT = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";

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

/** A session on a single pg connection (advisory locks are per session), or the pool. */
export function pgExecutor(client: pg.ClientBase | pg.Pool): SqlExecutor {
  return {
    dialect: POSTGRES,
    async query<T>(text: string, params: unknown[] = []) {
      const result = await client.query({ text, values: params, types: PG_TYPES });
      return result.rows as T[];
    },
    async exec(script: string) {
      // Without parameters pg uses the simple query protocol, which accepts many statements.
      await client.query(script);
    },
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
  };
}
