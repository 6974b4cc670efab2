import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { provideDatabase } from "@/lib/db/client";
import { closeRedisClients } from "@/lib/redis/client";
import { provideRedisConfig } from "@/lib/redis/config";
import { createTestDatabase, type TestDatabase } from "./helpers/db";
import { call, json, tokenFor } from "./helpers/records-api";
import { requireRedisInCi, testRedis, testStore } from "./helpers/redis";
import { paramList } from "@/lib/db/params";

/**
 * The Redis API around the issue's proof (redis-php.test.ts): key lookup with the
 * stored response withheld or masked by permission, prefix lookup, the store list,
 * bad input, a store that does not answer (503, nothing changed), a key not wedged yet,
 * and the bulk release with its typed confirmation. Redis database 10.
 */

const DB = 10;
const redis = await testRedis(DB);
requireRedisInCi(redis !== null);

let db: TestDatabase;
let viewer: { token: string };
let support: { token: string };
let operator: { token: string };
const STORE = "api";
const DOWN = "down";

const r = {
  stores: () => import("@/app/api/v1/redis/stores/route"),
  census: () => import("@/app/api/v1/redis/stores/[store]/census/route"),
  keys: () => import("@/app/api/v1/redis/stores/[store]/keys/route"),
  release: () => import("@/app/api/v1/redis/stores/[store]/release/route"),
  bulk: () => import("@/app/api/v1/redis/stores/[store]/release-bulk/route"),
};

const get = async (mod: Promise<{ GET: Parameters<typeof call>[0] }>, url: string, token: string, store = STORE) =>
  call((await mod).GET, url, token, {}, { store });
const post = async (mod: Promise<{ POST: Parameters<typeof call>[0] }>, url: string, token: string, body: unknown, store = STORE) =>
  call(
    (await mod).POST,
    url,
    token,
    { method: "POST", headers: { "content-type": "application/json", "idempotency-key": randomUUID() }, body: JSON.stringify(body) },
    { store },
  );
const lookup = (qs: string, token = support.token) => get(r.keys(), `/api/v1/redis/stores/${STORE}/keys?${qs}`, token);

