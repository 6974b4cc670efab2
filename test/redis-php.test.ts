import { spawn, spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyAuditChain } from "@/lib/audit";
import { provideDatabase } from "@/lib/db/client";
import { closeRedisClients } from "@/lib/redis/client";
import { provideRedisConfig, type RedisConfig } from "@/lib/redis/config";
import { createTestDatabase, type TestDatabase } from "./helpers/db";
import { call, json, tokenFor } from "./helpers/records-api";
import { requireRedisInCi, testRedis, testStore } from "./helpers/redis";
import { bound, queryBound } from "./helpers/sql";

/**
 * The proof, end to end: the seed's PHP handler (examples/php/redis-idempotency.php)
 * runs as a service with forked workers whose request processes complete, decline, throw,
 * cache a 5xx — and crash after their SET NX. Then, through the console's API: its counts
 * by state and its wedged count equal what Redis holds, unrelated keys are ignored,
 * releasing a wedged key deletes it (and the client's retry runs), releasing a completed
 * key is refused with a 409 and leaves it in place. Plus releases racing a worker that
 * completes the same keys. Redis database 9; the console's database as usual.
 */

const DB = 9;
const SERVICE = path.resolve(import.meta.dirname, "../examples/php/redis-service.php");
const redis = await testRedis(DB);
requireRedisInCi(redis !== null);
const php = spawnSync("php", ["-m"], { encoding: "utf8" });
const hasPhpRedis = php.status === 0 && /^redis$/m.test(php.stdout) && /^pcntl$/m.test(php.stdout);
describe.runIf(process.env.CI)("CI prerequisites (PHP)", () => {
  it("php with the redis and pcntl extensions is installed, so the PHP service really runs", () => {
    expect(hasPhpRedis, "php -m lists no redis or pcntl").toBe(true);
  });
});

const STORE = "php";
let db: TestDatabase;
let operator: { token: string; email: string };
let viewer: { token: string };
const routes = {
  census: () => import("@/app/api/v1/redis/stores/[store]/census/route"),
  wedged: () => import("@/app/api/v1/redis/stores/[store]/wedged/route"),
  release: () => import("@/app/api/v1/redis/stores/[store]/release/route"),
  metrics: () => import("@/app/api/metrics/route"),
};

interface ServiceLine {
  key: string;
  action: string;
  outcome: "owner" | "replay" | "in_progress" | "threw" | "crashed";
  http?: number;
  signal?: number;
}

