import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { provideDatabase } from "@/lib/db/client";
import { byDialect } from "@/lib/db/dialect";
import { bulkGenerate } from "@/lib/demo/bulk";
import { generateDemoTraffic, type DemoSummary } from "@/lib/demo/traffic";
import { IdempotencyStore } from "@/lib/idempotency";
import { duplicatesOfRecord, findDuplicates, type DuplicatesInput } from "@/lib/records/duplicates";
import { recordColumns, type RecordSummary } from "@/lib/records/row";
import { createTestDatabase, type TestDatabase } from "./helpers/db";
import { call, json, tokenFor } from "./helpers/records-api";

let db: TestDatabase;
let demo: DemoSummary;
const now = new Date("2026-11-30T12:00:00.000Z");
const from = new Date(now.getTime() - 14 * 86_400_000);

beforeAll(async () => {
  db = await createTestDatabase();
  demo = await generateDemoTraffic(db, { seed: 51, requests: 1200, days: 14, now });
  provideDatabase(db);
});
afterAll(() => db?.drop());

const pairsOf = async (input: Partial<DuplicatesInput> = {}) => {
  const r = await findDuplicates(db.sql, { from, to: now, ...input });
  expect(r.truncated).toBe(false);
  return r.clusters.map((c) => c.records.map((x) => x.id.toString()).join("+")).sort();
};
const planted = (maxSeconds = 600) =>
  demo.doubleSubmits
    .filter((p) => p.secondsApart <= maxSeconds)
    .map((p) => p.recordIds.join("+"))
    .sort();

