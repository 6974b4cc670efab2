import type { Redis } from "ioredis";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { takeCensus } from "@/lib/redis/census";
import { closeRedisClients } from "@/lib/redis/client";
import { comparable, RELEASE_SCRIPT } from "@/lib/redis/release";
import { maxRemainingWhenWedged } from "@/lib/redis/keys";
import { requireRedisInCi, testRedis, testStore } from "./helpers/redis";

/**
 * The census against a real Redis (database 8, flushed before each test): counts by
 * state and status equal what Redis holds, unrelated keys — inside and outside the
 * pattern — are never counted as records, wedged keys are found oldest first with how
 * long they keep refusing retries, SCAN runs with a bounded COUNT and KEYS never runs.
 * And the release's Lua script on its own: compare and delete, nothing else.
 */

const DB = 8;
const redis = await testRedis(DB);
requireRedisInCi(redis !== null);

afterAll(async () => {
  await redis?.flushdb();
  redis?.disconnect();
  await closeRedisClients();
});

async function commandCalls(r: Redis, name: string): Promise<number> {
  const info = await r.info("commandstats");
  const m = new RegExp(`^cmdstat_${name}:calls=(\\d+)`, "m").exec(info);
  return m ? Number(m[1]) : 0;
}

/** Writes keys through one pipeline: [key, value | hash, ttl seconds | null]. */
async function put(r: Redis, entries: [string, string | Record<string, string>, number | null][]) {
  const p = r.pipeline();
  for (const [k, v, ttl] of entries) {
    if (typeof v === "string") {
      if (ttl === null) p.set(k, v);
      else p.set(k, v, "EX", ttl);
    } else {
      p.hset(k, v);
      if (ttl !== null) p.expire(k, ttl);
    }
  }
  await p.exec();
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

describe.skipIf(!redis)("census of the seed's format", () => {
  beforeEach(async () => {
    await redis!.flushdb();
  });

  it("counts by state and stored status equal what Redis holds; unrelated keys are ignored; wedged oldest first; SCAN with bounded COUNT, never KEYS", async () => {
    const r = redis!;
    const day = 86400;
    await put(r, [
      ...range(300).map((i): [string, string, number] => [`idempotency:ok-${i}`, JSON.stringify({ status: 201, body: { id: `ch_${i}` } }), day - i]),
      ...range(20).map((i): [string, string, number] => [`idempotency:declined-${i}`, JSON.stringify({ status: 402, body: { error: "card_declined" } }), day]),
      ...range(7).map((i): [string, string, number] => [`idempotency:5xx-${i}`, JSON.stringify({ status: 503, body: "upstream down" }), day]),
      ...range(30).map((i): [string, string, number] => [`idempotency:fresh-${i}`, "processing", day - 10]),
      // Set an hour (and two) ago: the remaining TTL says so.
      ...range(12).map((i): [string, string, number] => [`idempotency:old-${i}`, "processing", day - 3600 - i * 300]),
      ...range(3).map((i): [string, string, null] => [`idempotency:forever-${i}`, "processing", null]),
      // Unrelated keys in the same database: sessions, rate limiters …
      ...range(50).map((i): [string, Record<string, string>, number] => [`session:${i}`, { user: String(i), csrf: "x" }, 1800]),
      ...range(50).map((i): [string, string, number] => [`ratelimit:ip:10.0.0.${i}`, String(i), 60]),
      // … and under the pattern itself, but not records of the format.
      ["idempotency:stats", { hits: "10" }, null],
      ["idempotency:lock:ok-1", "1", 10],
      ["idempotency:config", '{"version":2}', null],
    ]);
    const store = testStore("census-seed", DB, { wedgedAfter: "5m" });
    const keysBefore = await commandCalls(r, "keys");
    const scansBefore = await commandCalls(r, "scan");

    const c = await takeCensus(r, store, { scanCount: 50 });

    expect(c.records).toEqual({ processing: 45, completed: 327 });
    expect(c.unrecognised).toBe(3);
    expect(c.scanned).toBe(375);
    expect(c.byStatus).toEqual([
      { status: "201", count: 300 },
      { status: "402", count: 20 },
      { status: "503", count: 7 },
    ]);
    expect(c.cached5xx).toBe(7);
    expect(c.wedged.count).toBe(15);
    expect(c.wedged.oldest.map((w) => w.key)).toEqual([
      "idempotency:forever-0",
      "idempotency:forever-1",
      "idempotency:forever-2",
      ...range(12).map((i) => `idempotency:old-${11 - i}`),
    ]);
    expect(c.wedged.oldest[0]).toMatchObject({ ageSeconds: null, ttlSeconds: null, refusingForSeconds: null, stateValue: "processing" });
    const oldest = c.wedged.oldest[3]; // old-11: set 3600 + 3300 s ago
    expect(oldest.ageSeconds).toBeGreaterThanOrEqual(6900);
    expect(oldest.ageSeconds).toBeLessThanOrEqual(6902);
    expect(oldest.refusingForSeconds).toBe(oldest.ttlSeconds);
    expect(oldest.ttlSeconds).toBeGreaterThan(86400 - 6902);
    expect(c.ttl.noExpiry).toBe(3);
    expect(c.ttl.histogram.reduce((s, b) => s + b.count, 0)).toBe(372 - 3);
    expect(c.flags.map((f) => f.kind).sort()).toEqual(["cached_5xx", "no_fingerprint"]);
    expect(c.flags.find((f) => f.kind === "no_fingerprint")!.message).toMatch(/conflicts are undetectable.*SHA-256/);
    expect(Date.parse(c.takenAt)).toBeGreaterThanOrEqual(Date.parse(c.startedAt));

    expect(await commandCalls(r, "keys")).toBe(keysBefore);
    // 475 keys with COUNT 50: many bounded round trips, not one big one.
    expect((await commandCalls(r, "scan")) - scansBefore).toBeGreaterThanOrEqual(9);
  });

  it("TTL histogram, keys expiring soonest, and a TTL above the configured one flagged", async () => {
    const r = redis!;
    const ttls = [30, 300, 1800, 7200, 43200, 86400, 86400];
    await put(
      r,
      ttls.map((t, i): [string, string, number] => [`idempotency:t${i}`, JSON.stringify({ status: 200, body: "ok" }), t]),
    );
    await put(r, [["idempotency:long", JSON.stringify({ status: 200, body: "ok" }), 3 * 86400]]);
    // PTTL counts milliseconds: read in the same millisecond as the SET, EX 86400 still has all of 24 h.
    await new Promise((resolve) => setTimeout(resolve, 5));
    const c = await takeCensus(r, testStore("census-ttl", DB));
    expect(c.ttl.histogram.map((b) => [b.label, b.count])).toEqual([
      ["< 1 min", 1],
      ["1–10 min", 1],
      ["10–60 min", 1],
      ["1–6 h", 1],
      ["6–24 h", 3], // a key set with EX 86400 has a little less than 24 h left
      ["≥ 24 h", 1],
    ]);
    expect(c.ttl.expiringWithin1h).toBe(3);
    expect(c.ttl.expiringWithin24h).toBe(5 + 2); // 86400 s remaining counts as within 24 h
    expect(c.expiringSoon.slice(0, 3).map((e) => e.key)).toEqual(["idempotency:t0", "idempotency:t1", "idempotency:t2"]);
    expect(c.ttl.aboveConfiguredTtl).toBe(1);
    expect(c.flags.find((f) => f.kind === "ttl_mismatch")!.message).toMatch(/more time to live than the configured 86400 s/);
  });
});

describe.skipIf(!redis)("census of library formats", () => {
  beforeEach(async () => {
    await redis!.flushdb();
  });

  it("powertools: an ended in-progress lease is not wedged (the library takes it over); lock keys are not records; a stored validation hash means no fingerprint flag", async () => {
    const r = redis!;
    const now = Date.now();
    const exp = Math.floor(now / 1000) + 3600;
    const inProgress = (lease: number) => JSON.stringify({ status: "INPROGRESS", expiration: exp, in_progress_expiration: lease, validation: "h" });
    await put(r, [
      ["fn.handler#a", inProgress(now + 600_000), 3600 - 1200], // 20 min old, lease 10 more minutes: wedged
      ["fn.handler#b", inProgress(now - 1000), 3600 - 1200], // lease ended: the next request takes it over
      ["fn.handler#c", inProgress(now + 60_000), 3600 - 30], // 30 s old: not wedged yet
      ["fn.handler#d", JSON.stringify({ status: "COMPLETED", expiration: exp, data: JSON.stringify({ statusCode: 200, body: "{}" }) }), 3600],
      ["fn.handler#a:lock", "True", 10],
      ["fn.handler#b:lock", "true", 10],
    ]);
    const c = await takeCensus(r, testStore("census-pt", DB, { format: "powertools" }));
    expect(c.records).toEqual({ processing: 3, completed: 1 });
    expect(c.unrecognised).toBe(2);
    expect(c.leaseExpired).toBe(1);
    expect(c.wedged.count).toBe(1);
    expect(c.wedged.oldest[0].key).toBe("fn.handler#a");
    expect(c.wedged.oldest[0].refusingForSeconds).toBeGreaterThan(590);
    expect(c.wedged.oldest[0].refusingForSeconds).toBeLessThanOrEqual(600);
    expect(c.byStatus).toEqual([{ status: "200", count: 1 }]);
    expect(c.fingerprints.stored).toBe(true);
    expect(c.flags.map((f) => f.kind)).toEqual([]);
  });

  it("powertools-java hashes; strings under the same pattern are not its records", async () => {
    const r = redis!;
    const h = (k: string, status: string): [string, Record<string, string>, number] => [
      k,
      { [`${k}:status`]: status, [`${k}:expiration`]: "1767225600" },
      3600 - 900,
    ];
    await put(r, [h("{idempotency:id:fn#1}", "INPROGRESS"), h("{idempotency:id:fn#2}", "COMPLETED"), ["{idempotency:id:fn#3}", "INPROGRESS", 3600]]);
    const c = await takeCensus(r, testStore("census-java", DB, { format: "powertools-java" }));
    expect(c.records).toEqual({ processing: 1, completed: 1 });
    expect(c.unrecognised).toBe(1);
    expect(c.wedged.oldest.map((w) => w.key)).toEqual(["{idempotency:id:fn#1}"]);
  });
});

describe.skipIf(!redis)("the release script: compare and delete", () => {
  beforeEach(async () => {
    await redis!.flushdb();
  });
  const store = () => testStore("script", DB, { wedgedAfter: "5m" });
  const run = (key: string, expected: string, encoding = "string") =>
    redis!.eval(RELEASE_SCRIPT, 1, key, encoding, expected, String(maxRemainingWhenWedged(store())));

  it("deletes only the exact value it was given, only when old enough; reports why not", async () => {
    const r = redis!;
    await r.set("idempotency:w", "processing", "EX", 86400 - 600);
    await r.set("idempotency:young", "processing", "EX", 86400 - 10);
    await r.set("idempotency:done", '{"status":201,"body":{}}', "EX", 86400 - 600);
    await r.set("idempotency:forever", "processing");

    expect(await run("idempotency:done", "processing")).toEqual([0, "changed"]);
    expect(await r.get("idempotency:done")).toBe('{"status":201,"body":{}}');
    expect(await run("idempotency:young", "processing")).toEqual([0, "young"]);
    expect(await r.exists("idempotency:young")).toBe(1);
    expect(await run("idempotency:gone", "processing")).toEqual([0, "gone"]);
    const [ok, pttl] = (await run("idempotency:w", "processing")) as [number, number];
    expect(ok).toBe(1);
    expect(pttl).toBeGreaterThan((86400 - 601) * 1000);
    expect(await r.exists("idempotency:w")).toBe(0);
    expect(await run("idempotency:forever", "processing")).toEqual([1, -1]);
    // A hash is compared field by field (sorted), whatever the order Redis returns them in.
    await r.hset("h", { z: "1", é: "2", a: "processing" });
    await r.expire("h", 60);
    expect(await run("h", comparable({ a: "processing", z: "1", é: "2" }), "hash")).toEqual([1, expect.any(Number)]);
    await r.hset("h2", { a: "processing", b: "x" });
    expect(await run("h2", comparable({ a: "processing", b: "y" }), "hash")).toEqual([0, "changed"]);
    expect(await run("h2", "processing", "string")).toEqual([0, "changed"]);
  });
});