describe.skipIf(!redis)("Redis key store API", () => {
  beforeAll(async () => {
    db = await createTestDatabase();
    provideDatabase(db);
    provideRedisConfig({
      stores: [testStore(STORE, DB, { wedgedAfter: "5m" }), { ...testStore(DOWN, DB), url: "redis://127.0.0.1:1/10" }],
      censusIntervalSeconds: 0,
      scanCount: 100,
      scanPauseMs: 0,
    });
    viewer = await tokenFor(db, ["viewer"]);
    support = await tokenFor(db, ["support"]);
    operator = await tokenFor(db, ["operator"]);
  });
  beforeEach(async () => {
    await redis!.flushdb();
  });
  afterAll(async () => {
    await redis?.flushdb();
    redis?.disconnect();
    await closeRedisClients();
    provideRedisConfig(undefined);
    await db?.drop();
  });

  it("key lookup: TTL, age and the stored response — withheld without records.read_body, masked with it", async () => {
    const body = { id: "ch_1", card: "4242 4242 4242 4242", email: "jane@example.com", password: "hunter2" };
    await redis!.set("idempotency:k1", JSON.stringify({ status: 201, body }), "EX", 86400 - 120);
    const res = await lookup("key=idempotency%3Ak1");
    expect(res.status).toBe(200);
    const [k] = (await json(res)).keys;
    expect(k).toMatchObject({ key: "idempotency:k1", state: "completed", httpStatus: 201, wedged: false, fingerprint: null, cached5xx: false });
    expect(k.ttlSeconds).toBeGreaterThan(86400 - 125);
    expect(k.ageSeconds).toBeGreaterThanOrEqual(120);
    expect(k.ageSeconds).toBeLessThan(125);
    expect(k.response.access).toBe("masked");
    expect(k.response.body).not.toContain("4242 4242 4242 4242");
    expect(k.response.body).toContain("4242"); // the last four stay
    expect(k.response.body).not.toContain("jane@example.com");
    expect(k.response.body).not.toContain("hunter2");
    expect(k.response.masked.map((m: { rule: string }) => m.rule).sort()).toEqual(["card", "email", "key:password"]);

    const asViewer = (await json(await lookup("key=idempotency%3Ak1", viewer.token))).keys[0];
    expect(asViewer.response).toEqual({ access: "none", code: 201, headers: null, body: null, masked: [] });
  });

  it("exact lookups outside the pattern or of missing keys are 404; a key under the pattern that is not a record shows as unrecognised, without its value", async () => {
    await redis!.set("session:1", '{"status":200,"body":"looks like a record"}');
    await redis!.hset("idempotency:stats", { n: "1" });
    expect((await lookup("key=session%3A1")).status).toBe(404);
    expect((await lookup("key=idempotency%3Anope")).status).toBe(404);
    const [k] = (await json(await lookup("key=idempotency%3Astats"))).keys;
    expect(k).toMatchObject({ state: "unrecognised", stateValue: null, response: null });
  });

  it("prefix lookup: keys under the pattern starting with the prefix (glob characters taken literally), records only, limited", async () => {
    const p = redis!.pipeline();
    for (let i = 0; i < 30; i++) p.set(`idempotency:ord-1-${String(i).padStart(2, "0")}`, "processing", "EX", 86400);
    p.set("idempotency:ord-10", JSON.stringify({ status: 200, body: "x" }), "EX", 86400);
    p.set("idempotency:ord*x", "processing", "EX", 86400);
    p.set("idempotency:ord-1-zz", "not a record");
    await p.exec();
    const all = await json(await lookup("prefix=idempotency%3Aord-1-&limit=100"));
    expect(all.keys).toHaveLength(30);
    expect(all).toMatchObject({ mode: "prefix", unrecognised: 1, complete: true });
    expect(all.keys[0].key).toBe("idempotency:ord-1-00");
    const some = await json(await lookup("prefix=idempotency%3Aord-1-&limit=5"));
    expect(some.keys).toHaveLength(5);
    const star = await json(await lookup("prefix=idempotency%3Aord*"));
    expect(star.keys.map((k: { key: string }) => k.key)).toEqual(["idempotency:ord*x"]);
  });

  it("bad input is a 400 problem; an unknown store a 404; nothing changes", async () => {
    await redis!.set("idempotency:w", "processing", "EX", 86400 - 3600);
    const cases: [Promise<Response>, number, RegExp][] = [
      [lookup("key=a&prefix=b"), 400, /exactly one/],
      [lookup(""), 400, /exactly one/],
      [lookup(`key=${"x".repeat(1025)}`), 400, /at most 1024/],
      [lookup("key=a&limit=0"), 400, /limit/],
      [get(r.census(), `/api/v1/redis/stores/${STORE}/census?refresh=maybe`, viewer.token), 400, /must be "true" or "false"/],
      [get(r.census(), `/api/v1/redis/stores/nope/census`, viewer.token, "nope"), 404, /no Redis key store "nope".*configured: api, down/],
      [get(r.census(), `/api/v1/redis/stores/Bad!/census`, viewer.token, "Bad!"), 400, /store name/],
      [post(r.release(), `/api/v1/redis/stores/${STORE}/release`, operator.token, { key: "idempotency:w" }), 400, /reason/],
      [post(r.release(), `/api/v1/redis/stores/${STORE}/release`, operator.token, { key: "", reason: "crashed worker" }), 400, /key/],
      [post(r.release(), `/api/v1/redis/stores/${STORE}/release`, operator.token, { key: "idempotency:w", reason: "crashed", extra: 1 }), 400, /extra/],
      [post(r.bulk(), `/api/v1/redis/stores/${STORE}/release-bulk`, operator.token, { reason: "crashed workers" }), 400, /exactly one/],
      [
        post(r.bulk(), `/api/v1/redis/stores/${STORE}/release-bulk`, operator.token, { keys: Array(101).fill("idempotency:w"), reason: "crashed workers" }),
        400,
        /at most 100/,
      ],
    ];
    for (const [res, status, detail] of cases) {
      const answer = await res;
      const p = await json(answer);
      expect(answer.status, JSON.stringify(p)).toBe(status);
      expect(answer.headers.get("content-type")).toContain("application/problem+json");
      expect(JSON.stringify(p).replace(/\\"/g, '"')).toMatch(detail);
    }
    expect(await redis!.get("idempotency:w")).toBe("processing");
  });

  it("a processing key younger than wedgedAfter is not released (409: a worker may still finish it)", async () => {
    await redis!.set("idempotency:young", "processing", "EX", 86400 - 30);
    const res = await post(r.release(), `/api/v1/redis/stores/${STORE}/release`, operator.token, { key: "idempotency:young", reason: "impatient" });
    expect(res.status).toBe(409);
    expect((await json(res)).detail).toMatch(/processing for 3\d s, less than the wedged threshold 5m/);
    expect(await redis!.get("idempotency:young")).toBe("processing");
  });

  it("a store that does not answer: 503 problems naming it, the store list says so, nothing changes", async () => {
    const census = await get(r.census(), `/api/v1/redis/stores/${DOWN}/census`, viewer.token, DOWN);
    expect(census.status).toBe(503);
    expect((await json(census)).detail).toMatch(/Redis store "down" did not answer/);
    const rel = await post(r.release(), `/api/v1/redis/stores/${DOWN}/release`, operator.token, { key: "idempotency:x", reason: "crashed worker" }, DOWN);
    expect(rel.status).toBe(503);
    const list = await json(await get(r.stores(), "/api/v1/redis/stores", viewer.token));
    const down = list.stores.find((s: { store: { name: string } }) => s.store.name === DOWN);
    expect(down.census).toBeNull();
    expect(down.error.message).toBeTruthy();
  });

  it("the store list: each store with its latest census counts (no key names), pattern, TTL, format", async () => {
    await redis!.set("idempotency:a", "processing", "EX", 86400 - 3600);
    await redis!.set("idempotency:b", JSON.stringify({ status: 500, body: "boom" }), "EX", 86400);
    await get(r.census(), `/api/v1/redis/stores/${STORE}/census?refresh=true`, viewer.token);
    const list = await json(await get(r.stores(), "/api/v1/redis/stores", viewer.token));
    const api = list.stores.find((s: { store: { name: string } }) => s.store.name === STORE);
    expect(api.store).toMatchObject({ name: STORE, pattern: "idempotency:*", ttlSeconds: 86400, format: "seed", wedgedAfter: "5m" });
    expect(api.census).toMatchObject({ records: { processing: 1, completed: 1 }, wedged: { count: 1 }, cached5xx: 1 });
    expect(api.census.wedged.oldest).toBeUndefined();
    expect(api.census.expiringSoon).toBeUndefined();
  });

  it("bulk release of the wedged keys: dry run, typed confirmation, one audited release per key", async () => {
    const p = redis!.pipeline();
    for (let i = 0; i < 4; i++) p.set(`idempotency:crashed-${i}`, "processing", "EX", 86400 - 3600 - i);
    p.set("idempotency:fresh", "processing", "EX", 86400);
    p.set("idempotency:done", JSON.stringify({ status: 201, body: "ok" }), "EX", 86400 - 3600);
    await p.exec();
    await get(r.census(), `/api/v1/redis/stores/${STORE}/census?refresh=true`, viewer.token);
    const url = `/api/v1/redis/stores/${STORE}/release-bulk`;

    const dry = await json(await post(r.bulk(), url, operator.token, { wedged: true, dryRun: true, reason: "worker fleet crashed at 03:00" }));
    expect(dry).toMatchObject({ dryRun: true, count: 4, confirmation: "release 4 keys" });
    expect(dry.keys).toEqual(["idempotency:crashed-3", "idempotency:crashed-2", "idempotency:crashed-1", "idempotency:crashed-0"]);
    const unconfirmed = await post(r.bulk(), url, operator.token, { wedged: true, reason: "worker fleet crashed at 03:00" });
    expect(unconfirmed.status).toBe(400);
    expect(await json(unconfirmed)).toMatchObject({ expectedConfirmation: "release 4 keys", count: 4 });
    const wrong = await post(r.bulk(), url, operator.token, { wedged: true, confirm: "release 3 keys", reason: "worker fleet crashed at 03:00" });
    expect(wrong.status).toBe(400);
    expect(await redis!.exists("idempotency:crashed-0")).toBe(1);

    const done = await json(await post(r.bulk(), url, operator.token, { wedged: true, confirm: "release 4 keys", reason: "worker fleet crashed at 03:00" }));
    expect(done).toMatchObject({ dryRun: false, count: 4, released: 4, refused: 0 });
    expect(await redis!.exists("idempotency:crashed-0", "idempotency:crashed-1", "idempotency:crashed-2", "idempotency:crashed-3")).toBe(0);

    const mixed = await json(
      await post(r.bulk(), url, operator.token, { keys: ["idempotency:done", "idempotency:fresh"], confirm: "release 2 keys", reason: "cleanup" }),
    );
    expect(mixed).toMatchObject({ released: 0, refused: 2 });
    expect(mixed.outcomes.map((o: { error: { status: number } }) => o.error.status)).toEqual([409, 409]);
    expect(await redis!.exists("idempotency:done", "idempotency:fresh")).toBe(2);

    const released = [
      "idempotency:crashed-0",
      "idempotency:crashed-1",
      "idempotency:crashed-2",
      "idempotency:crashed-3",
      "idempotency:done",
      "idempotency:fresh",
    ];
    const q = paramList(db.dialect);
    const audit = await db.sql.query<{ outcome: string; n: bigint }>(
      `SELECT outcome, count(*) AS n FROM audit_log WHERE target_table = ${q.add(`redis:${STORE}`)} AND action = 'redis.release' AND target_id IN (${q.list(released)}) GROUP BY outcome ORDER BY outcome`,
      q.values,
    );
    expect(audit.map((a) => [a.outcome, Number(a.n)])).toEqual([
      ["done", 4],
      ["refused", 2],
    ]);
    const bulkRefusals = await db.sql.query<{ n: bigint }>(
      `SELECT count(*) AS n FROM audit_log WHERE action = 'redis.release_bulk' AND outcome = 'refused' AND reason = 'worker fleet crashed at 03:00'`,
    );
    expect(Number(bulkRefusals[0].n)).toBe(2);
  });
});