describe("duplicate-charge finder", () => {
  it("finds exactly the double charges the demo traffic planted, side by side, and nothing else", async () => {
    expect(demo.doubleSubmits.length).toBeGreaterThanOrEqual(3);
    const r = await findDuplicates(db.sql, { from, to: now });
    expect(r.clusters.map((c) => c.records.map((x) => x.id.toString()).join("+")).sort()).toEqual(planted());
    for (const c of r.clusters) {
      const p = demo.doubleSubmits.find((d) => d.recordIds[0] === c.records[0].id.toString())!;
      expect(c).toMatchObject({
        scope: p.scope,
        operation: p.operation,
        basis: ["payload_hash"],
        payloadHash: p.payloadHash,
        amountMinor: BigInt(p.amountMinor),
        currency: p.currency,
        completed: 2,
        spanSeconds: p.secondsApart,
      });
      expect(c.records.map((x) => x.idempotencyKey)).toEqual(p.keys);
      // Both charges' provider references, to look up at the provider.
      expect(c.providerReferences).toHaveLength(2);
      expect(c.providerReferences).toEqual(c.records.map((x) => x.providerReference));
      expect(c.pairs).toEqual([{ first: c.records[0].id, second: c.records[1].id, basis: ["payload_hash"], secondsApart: p.secondsApart }]);
    }
  });

  it("honours the window, the time range (a pair belongs to its first record) and the filters", async () => {
    const close = Math.min(...demo.doubleSubmits.map((p) => p.secondsApart));
    expect(await pairsOf({ windowSeconds: close })).toEqual(planted(close));
    expect(await pairsOf({ windowSeconds: Math.max(60, close - 1) })).toEqual(planted(Math.max(60, close - 1)));

    const p = demo.doubleSubmits[0];
    const first = new Date(p.createdAt[0]);
    expect(await pairsOf({ from: first, to: new Date(first.getTime() + 1) })).toEqual([p.recordIds.join("+")]);
    expect(await pairsOf({ from: new Date(first.getTime() + 1), to: new Date(new Date(p.createdAt[1]).getTime() + 1) })).not.toContain(p.recordIds.join("+"));
    expect(await pairsOf({ scope: p.scope })).toEqual(
      demo.doubleSubmits
        .filter((d) => d.scope === p.scope)
        .map((d) => d.recordIds.join("+"))
        .sort(),
    );
    expect(await pairsOf({ operation: "create_order" })).toEqual([]);
    expect(await pairsOf({ bases: ["amount_resource"] })).toEqual([]); // each capture created its own payment id
  });

  it("same amount, currency and resource under different keys; three clicks form one cluster", async () => {
    const t0 = new Date("2026-11-29T08:00:00.000Z").getTime();
    const at = (s: number) => new IdempotencyStore(db.prisma, { clock: () => new Date(t0 + s * 1000) });
    const begin = async (s: number, key: string, payload: unknown, extra: Record<string, unknown> = {}) => {
      const r = await at(s).begin({ scope: "tenant:dup", operation: "capture_payment", key, payload, amountMinor: 4999, currency: "EUR", ...extra });
      if (r.outcome !== "owner") throw new Error("setup");
      return r.record.id.toString();
    };
    const clicks = [await begin(0, "click-1", { cart: 1 }), await begin(30, "click-2", { cart: 1 }), await begin(90, "click-3", { cart: 1 })];
    // Different payloads (another payment method), same money for the same order.
    const a = await begin(1000, "ord-a", { pm: "a" }, { resourceId: "ord_same" });
    const b = await begin(1100, "ord-b", { pm: "b" }, { resourceId: "ord_same" });
    // The same, 20 minutes apart: outside the default window.
    const c = await begin(3000, "ord-c", { pm: "c" }, { resourceId: "ord_later" });
    const d = await begin(4200, "ord-d", { pm: "d" }, { resourceId: "ord_later" });
    // Same payload, another operation: not a duplicate.
    await at(5).begin({ scope: "tenant:dup", operation: "create_order", key: "click-1", payload: { cart: 1 } });

    const range = { from: new Date(t0 - 1000), to: new Date(t0 + 3600_000), scope: "tenant:dup" };
    const r = await findDuplicates(db.sql, range);
    expect(r.clusters.map((x) => x.records.map((y) => y.id.toString()))).toEqual([[a, b], clicks]);
    const [resource, three] = r.clusters;
    expect(resource.basis).toEqual(["amount_resource"]);
    expect(resource.payloadHash).toBeNull();
    expect(three.pairs.map((p) => [p.first.toString(), p.second.toString(), p.secondsApart])).toEqual([
      [clicks[0], clicks[1], 30],
      [clicks[0], clicks[2], 90],
      [clicks[1], clicks[2], 60],
    ]);
    expect(three.spanSeconds).toBe(90);
    const wide = await findDuplicates(db.sql, { ...range, windowSeconds: 30 * 60 });
    expect(wide.clusters.map((x) => x.records.map((y) => y.id.toString()))).toContainEqual([c, d]);
    const limited = await findDuplicates(db.sql, { ...range, limit: 1 });
    expect(limited).toMatchObject({ truncated: true });
    expect(limited.clusters).toHaveLength(1);
  });

  it("a record's page lists its whole cluster, as /duplicates groups it: clicks 8 minutes apart chain past the window", async () => {
    const t0 = new Date("2026-11-28T08:00:00.000Z").getTime();
    const ids: bigint[] = [];
    for (const [k, s] of [0, 480, 960].entries()) {
      const r = await new IdempotencyStore(db.prisma, { clock: () => new Date(t0 + s * 1000) }).begin({
        scope: "tenant:chain",
        operation: "capture_payment",
        key: `chain-${k}`,
        payload: { cart: 7 },
        amountMinor: 1999,
        currency: "EUR",
      });
      if (r.outcome !== "owner") throw new Error("setup");
      ids.push(r.record.id);
    }
    const [first] = await db.sql.query<RecordSummary>(`SELECT ${recordColumns("r")} FROM idempotency_records r WHERE id = ${db.dialect.param(1)}`, [ids[0]]);
    const dups = await duplicatesOfRecord(db.sql, first);
    expect(dups.map((d) => d.id)).toEqual([ids[1], ids[2]]);
    expect(dups[0]).toMatchObject({ basis: ["payload_hash"], secondsApart: 480 });
    expect(dups[0].via).toBeUndefined();
    expect(dups[1]).toMatchObject({ basis: ["payload_hash"], secondsApart: 960, via: ids[1] });

    // Every cluster of the duplicates screen, seen from each of its records' pages: the same records.
    const all = await findDuplicates(db.sql, { limit: 500 });
    expect(all.clusters.length).toBeGreaterThan(3);
    for (const c of all.clusters) {
      for (const member of c.records) {
        const others = (await duplicatesOfRecord(db.sql, member)).map((d) => d.id).sort();
        expect(others, `record ${member.id}`).toEqual(
          c.records
            .map((r) => r.id)
            .filter((id) => id !== member.id)
            .sort(),
        );
      }
    }
  });

  it("after bulk volume, equals a brute-force comparison over the raw table", async () => {
    const bulk = await bulkGenerate(db.sql, { records: 4000, seed: 5, days: 14, now });
    expect(bulk.doubleSubmits).toBeGreaterThan(0);
    const truth = await db.sql.query<{ a: bigint; b: bigint }>(
      `SELECT DISTINCT a.id AS a, b.id AS b FROM idempotency_records a JOIN idempotency_records b
          ON (b.payload_hash = a.payload_hash OR (b.resource_id = a.resource_id AND b.amount_minor = a.amount_minor AND b.currency = a.currency))
       WHERE a.scope = b.scope AND a.operation = b.operation AND a.idempotency_key <> b.idempotency_key
         AND (b.created_at > a.created_at OR (b.created_at = a.created_at AND b.id > a.id))
         AND ${byDialect(db, { postgres: "b.created_at - a.created_at <= interval '10 minutes'", mysql: "b.created_at <= a.created_at + INTERVAL 10 MINUTE" })}
         AND a.created_at >= ${db.dialect.param(1)} AND a.created_at < ${db.dialect.param(2)}`,
      [from, now],
    );
    const r = await findDuplicates(db.sql, { from, to: now, limit: 500 });
    expect(r.truncated).toBe(false);
    const found = r.clusters.flatMap((c) => c.pairs.map((p) => `${p.first}:${p.second}`)).sort();
    expect(found).toEqual(truth.map((t) => `${t.a}:${t.b}`).sort());
    // The bulk generator's second submissions are among them.
    const bulkPairs = r.clusters.filter((c) => c.records.every((x) => x.idempotencyKey.startsWith("bulk-5-")));
    expect(bulkPairs.length).toBe(bulk.doubleSubmits);
  });
});