/** Runs the PHP service on the jobs; one line per request. */
function runService(jobs: { key: string; action: string }[], workers = 4): Promise<ServiceLine[]> {
  const url = new URL(process.env.REDIS_TEST_URL || "redis://127.0.0.1:6379");
  return new Promise((resolve, reject) => {
    const child = spawn("php", [SERVICE, "--host", url.hostname, "--port", url.port || "6379", "--db", String(DB), "--workers", String(workers)], {
      stdio: ["pipe", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.setEncoding("utf8").on("data", (c: string) => (out += c));
    child.stderr.setEncoding("utf8").on("data", (c: string) => (err += c));
    child.on("error", reject);
    child.on("close", (code) =>
      code === 0
        ? resolve(
            out
              .split("\n")
              .filter(Boolean)
              .map((l) => JSON.parse(l)),
          )
        : reject(new Error(`service exited ${code}: ${err}${out}`)),
    );
    child.stdin.end(JSON.stringify(jobs));
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function release(key: string, token = operator.token, idempotencyKey = randomUUID()) {
  const r = await routes.release();
  return call(
    r.POST,
    `/api/v1/redis/stores/${STORE}/release`,
    token,
    {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": idempotencyKey },
      body: JSON.stringify({ key, reason: "worker crashed after SET NX; client retries get 409" }),
    },
    { store: STORE },
  );
}

async function census(refresh = true) {
  const r = await routes.census();
  const res = await call(r.GET, `/api/v1/redis/stores/${STORE}/census${refresh ? "?refresh=true" : ""}`, viewer.token, {}, { store: STORE });
  expect(res.status).toBe(200);
  return (await json(res)).census;
}

/** What Redis holds, read independently of lib/redis (KEYS is fine in a test). */
async function truth() {
  const keys = (await redis!.keys("idempotency:*")).sort();
  const t = { processing: [] as string[], completed: new Map<string, number>(), other: [] as string[] };
  for (const k of keys) {
    const type = await redis!.type(k);
    const v = type === "string" ? await redis!.get(k) : null;
    if (v === "processing") t.processing.push(k);
    else {
      let parsed: { status?: unknown } | null;
      try {
        parsed = v ? JSON.parse(v) : null;
      } catch {
        parsed = null;
      }
      if (parsed && typeof parsed.status === "number") t.completed.set(k, parsed.status);
      else t.other.push(k);
    }
  }
  return t;
}

const auditFor = (key: string) =>
  db.sql.query<{
    action: string;
    outcome: string;
    reason: string;
    before: Record<string, unknown> | null;
    after: Record<string, unknown> | null;
    detail: Record<string, unknown>;
  }>(
    ...bound(db.dialect, `SELECT action, outcome, reason, "before", "after", detail FROM audit_log WHERE target_table = $1 AND target_id = $2 ORDER BY id`, [
      `redis:${STORE}`,
      key,
    ]),
  );

describe.skipIf(!redis || !hasPhpRedis)("the seed's PHP service on Redis, seen and released through the console", () => {
  beforeAll(async () => {
    await redis!.flushdb();
    db = await createTestDatabase();
    provideDatabase(db);
    const config: RedisConfig = { stores: [testStore(STORE, DB, { wedgedAfter: "1s" })], censusIntervalSeconds: 0, scanCount: 100, scanPauseMs: 0 };
    provideRedisConfig(config);
    operator = await tokenFor(db, ["operator"]);
    viewer = await tokenFor(db, ["viewer"]);
  });
  afterAll(async () => {
    await redis?.flushdb();
    redis?.disconnect();
    await closeRedisClients();
    provideRedisConfig(undefined);
    await db?.drop();
  });

  const run = Date.now().toString(36);
  const keysOf = (kind: string, n: number) => Array.from({ length: n }, (_, i) => `${run}-${kind}-${i}`);
  const completes = keysOf("ok", 20);
  const declines = keysOf("declined", 5);
  const throws = keysOf("throws", 5);
  const crashes = keysOf("crash", 6);
  const fivexx = keysOf("5xx", 3);

  it("after completions, declines, throws, cached 5xx and crashed request processes, the console's counts by state and wedged count equal what Redis holds; unrelated keys are ignored", async () => {
    // Unrelated keys in the same database, inside and outside the pattern.
    const p = redis!.pipeline();
    for (let i = 0; i < 25; i++) p.hset(`session:${i}`, { user: String(i) }).set(`ratelimit:ip:10.1.0.${i}`, String(i), "EX", 60);
    p.hset("idempotency:stats", { served: "12" }).set("idempotency:lock:maintenance", "1").set("idempotency:schema", '{"version":3}');
    await p.exec();

    const jobs = [
      ...completes.map((key) => ({ key, action: "complete" })),
      ...declines.map((key) => ({ key, action: "decline" })),
      ...throws.map((key) => ({ key, action: "throw" })),
      ...crashes.map((key) => ({ key, action: "crash" })),
      ...fivexx.map((key) => ({ key, action: "upstream_5xx" })),
    ];
    const lines = await runService(jobs);
    expect(lines).toHaveLength(jobs.length);
    const outcome = (keys: string[]) => lines.filter((l) => keys.includes(l.key)).map((l) => l.outcome);
    expect(outcome(completes).every((o) => o === "owner")).toBe(true);
    expect(outcome(throws).every((o) => o === "threw")).toBe(true);
    expect(
      lines
        .filter((l) => l.outcome === "crashed")
        .map((l) => [l.key, l.signal])
        .sort(),
    ).toEqual(crashes.map((k) => [k, 9]).sort());

    // Retries: completed keys replay; a crashed key refuses every retry (409) — it is wedged.
    const retries = await runService(
      [
        { key: completes[0], action: "complete" },
        { key: crashes[0], action: "complete" },
        { key: throws[0], action: "complete" },
      ],
      1,
    );
    expect(retries.map((l) => [l.key, l.outcome, l.http])).toEqual([
      [completes[0], "replay", 201],
      [crashes[0], "in_progress", 409],
      [throws[0], "owner", 201], // DEL on throw: the operation runs again
    ]);
    await sleep(1100); // the crashed keys pass the store's wedgedAfter (1 s)

    const t = await truth();
    expect(t.processing).toHaveLength(crashes.length);
    const c = await census();
    expect(c.records).toEqual({ processing: t.processing.length, completed: t.completed.size });
    expect(c.wedged.count).toBe(t.processing.length);
    const byStatus: Record<string, number> = {};
    for (const s of t.completed.values()) byStatus[String(s)] = (byStatus[String(s)] ?? 0) + 1;
    expect(Object.fromEntries(c.byStatus.map((s: { status: string; count: number }) => [s.status, s.count]))).toEqual(byStatus);
    expect(byStatus).toEqual({ "201": completes.length + 1, "402": declines.length, "503": fivexx.length });
    expect(c.unrecognised).toBe(t.other.length);
    expect(t.other.sort()).toEqual(["idempotency:lock:maintenance", "idempotency:schema", "idempotency:stats"]);
    expect(c.scanned).toBe(t.processing.length + t.completed.size + t.other.length);
    expect(c.cached5xx).toBe(fivexx.length);
    expect(c.flags.map((f: { kind: string }) => f.kind).sort()).toEqual(["cached_5xx", "no_fingerprint"]);

    const w = await routes.wedged();
    const wedged = await json(await call(w.GET, `/api/v1/redis/stores/${STORE}/wedged`, viewer.token, {}, { store: STORE }));
    expect(wedged.wedged.oldest.map((k: { key: string }) => k.key).sort()).toEqual(t.processing);
    for (const k of wedged.wedged.oldest) {
      expect(k.ageSeconds).toBeGreaterThanOrEqual(1);
      expect(k.refusingForSeconds).toBeGreaterThan(86400 - 60);
    }

    // Prometheus reads the same census.
    const m = await routes.metrics();
    const text = await (await call(m.GET, "/api/metrics", viewer.token)).text();
    expect(text).toContain(`idempotency_redis_keys{store="${STORE}",state="processing"} ${t.processing.length}`);
    expect(text).toContain(`idempotency_redis_keys{store="${STORE}",state="completed"} ${t.completed.size}`);
    expect(text).toContain(`idempotency_redis_wedged_keys{store="${STORE}"} ${t.processing.length}`);
    expect(text).toContain(`idempotency_redis_keys_by_status{store="${STORE}",status="503"} ${fivexx.length}`);
    expect(text).toMatch(new RegExp(`idempotency_redis_scan_seconds\\{store="${STORE}"\\} \\d`));
  });

  it("releasing a wedged key through the API deletes it (audited) and the client's next retry runs; releasing a completed key is a 409 and leaves it in place", async () => {
    const wedgedKey = `idempotency:${crashes[1]}`;
    const res = await release(wedgedKey);
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body).toMatchObject({ store: STORE, key: wedgedKey, released: true, before: { state: "processing", stateValue: "processing" } });
    expect(await redis!.exists(wedgedKey)).toBe(0);
    const [entry] = await auditFor(wedgedKey);
    expect(entry).toMatchObject({
      action: "redis.release",
      outcome: "done",
      reason: "worker crashed after SET NX; client retries get 409",
      after: { exists: false },
    });
    expect(entry.before).toMatchObject({ state: "processing", value: "processing" });
    expect((await runService([{ key: crashes[1], action: "complete" }], 1))[0]).toMatchObject({ outcome: "owner", http: 201 });

    const completedKey = `idempotency:${completes[3]}`;
    const value = await redis!.get(completedKey);
    const ttl = await redis!.ttl(completedKey);
    const refused = await release(completedKey);
    expect(refused.status).toBe(409);
    expect(refused.headers.get("content-type")).toContain("application/problem+json");
    const problem = await json(refused);
    expect(problem.detail).toMatch(/holds a completed answer \(201\).*left in place/);
    expect(problem.current).toMatchObject({ exists: true, state: "completed", httpStatus: 201 });
    expect(await redis!.get(completedKey)).toBe(value);
    expect(Math.abs((await redis!.ttl(completedKey)) - ttl)).toBeLessThanOrEqual(1);
    expect((await auditFor(completedKey)).map((a) => [a.action, a.outcome])).toEqual([["redis.release", "refused"]]);

    // Unrelated keys are not records: refused, untouched.
    const notMine = await release("idempotency:schema");
    expect(notMine.status).toBe(409);
    expect((await json(notMine)).detail).toMatch(/not an idempotency record/);
    expect(await redis!.get("idempotency:schema")).toBe('{"version":3}');
    const outside = await release("session:1");
    expect(outside.status).toBe(404);
    expect(await redis!.exists("session:1")).toBe(1);

    const after = await census();
    expect(after.records.processing).toBe(crashes.length - 1);
    expect(after.wedged.count).toBe(crashes.length - 1);
    expect((await verifyAuditChain(db.prisma)).intact).toBe(true);
  });

  it("releases racing a worker that completes the same keys: each key is released while processing or refused once completed — a completed answer is never deleted", async () => {
    const keys = Array.from({ length: 300 }, (_, i) => `idempotency:${run}-race-${i}`);
    // Workers that crashed 10 minutes ago … and now a slow worker finishes them after all.
    const setup = redis!.pipeline();
    for (const k of keys) setup.set(k, "processing", "EX", 86400 - 600);
    await setup.exec();
    const answer = (k: string) => JSON.stringify({ status: 201, body: { id: `ch_${k.slice(-6)}` } });
    const { Redis } = await import("ioredis");
    const worker = new Redis(redis!.options);
    // How long one release takes here: the worker's completion lands anywhere inside it
    // (before the console reads the key, between its read and the script, after the script).
    const t0 = performance.now();
    await release(`idempotency:${run}-race-missing`);
    const span = Math.max(2, performance.now() - t0);
    const results: { key: string; status: number; body: Record<string, any>; completedAt: number }[] = [];
    let next = 0;
    const lane = async () => {
      while (next < keys.length) {
        const k = keys[next++];
        let completedAt = 0;
        const completion = sleep(Math.random() * span * 1.2).then(async () => {
          await worker.set(k, answer(k), "EX", 86400); // the seed's completion: SET without NX
          completedAt = performance.now();
        });
        const r = await release(k);
        await completion;
        results.push({ key: k, status: r.status, body: await json(r), completedAt });
      }
    };
    await Promise.all(Array.from({ length: 4 }, lane));
    worker.disconnect();

    const released = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status === 409);
    expect(released.length + refused.length).toBe(keys.length);
    // The race really happened: both outcomes occurred.
    expect(released.length).toBeGreaterThan(0);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) expect(r.body.detail).toMatch(/holds a completed answer/);
    // Every key ends with the worker's answer: none was deleted after it completed
    // (a release either ran before the completion, which then recreated the key, or was refused).
    const values = await redis!.mget(keys);
    keys.forEach((k, i) => expect(values[i], k).toBe(answer(k)));
    const done = await queryBound<{ n: bigint }>(
      db.sql,
      `SELECT count(*) AS n FROM audit_log WHERE target_table = $1 AND action = 'redis.release' AND outcome = 'done' AND target_id LIKE $2`,
      [`redis:${STORE}`, `idempotency:${run}-race-%`],
    );
    expect(Number(done[0].n)).toBe(released.length);
  });

  it("the same Idempotency-Key replays the first answer; a viewer may not release", async () => {
    const key = `idempotency:${crashes[2]}`;
    const idem = randomUUID();
    const first = await release(key, operator.token, idem);
    expect(first.status).toBe(200);
    const firstText = await first.text();
    const again = await release(key, operator.token, idem);
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await again.text()).toBe(firstText);
    expect((await auditFor(key)).filter((a) => a.outcome === "done")).toHaveLength(1);
    const denied = await release(`idempotency:${crashes[3]}`, viewer.token);
    expect(denied.status).toBe(403);
    expect(await redis!.get(`idempotency:${crashes[3]}`)).toBe("processing");
  });
});
