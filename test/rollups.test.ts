import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IdempotencyStore } from "@/lib/idempotency";
import { countEvents, rebuildRollups, refreshRollups } from "@/lib/stats/rollups";
import { generateDemoTraffic } from "@/lib/demo/traffic";
import { createTestDatabase, usingPostgres, type TestDatabase } from "./helpers/db";

let db: TestDatabase;
const now = new Date("2026-11-30T12:00:00.000Z");
beforeAll(async () => {
  db = await createTestDatabase();
  await generateDemoTraffic(db, { seed: 11, requests: 400, days: 7, now });
});
afterAll(() => db?.drop());

type Row = { operation: string; kind: string; count: number };
const key = (r: Row) => `${r.operation}/${r.kind}`;
const asMap = (rows: Row[]) => Object.fromEntries(rows.map((r) => [key(r), r.count]));

/** The truth: a direct count over the raw events table. */
async function rawCounts(from: Date, to: Date, operation?: string, scope?: string) {
  const rows = await db.sql.query<{ operation: string; kind: string; n: bigint }>(
    `SELECT operation, kind, count(*)::bigint AS n FROM idempotency_events
      WHERE occurred_at >= $1 AND occurred_at < $2 AND ($3::text IS NULL OR operation = $3) AND ($4::text IS NULL OR scope = $4)
      GROUP BY 1, 2`,
    [from, to, operation ?? null, scope ?? null],
  );
  return Object.fromEntries(rows.map((r) => [`${r.operation}/${r.kind}`, Number(r.n)]));
}

async function rolledTotal() {
  const [r] = await db.sql.query<{ n: bigint | null }>(`SELECT sum(count)::bigint AS n FROM event_rollups`);
  return Number(r.n ?? 0);
}

const ranges: [string, Date, Date][] = [
  ["everything", new Date("2026-01-01T00:00:00Z"), new Date("2027-01-01T00:00:00Z")],
  ["last 24 h, unaligned", new Date(now.getTime() - 86_400_000 + 17_123), new Date(now.getTime() - 5_432)],
  ["inside one minute", new Date(now.getTime() - 3 * 3600_000 + 5_000), new Date(now.getTime() - 3 * 3600_000 + 40_000)],
  ["7 days", new Date(now.getTime() - 7 * 86_400_000), now],
];

async function expectExact() {
  for (const [, from, to] of ranges) {
    expect(asMap(await db.withSession((s) => countEvents(s, { from, to })))).toEqual(await rawCounts(from, to));
  }
  const from = ranges[3][1];
  const to = ranges[3][2];
  expect(asMap(await db.withSession((s) => countEvents(s, { from, to, operation: "capture_payment" })))).toEqual(
    await rawCounts(from, to, "capture_payment"),
  );
  expect(asMap(await db.withSession((s) => countEvents(s, { from, to, scope: "tenant:acme" })))).toEqual(
    await rawCounts(from, to, undefined, "tenant:acme"),
  );
}

describe("event rollups", () => {
  it("counts are exact before any rollup (all raw), after a refresh, and after incremental updates", async () => {
    await expectExact();
    const first = await db.withSession((s) => refreshRollups(s, { batchSize: 500 }));
    expect(first.batches).toBeGreaterThan(1);
    const [{ n }] = await db.sql.query<{ n: bigint }>(`SELECT count(*)::bigint AS n FROM idempotency_events`);
    expect(await rolledTotal()).toBe(Number(n));
    await expectExact();

    // More traffic arrives (late, backdated events included); counts stay exact before and after the next refresh.
    await generateDemoTraffic(db, { seed: 12, requests: 150, days: 7, now });
    await expectExact();
    const second = await db.withSession((s) => refreshRollups(s));
    expect(second.eventsCounted).toBeGreaterThan(0);
    await expectExact();
    const again = await db.withSession((s) => refreshRollups(s));
    expect(again.eventsCounted).toBe(0); // nothing counted twice
  });

  it("a rebuild gives the same rollups as the incremental path", async () => {
    await db.withSession((s) => refreshRollups(s));
    const before = await db.sql.query(`SELECT bucket, operation, scope, kind, count FROM event_rollups ORDER BY 1, 2, 3, 4`);
    const rebuilt = await db.withSession((s) => rebuildRollups(s, { batchSize: 700 }));
    expect(rebuilt.gapsOpen).toBe(0);
    expect(await db.sql.query(`SELECT bucket, operation, scope, kind, count FROM event_rollups ORDER BY 1, 2, 3, 4`)).toEqual(before);
    await expectExact();
  });

  it.skipIf(!usingPostgres)("an event committed after the watermark passed its id is still counted (gap)", async () => {
    // Writer A takes an id and keeps its transaction open; writer B commits a later id; the refresh runs.
    const store = new IdempotencyStore(db.prisma);
    await db.withSession(async (writerA) => {
      await writerA.exec("BEGIN");
      await writerA.query(
        `INSERT INTO idempotency_events (scope, operation, idempotency_key, kind, occurred_at) VALUES ('tenant:gap', 'capture_payment', 'gap-a', 'reserved', now())`,
      );
      await store.begin({ scope: "tenant:gap", operation: "capture_payment", key: "gap-b", payload: { n: 1 } });
      const r = await db.withSession((s) => refreshRollups(s));
      expect(r.gapsOpen).toBe(1);
      await writerA.exec("COMMIT");
    });
    await expectExact(); // exact even before the next refresh: the gap is counted raw
    const r = await db.withSession((s) => refreshRollups(s));
    expect(r.gapsOpen).toBe(0);
    const [{ n }] = await db.sql.query<{ n: bigint }>(`SELECT count(*)::bigint AS n FROM idempotency_events`);
    expect(await rolledTotal()).toBe(Number(n));
    await expectExact();
  });

  it.skipIf(!usingPostgres)("two refreshers at once never count an event twice", async () => {
    await generateDemoTraffic(db, { seed: 13, requests: 100, days: 2, now });
    await Promise.all([db.withSession((s) => refreshRollups(s, { batchSize: 200 })), db.withSession((s) => refreshRollups(s, { batchSize: 300 }))]);
    const [{ n }] = await db.sql.query<{ n: bigint }>(`SELECT count(*)::bigint AS n FROM idempotency_events`);
    expect(await rolledTotal()).toBe(Number(n));
  });
});
