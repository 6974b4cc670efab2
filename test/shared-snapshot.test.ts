import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase, type Database } from "@/lib/db/client";
import { inSharedSnapshot, pgExecutor, queryPrepared } from "@/lib/db/sql";
import { generateDemoTraffic } from "@/lib/demo/traffic";
import { expiryStats } from "@/lib/stats/expiry";
import { overviewStats } from "@/lib/stats/overview";
import { createTestDatabase, usingPostgres, type TestDatabase } from "./helpers/db";

/**
 * Two sessions, one snapshot (lib/db/sql.ts inSharedSnapshot; PostgreSQL's pg_export_snapshot and
 * SET TRANSACTION SNAPSHOT): the overview and the Expiry page read part of their statements on a
 * second connection at the same time, and their numbers must still agree as if read on one. A
 * second session is taken only if the pool has one free at once (withSpareSession): a request
 * that holds a connection never waits for another.
 */

let db: TestDatabase;

describe.skipIf(!usingPostgres)("a second session in the same snapshot (PostgreSQL)", () => {
  beforeAll(async () => {
    db = await createTestDatabase();
    await generateDemoTraffic(db, { seed: 11, requests: 300, days: 10 });
  }, 240_000);
  afterAll(() => db?.drop());

  it("sees what the first session sees: a row committed after the export is in neither", async () => {
    const count = async (s: { query: Database["sql"]["query"] }) =>
      Number((await s.query<{ n: bigint }>(`SELECT count(*)::bigint AS n FROM idempotency_records`))[0].n);
    const before = await count(db.sql);
    const seen = await db.withSession((session) =>
      inSharedSnapshot(session, db.withSpareSession, async (other) => {
        expect(other, "a spare session: the pool has room").not.toBeNull();
        // Committed by a third connection after the snapshot was exported, before `other` reads.
        await db.sql.query(
          `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, expires_at)
           VALUES ('tenant:snap', 'capture_payment', 'k-after-export', 'h', 'processing', now() + interval '1 day')`,
        );
        return { first: await count(session), second: await count(other!), now: await count(db.sql) };
      }),
    );
    expect(seen).toEqual({ first: before, second: before, now: before + 1 });
  });

  it("no spare session when the pool has none free: the caller goes on alone at once", async () => {
    const small = await openDatabase({ mode: "postgres", url: db.url! }, { poolSize: 1 });
    try {
      const got = await small.withSession(() => small.withSpareSession!(async (other) => other));
      expect(got).toBeNull();
      // And the overview on a full pool: one session, the same numbers.
      const now = new Date();
      const input = { from: new Date(now.getTime() - 86_400_000), to: now };
      const alone = await small.withSession((s) => overviewStats(s, input, { now, spare: small.withSpareSession }));
      const both = await db.withSession((s) => overviewStats(s, input, { now, spare: db.withSpareSession }));
      expect(alone).toEqual(both);
    } finally {
      await small.close();
    }
  });

  it("the overview and the Expiry page read alongside equal the same read on one session", async () => {
    const now = new Date();
    for (const operation of [undefined, "capture_payment"]) {
      const input = { from: new Date(now.getTime() - 7 * 86_400_000), to: now, operation };
      const one = await db.withSession((s) => overviewStats(s, input, { now }));
      let used = false;
      const spare: typeof db.withSpareSession = (fn) => db.withSpareSession!((other) => ((used ||= other !== null), fn(other)));
      const two = await db.withSession((s) => overviewStats(s, input, { now, spare }));
      expect(used).toBe(true);
      expect(two).toEqual(one);
      const expiryAlone = await expiryStats({ ...db, withSpareSession: undefined }, { now, operation });
      expect(await expiryStats(db, { now, operation })).toEqual(expiryAlone);
    }
  });

  it("a session's statements started together run one at a time on its connection, in the order given", async () => {
    // Without a spare session a page starts its statements at once on one session; pg 8 queues
    // overlapping queries but deprecates it and pg 9 drops it, so the executor queues them.
    const client = new pg.Client({ connectionString: db.url! });
    await client.connect();
    try {
      let running = 0;
      let most = 0;
      const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
      (client as unknown as { query: typeof query }).query = (...args) => {
        most = Math.max(most, ++running);
        return query(...args).finally(() => running--);
      };
      const session = pgExecutor(client);
      const order: string[] = [];
      const after = <T>(name: string, p: Promise<T>) => p.then((v) => (order.push(name), v));
      const [slow, plain, write, prepared] = await Promise.all([
        after("slow", session.query<{ n: number }>(`SELECT 1 AS n FROM pg_sleep(0.05)`)),
        after("plain", session.query<{ n: number }>(`SELECT $1::int AS n`, [2])),
        after("write", session.execute!(`SELECT generate_series(1, 3)`)),
        after("prepared", queryPrepared<{ n: number }>(session, `SELECT $1::int + 1 AS n`, [3])),
        after(
          "failing",
          session.query(`SELECT 1/0`).catch(() => "refused"),
        ),
      ]);
      expect([slow[0].n, plain[0].n, write.affectedRows, prepared[0].n]).toEqual([1, 2, 3, 4]);
      expect(order).toEqual(["slow", "plain", "write", "prepared", "failing"]);
      expect(most, "statements in flight on the connection at once").toBe(1);
      // A refused statement does not stop the next.
      expect(await session.query<{ n: number }>(`SELECT 5 AS n`)).toEqual([{ n: 5 }]);
    } finally {
      await client.end();
    }
  });
});
