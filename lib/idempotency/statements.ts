import { byDialect } from "../db/dialect";
import type { Database } from "../db/client";
import type { Statement } from "../db/params";
import { txExecutor, type SqlExecutor } from "../db/sql";
import type { IdempotencyRecord, PrismaClient } from "../generated/prisma/client";
import type { StoredResponse } from "./store";
import { mysqlProtocolStatements } from "./statements.mysql";
import { postgresProtocolStatements } from "./statements.postgres";

/** Which record a request names. */
export interface ProtocolKey {
  scope: string;
  operation: string;
  key: string;
}

/** A new record in `processing`: what the owner of the key knows before the effect. */
export interface Reservation extends ProtocolKey {
  payloadHash: string;
  resourceType: string | null;
  resourceId: string | null;
  correlationId: string | null;
  provider: string | null;
  providerRequestId: string | null;
  amountMinor: bigint | null;
  currency: string | null;
  expiresAt: Date;
}

/** The response to replay, and what completing the effect learned. */
export interface Completion extends StoredResponse {
  /** Null keeps what the record has. */
  resourceType: string | null;
  resourceId: string | null;
  providerReference: string | null;
  /** Messages to dispatch later, written in the same statement. */
  outbox: { topic: string; payload: unknown }[];
}

/** The error response to replay, and the error. */
export interface Failure extends StoredResponse {
  error: string;
}

export interface PendingTransition {
  /** Null keeps the record's provider (a record without one cannot move). */
  provider: string | null;
  providerRequestId: string;
  error: string;
  /** When the reconciler first checks the provider. */
  firstCheckAt: Date;
}

/**
 * The writers' protocol's statements (ADR 0011). Each changes the record and appends the
 * event that describes the change in one statement, so an event always describes the very
 * row version it answers; `now` stamps both.
 */
export interface ProtocolStatements {
  /** Inserts the record (processing) and its `reserved` event, unless the key exists (the unique constraint decides): the new record, or null. */
  reserve(r: Reservation, now: Date): Promise<IdempotencyRecord | null>;
  /**
   * The record under an existing key, appending what this request became (`conflict` for another
   * payload hash, `replayed` for a finished record, else `in_progress`); null when the row is gone.
   */
  answerExisting(key: ProtocolKey, payloadHash: string, now: Date): Promise<IdempotencyRecord | null>;
  /** processing → completed with its event and outbox messages; null when the record is not processing. */
  complete(id: bigint, c: Completion, now: Date): Promise<IdempotencyRecord | null>;
  /** processing → failed with its event; null when the record is not processing. */
  fail(id: bigint, f: Failure, now: Date): Promise<IdempotencyRecord | null>;
  /**
   * processing → pending, opening a reconciliation item, with its event; null when the record is
   * not processing or neither the transition nor the record names a provider.
   */
  markPending(id: bigint, p: PendingTransition, now: Date): Promise<(IdempotencyRecord & { reconciliationItemId: bigint | null }) | null>;
}

/**
 * A reservation may wait for another's uncommitted one of the same key, and many writers share the
 * pool: Prisma's defaults (2 s for a connection, 5 s a transaction) would fail a busy writer before
 * InnoDB's own lock wait (innodb_lock_wait_timeout, 50 s) does.
 */
const MYSQL_TX_OPTIONS = { maxWait: 15_000, timeout: 60_000 };

/** What the protocol library writes through: the database handle, or only its Prisma client. */
export type ProtocolDatabase = PrismaClient | Pick<Database, "prisma" | "sql" | "withSession">;

const isHandle = (db: ProtocolDatabase): db is Pick<Database, "prisma" | "sql" | "withSession"> => "sql" in db && "withSession" in db;

/**
 * The statements for the database `db` speaks to. PostgreSQL's are one statement each;
 * MySQL's are several, so they run in a transaction of their own (statements.mysql.ts).
 * Given the handle, they go straight to the driver (the pool, or one session for a MySQL
 * transaction); given only a Prisma client, through its raw queries — the same statements,
 * at about half the throughput (bench/fill.ts).
 */
export function protocolStatements(db: ProtocolDatabase): ProtocolStatements {
  if (isHandle(db)) {
    return byDialect(db.sql, {
      postgres: () => postgresProtocolStatements(db.sql),
      mysql: () => mysqlProtocolStatements((statements) => db.withSession((session) => oneRoundTrip(session, statements))),
    })();
  }
  const prisma = db;
  const ex = txExecutor(prisma);
  return byDialect(ex, {
    postgres: () => postgresProtocolStatements(ex),
    mysql: () => mysqlProtocolStatements((statements) => prisma.$transaction((tx) => oneByOne(txExecutor(tx), statements), MYSQL_TX_OPTIONS)),
  })();
}

/**
 * A MySQL transaction as one multi-statement script (the handle's pool allows them): START
 * TRANSACTION, the statements, COMMIT, in one round trip. A failing statement ends the script
 * there with the transaction open on the session: it is rolled back before the connection goes back.
 */
async function oneRoundTrip(session: SqlExecutor, statements: Statement[]): Promise<unknown[][]> {
  const text = ["START TRANSACTION", ...statements.map((s) => s.text), "COMMIT"].join(";\n");
  try {
    const results = await session.query<unknown>(
      text,
      statements.flatMap((s) => s.values),
    );
    return results.slice(1, -1).map((r) => (Array.isArray(r) ? r : []));
  } catch (err) {
    await session.exec("ROLLBACK").catch(() => {});
    throw err;
  }
}

/** The same in a Prisma interactive transaction, whose MariaDB adapter prepares one statement at a time. */
async function oneByOne(tx: SqlExecutor, statements: Statement[]): Promise<unknown[][]> {
  const results: unknown[][] = [];
  // Each through query (a write answers no rows): execute() would ask LAST_INSERT_ID() around every INSERT.
  for (const s of statements) results.push(await tx.query(s.text, s.values));
  return results;
}
