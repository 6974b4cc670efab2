import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sessionLock, sessionUnlock, transactionLock, trySessionLock, withTrySessionLock } from "@/lib/db/locks";
import { dialectOfPrisma, inTransaction, txExecutor, type SqlExecutor } from "@/lib/db/sql";
import { createTestDatabase, usingDatabaseServer, type TestDatabase } from "./helpers/db";

/**
 * The lock primitives of lib/db/locks.ts, the same calls on either dialect (ADR 0012): PostgreSQL's
 * advisory locks, MySQL's GET_LOCK and console_locks rows. Two sessions are needed, so a database
 * server (embedded PGlite is one connection).
 */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** "pending" if `p` has not settled within `ms`. */
const within = <T>(p: Promise<T>, ms: number) => Promise.race([p, sleep(ms).then(() => "pending" as const)]);

describe("the dialect of a Prisma client or transaction", () => {
  it("is the database's, so a function handed only db.prisma runs its store's statements in the right dialect", async () => {
    const db = await createTestDatabase();
    try {
      expect(dialectOfPrisma(db.prisma).name).toBe(db.dialect.name);
      await db.prisma.$transaction(async (tx) => {
        expect(dialectOfPrisma(tx).name).toBe(db.dialect.name);
        expect(txExecutor(tx).dialect.name).toBe(db.dialect.name);
      });
    } finally {
      await db.drop();
    }
  });
});

describe.runIf(usingDatabaseServer)("lock primitives across sessions", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db?.drop());

  const begin = (s: SqlExecutor) => s.exec(s.dialect.name === "mysql" ? "START TRANSACTION" : "BEGIN");

  it("session locks: one holder at a time, re-entrant, a waiter gets it when it is released", async () => {
    await db.withSession(async (a) => {
      await db.withSession(async (b) => {
        expect(await trySessionLock(a, "reconciler")).toBe(true);
        expect(await trySessionLock(a, "reconciler")).toBe(true);
        expect(await trySessionLock(b, "reconciler")).toBe(false);
        expect(await withTrySessionLock(b, "reconciler", async () => "ran")).toBeNull();
        expect(await withTrySessionLock(b, "refresher", async () => "ran")).toBe("ran"); // other locks are free
        await sessionUnlock(a, "reconciler");
        expect(await trySessionLock(b, "reconciler")).toBe(false); // still held once
        const waiting = sessionLock(b, "reconciler").then(() => "granted");
        expect(await within(waiting, 300)).toBe("pending");
        await sessionUnlock(a, "reconciler");
        expect(await waiting).toBe("granted");
        await sessionUnlock(b, "reconciler");
        expect(await trySessionLock(a, "reconciler")).toBe(true);
        await sessionUnlock(a, "reconciler");
      });
    });
  });

  it("transaction locks: shared with shared, exclusive alone; released when the transaction ends; also inside a Prisma transaction", async () => {
    await db.withSession(async (a) => {
      await db.withSession(async (b) => {
        await db.withSession(async (c) => {
          await begin(a);
          await transactionLock(a, "legalHolds", "shared");
          await begin(b);
          expect(await within(transactionLock(b, "legalHolds", "shared"), 2000)).toBeUndefined(); // granted at once
          await begin(c);
          const exclusive = transactionLock(c, "legalHolds", "exclusive").then(() => "granted");
          expect(await within(exclusive, 300)).toBe("pending");
          await a.exec("COMMIT");
          expect(await within(exclusive, 300)).toBe("pending"); // b still shares it
          await b.exec("ROLLBACK");
          expect(await exclusive).toBe("granted");
          const prisma = db.prisma.$transaction((tx) => transactionLock(txExecutor(tx, db.dialect), "legalHolds", "shared")).then(() => "granted");
          expect(await within(prisma, 300)).toBe("pending");
          await c.exec("COMMIT");
          expect(await prisma).toBe("granted");
        });
      });
    });
    // inTransaction + the dialect's REPEATABLE READ begin, as a rollup writer would take it.
    await db.withSession((s) => inTransaction(s, () => transactionLock(s, "rollups"), s.dialect.beginRepeatableRead));
  });
});