describe("the keys' whole lifetime (no range given)", () => {
  it("searches every record still held, from the oldest one, and finds every planted double charge however old", async () => {
    const [{ oldest }] = await db.sql.query<{ oldest: Date }>(`SELECT min(created_at) AS oldest FROM idempotency_records`);
    const r = await findDuplicates(db.sql, {});
    expect(r.lifetime).toBe(true);
    expect(r.from.getTime()).toBe(new Date(oldest).getTime());
    expect(r.to.getTime()).toBeGreaterThan(now.getTime());
    // Every planted pair, the oldest (days back) included — a week's range would miss some.
    const found = r.clusters.map((c) => c.records.map((x) => x.id.toString()).join("+"));
    for (const pair of planted()) expect(found).toContain(pair);
    const weekAgo = now.getTime() - 7 * 86_400_000;
    expect(
      demo.doubleSubmits.some((p) => Date.parse(p.createdAt[0]) < weekAgo),
      "the demo plants pairs older than a week",
    ).toBe(true);
    // Scoped: from that scope's oldest record.
    const scope = demo.doubleSubmits[0].scope;
    const [{ oldestInScope }] = await db.sql.query<{ oldestInScope: Date }>(
      `SELECT min(created_at) AS "oldestInScope" FROM idempotency_records WHERE scope = ${db.dialect.param(1)}`,
      [scope],
    );
    const scoped = await findDuplicates(db.sql, { scope });
    expect(scoped.from.getTime()).toBe(new Date(oldestInScope).getTime());
    expect(scoped.clusters.every((c) => c.scope === scope)).toBe(true);
    expect(scoped.clusters.length).toBe(r.clusters.filter((c) => c.scope === scope).length);
  });

  it("the API answers lifetime: true without from/to, and takes a range of any length for one scope", async () => {
    const route = await import("@/app/api/v1/duplicates/route");
    const { token } = await tokenFor(db, ["support"]);
    const all = await json(await call(route.GET, `/api/v1/duplicates`, token));
    expect(all.lifetime).toBe(true);
    expect(all.clusters.length).toBeGreaterThanOrEqual(planted().length);
    const ranged = await call(
      route.GET,
      `/api/v1/duplicates?from=2026-01-01T00:00:00Z&to=2026-12-01T00:00:00Z&scope=${encodeURIComponent(demo.doubleSubmits[0].scope)}`,
      token,
    );
    expect(ranged.status).toBe(200);
    expect((await json(ranged)).lifetime).toBe(false);
  });
});

describe("GET /api/v1/duplicates", () => {
  it("answers clusters as JSON, and refuses bad parameters with 400 problem+json", async () => {
    const route = await import("@/app/api/v1/duplicates/route");
    const { token } = await tokenFor(db, ["support"]);
    const p = demo.doubleSubmits[0];
    const res = await call(
      route.GET,
      `/api/v1/duplicates?from=${p.createdAt[0]}&to=${now.toISOString()}&window=10m&scope=${encodeURIComponent(p.scope)}`,
      token,
    );
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body.windowSeconds).toBe(600);
    expect(body.clusters[body.clusters.length - 1].records.map((r: { id: string }) => r.id)).toEqual(p.recordIds);
    expect(typeof body.clusters[0].amountMinor).toBe("string");

    for (const qs of [
      "window=30s",
      "window=25h",
      "window=ten",
      "basis=email",
      "from=2026-11-30T00:00:00Z&to=2026-11-29T00:00:00Z",
      "from=2026-01-01T00:00:00Z&to=2026-03-01T00:00:00Z",
      "from=yesterday",
      "limit=0",
      "limit=501",
      "scope=has space",
      "extra=1",
    ]) {
      const bad = await call(route.GET, `/api/v1/duplicates?${qs}`, token);
      expect(bad.status, qs).toBe(400);
      expect(bad.headers.get("content-type")).toBe("application/problem+json");
    }
    expect((await call(route.POST, "/api/v1/duplicates", token, { method: "POST" })).status).toBe(405);
  });
});
