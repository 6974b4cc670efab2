import { spawn, spawnSync } from "node:child_process";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IdempotencyStore, canonicalJson, payloadHash, responseForNonOwner } from "@/lib/idempotency";
import { createTestDatabase, usingMysql, usingPostgres, type TestDatabase } from "./helpers/db";
import { queryBound } from "./helpers/sql";

/**
 * The README's PHP writer (examples/php/idempotency.php) is real code: it hashes like
 * lib/idempotency/hash.ts, and PHP processes racing on the same keys against Postgres — or
 * against MariaDB, with the seed's `INSERT … ON DUPLICATE KEY UPDATE id = LAST_INSERT_ID(id)` —
 * leave exactly the rows the TypeScript writer would, readable by either.
 */
const PHP_DIR = path.resolve(import.meta.dirname, "../examples/php");
const LIBRARY = path.join(PHP_DIR, "idempotency.php");
const WORKER = path.join(PHP_DIR, "worker.php");

const modules = spawnSync("php", ["-m"], { encoding: "utf8" });
const hasPhp = modules.status === 0;
const hasPdoPgsql = hasPhp && /^pdo_pgsql$/m.test(modules.stdout);
const hasPdoMysql = hasPhp && /^pdo_mysql$/m.test(modules.stdout);

// Skipping is for laptops without PHP; in CI a skip would hide a broken README snippet.
describe.runIf(process.env.CI)("CI prerequisites", () => {
  it("php with pdo_pgsql is installed, so the PHP writer tests really run", () => {
    expect(hasPhp, "php is not on PATH").toBe(true);
    expect(hasPdoPgsql, "php -m does not list pdo_pgsql").toBe(true);
  });

  it.runIf(usingMysql)("php with pdo_mysql is installed (php-mysql), so the MariaDB part really runs", () => {
    expect(hasPdoMysql, "php -m does not list pdo_mysql").toBe(true);
  });
});

/** A PHP literal for a JSON-like value: objects become associative arrays, as services write them. */
function phpLiteral(value: unknown): string {
  if (value === null) return "null";
  switch (typeof value) {
    case "boolean":
      return value ? "true" : "false";
    case "number":
      if (!Number.isSafeInteger(value)) throw new Error(`no PHP literal for ${value}`);
      return String(value);
    case "bigint":
      return value.toString();
    case "string":
      // Single-quoted: only \ and ' are special, every other byte is taken literally.
      return `'${value.replace(/[\\']/g, (c) => `\\${c}`)}'`;
    case "object":
      if (Array.isArray(value)) return `[${value.map(phpLiteral).join(", ")}]`;
      return `[${Object.entries(value as object)
        .map(([k, v]) => `${phpLiteral(k)} => ${phpLiteral(v)}`)
        .join(", ")}]`;
    default:
      throw new Error(`no PHP literal for a ${typeof value}`);
  }
}

/** Runs PHP code with the library loaded; `$cases` is a list of PHP expressions. Returns [canonical JSON, hash] per case. */
function phpCanonical(expressions: string[]): [string, string][] {
  const script = `<?php
require ${phpLiteral(LIBRARY)};
$cases = [
${expressions.join(",\n")}
];
echo json_encode(array_map(fn ($c) => [canonical_json($c), payload_hash($c)], $cases), JSON_THROW_ON_ERROR);
`;
  const run = spawnSync("php", [], { input: script, encoding: "utf8" });
  if (run.status !== 0) throw new Error(`php exited ${run.status}: ${run.stderr}${run.stdout}`);
  return JSON.parse(run.stdout);
}

// Everything that differs between naive encoders: key order by bytes (UTF-16 order differs for
// "｡" vs emoji), numeric-looking keys, escapes, "/" and non-ASCII, lists vs objects, scalars.
const tricky: unknown[] = [
  { b: 1, a: { d: [3, 1, 2], c: "x", b: { z: null, y: [] } } },
  { é: 1, z: 2, Z: 3, a: 4, _: 5, "😀": 6, "｡": 7, "": 8, "10": 9, "9": 10, aa: 11, "a b": 12, ü: 13, "\u00e9e": 14 },
  {
    unicode: "é ü ß 漢字 😀 👩‍👩‍👧",
    slashes: "a/b\\c </script>",
    quotes: `"double" 'single'`,
    controls: "\u0000\u0001\b\f\n\r\t\u001f\u007f",
    separators: "\u2028\u2029",
    empty: "",
  },
  { list: [{ b: 1, a: 2 }, [], [[]], "x", null, [2, 1]], sparse: { "2": "two" }, gap: { "0": "zero", "2": "two" } },
  { zero: 0, neg: -42, maxSafe: 9007199254740991, minSafe: -9007199254740991, t: true, f: false, n: null },
  { amount: 1299, currency: "EUR", description: "Café – Müller / order 🎉" },
  "just a string",
  "é/ü",
  1299,
  -1,
  true,
  false,
  null,
  [],
  ["b", "a", { y: 1, x: 2 }],
];

describe.skipIf(!hasPhp)("PHP payload_hash parity with lib/idempotency/hash.ts", () => {
  it("PHP arrays, as a service builds them, hash to the same canonical bytes", () => {
    const php = phpCanonical(tricky.map(phpLiteral));
    tricky.forEach((value, i) => {
      expect(php[i][0], `canonical JSON of case ${i}`).toBe(canonicalJson(value));
      expect(php[i][1], `hash of case ${i}`).toBe(payloadHash(value));
    });
  });

  it("integers beyond 2^53 match the TypeScript bigint path", () => {
    const values = [{ big: 9007199254740993n, neg: -9223372036854775807n }];
    const php = phpCanonical(values.map(phpLiteral));
    expect(php[0]).toEqual([canonicalJson(values[0]), payloadHash(values[0])]);
  });

  it("decoded JSON (stdClass) also hashes the same, including {} and objects with list-like keys", () => {
    // A PHP array cannot express these two; json_decode() without `true` keeps them objects.
    const decoded = [...tricky, {}, { "0": "a", "1": "b" }, { "1": "one", "0": "zero" }, { a: {}, b: [{}] }, [{}]];
    const php = phpCanonical(decoded.map((v) => `json_decode(${phpLiteral(JSON.stringify(v))}, false, 512, JSON_THROW_ON_ERROR)`));
    decoded.forEach((value, i) => expect(php[i], `case ${i}: ${JSON.stringify(value)}`).toEqual([canonicalJson(value), payloadHash(value)]));
  });

  it("floats and non-JSON objects are refused with a 400 rather than hashed differently", () => {
    for (const expr of ["['amount' => 12.5]", "['amount' => 1.0]", "[new DateTime()]"]) {
      const run = spawnSync("php", [], {
        input: `<?php require ${phpLiteral(LIBRARY)};
try { payload_hash(${expr}); echo 'hashed'; } catch (IdempotencyError $e) { echo $e->getCode(); }`,
        encoding: "utf8",
      });
      expect(run.stdout, expr).toBe("400");
    }
  });
});

// ---------------------------------------------------------------------------------------------

interface WorkerLine {
  key: string | null;
  outcome: "owner" | "replay" | "conflict" | "in_progress" | "error";
  http: number;
  id?: number;
  headers?: [string, string][];
  body?: string | null;
  status?: string;
  expectedPayloadHash?: string;
  receivedPayloadHash?: string;
  error?: string;
  executed: boolean;
}

/** Mirrors the payload examples/php/worker.php builds for a job. */
const workerPayload = (amount: number) => ({ amount, currency: "EUR", description: "Café – Müller / order 🎉" });
const SCOPE = "tenant:acme";
const OPERATION = "capture_payment";

let db: TestDatabase;
let store: IdempotencyStore;
let runId = 0;
const freshKeys = (n: number) => {
  runId++;
  return Array.from({ length: n }, (_, i) => `php-${Date.now().toString(36)}-${runId}-${i}`);
};

/** Starts a worker; it connects, says ready, then waits for its jobs on stdin. */
function startWorker(args: string[] = []) {
  const child = spawn("php", [WORKER, "--dsn", db.url!, ...args], { stdio: ["pipe", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  // A worker given --key does not read stdin and may have exited before we close it.
  child.stdin.on("error", () => {});
  child.stdout.setEncoding("utf8");
  child.stderr.setEncoding("utf8");
  let signalReady: () => void;
  const ready = new Promise<void>((resolve) => (signalReady = resolve));
  child.stdout.on("data", (chunk: string) => {
    stdout += chunk;
    if (stdout.includes('{"ready":true')) signalReady();
  });
  child.stderr.on("data", (chunk: string) => (stderr += chunk));
  const done = new Promise<WorkerLine[]>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => {
      if (code !== 0) return reject(new Error(`worker exited ${code}: ${stderr}\n${stdout}`));
      const lines = stdout
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l));
      resolve(lines.filter((l) => !l.ready));
    });
  });
  // A worker that dies before "ready" must fail the test, not hang it.
  return { child, ready: Promise.race([ready, done.then(() => Promise.reject(new Error(`worker ended before ready: ${stderr}`)))]), done };
}

async function runWorker(args: string[], jobs?: unknown[]): Promise<WorkerLine[]> {
  const w = startWorker(args);
  await w.ready;
  w.child.stdin.end(jobs ? JSON.stringify(jobs) : "");
  return w.done;
}

async function recordOf(key: string) {
  const rows = await queryBound<Record<string, unknown>>(db.sql, `SELECT * FROM idempotency_records WHERE idempotency_key = $1`, [key]);
  expect(rows, `records under ${key}`).toHaveLength(1);
  return rows[0];
}

async function eventsOf(key: string) {
  return queryBound<{ kind: string; record_id: bigint; payload_hash: string; response_code: number | null; detail: Record<string, unknown> | null }>(
    db.sql,
    `SELECT kind, record_id, payload_hash, response_code, detail FROM idempotency_events WHERE idempotency_key = $1 ORDER BY id`,
    [key],
  );
}

const countKinds = (events: { kind: string }[]) => events.reduce<Record<string, number>>((acc, e) => ({ ...acc, [e.kind]: (acc[e.kind] ?? 0) + 1 }), {});

// The same file on PostgreSQL (pdo_pgsql: the CTE reservation) and on MySQL/MariaDB (pdo_mysql: the seed's reservation).
const phpWriters = usingPostgres ? hasPdoPgsql : usingMysql && hasPdoMysql;

describe.skipIf(!phpWriters)(`PHP writers on ${usingMysql ? "MariaDB/MySQL" : "Postgres"}`, () => {
  beforeAll(async () => {
    db = await createTestDatabase();
    store = new IdempotencyStore(db.prisma);
  });
  afterAll(() => db?.drop());

  let raced: { keys: string[]; owners: Map<string, WorkerLine> } | undefined;
  const racedKeys = () => raced ?? expect.fail("needs the records of the race test above, which failed");

  it("6 PHP processes × the same 5 keys, released together: one owner per key, every other request replayed or told in progress", async () => {
    const keys = freshKeys(5);
    const jobs = keys.map((key, i) => ({ key, amount: 1000 + i }));
    // The owner holds each key ~100 ms, so the others meet it in progress as well as completed.
    const workers = Array.from({ length: 6 }, () => startWorker(["--sleep-ms", "100"]));
    await Promise.all(workers.map((w) => w.ready));
    for (const w of workers) w.child.stdin.end(JSON.stringify(jobs));
    const lines = (await Promise.all(workers.map((w) => w.done))).flat();
    expect(lines).toHaveLength(30);

    const owners = new Map<string, WorkerLine>();
    let inProgressSeen = 0;
    for (const [i, key] of keys.entries()) {
      const mine = lines.filter((l) => l.key === key);
      expect(mine).toHaveLength(6);
      const own = mine.filter((l) => l.outcome === "owner");
      expect(own, `owners of ${key}`).toHaveLength(1);
      const owner = own[0];
      owners.set(key, owner);
      expect(owner).toMatchObject({ http: 201, executed: true });
      expect(owner.headers).toEqual([
        ["Content-Type", "application/json"],
        ["X-Charge-Id", expect.stringMatching(/^ch_[0-9a-f]{16}$/)],
      ]);
      expect(JSON.parse(owner.body!)).toMatchObject({ amount: 1000 + i, currency: "EUR" });

      const others = mine.filter((l) => l !== owner);
      expect(others.every((l) => !l.executed)).toBe(true);
      const replays = others.filter((l) => l.outcome === "replay");
      const inProgress = others.filter((l) => l.outcome === "in_progress");
      expect(replays.length + inProgress.length).toBe(5);
      inProgressSeen += inProgress.length;
      for (const r of replays) {
        expect(r.http).toBe(201);
        expect(r.headers).toEqual(owner.headers);
        expect(Buffer.from(r.body!, "utf8").equals(Buffer.from(owner.body!, "utf8"))).toBe(true);
      }
      for (const p of inProgress) expect(p).toMatchObject({ http: 409, status: "processing" });

      // The rows left behind.
      const rec = await recordOf(key);
      expect(rec).toMatchObject({
        scope: SCOPE,
        operation: OPERATION,
        status: "completed",
        payload_hash: payloadHash(workerPayload(1000 + i)),
        response_code: 201,
        response_headers: owner.headers,
        response_body: owner.body,
        resource_id: owner.headers![1][1],
        provider_reference: `psp_${owner.headers![1][1]}`,
        amount_minor: BigInt(1000 + i),
        currency: "EUR",
        provider: "mockpay",
        version: 1,
        last_error: null,
      });
      expect(BigInt(owner.id!)).toBe(rec.id);
      expect((rec.expires_at as Date).getTime() - (rec.created_at as Date).getTime()).toBe(86400_000);

      const events = await eventsOf(key);
      expect(countKinds(events)).toEqual({
        reserved: 1,
        completed: 1,
        ...(replays.length ? { replayed: replays.length } : {}),
        ...(inProgress.length ? { in_progress: inProgress.length } : {}),
      });
      expect(events[0].kind).toBe("reserved");
      expect(events.every((e) => e.record_id === rec.id && e.payload_hash === rec.payload_hash)).toBe(true);
      expect(events.filter((e) => e.kind === "replayed").every((e) => e.response_code === 201)).toBe(true);
      expect(events.filter((e) => e.kind === "in_progress").every((e) => e.detail?.status === "processing")).toBe(true);
    }
    // The race really happened (otherwise this test would prove nothing about concurrency).
    expect(inProgressSeen).toBeGreaterThan(0);
    raced = { keys, owners };
  });

  it("a changed payload (another amount) under an existing key is refused: 422 conflict, nothing executed, record unchanged", async () => {
    const key = racedKeys().keys[0];
    const before = await recordOf(key);
    const eventsBefore = await eventsOf(key);
    const [line] = await runWorker(["--key", key, "--amount", "9999"]);
    expect(line).toMatchObject({
      key,
      outcome: "conflict",
      http: 422,
      executed: false,
      expectedPayloadHash: payloadHash(workerPayload(1000)),
      receivedPayloadHash: payloadHash(workerPayload(9999)),
    });
    expect(await recordOf(key)).toEqual(before);
    const events = await eventsOf(key);
    expect(events).toHaveLength(eventsBefore.length + 1);
    expect(events.at(-1)).toMatchObject({
      kind: "conflict",
      record_id: before.id,
      payload_hash: payloadHash(workerPayload(9999)),
      detail: { expectedPayloadHash: payloadHash(workerPayload(1000)), receivedPayloadHash: payloadHash(workerPayload(9999)) },
    });
  });

  it("a record PHP completed is replayed by the TypeScript store with identical code, headers and body", async () => {
    const { keys, owners } = racedKeys();
    const key = keys[1];
    const owner = owners.get(key)!;
    // Same intent, keys in another order: same hash.
    const payload = { description: "Café – Müller / order 🎉", currency: "EUR", amount: 1001 };
    const result = await store.begin({ scope: SCOPE, operation: OPERATION, key, payload });
    expect(result.outcome).toBe("replay");
    if (result.outcome !== "replay") return;
    expect(result.response.code).toBe(201);
    expect(result.response.headers).toEqual(owner.headers);
    expect(Buffer.from(result.response.body!).equals(Buffer.from(owner.body!))).toBe(true);
    const http = responseForNonOwner(result)!;
    expect(http.status).toBe(201);
    expect(http.headers.get("x-charge-id")).toBe(owner.headers![1][1]);
    expect(await http.text()).toBe(owner.body);

    const changed = await store.begin({ scope: SCOPE, operation: OPERATION, key, payload: { ...payload, amount: 1 } });
    expect(changed.outcome).toBe("conflict");
  });

  it("a record the TypeScript store completed is replayed by PHP byte for byte, repeated headers in order", async () => {
    const [key] = freshKeys(1);
    const first = await store.begin({ scope: SCOPE, operation: OPERATION, key, payload: workerPayload(4200) });
    expect(first.outcome).toBe("owner");
    const headers: [string, string][] = [
      ["Content-Type", "application/json; charset=utf-8"],
      ["Set-Cookie", "a=1; Path=/"],
      ["Set-Cookie", "b=2; Path=/"],
      ["X-Note", "café/ü"],
    ];
    const body = '{"id":"ch_ts",  "amount":4200,"note":"\\u00e9 and é, 🎉 / kept","z":1,"a":2}\r\n';
    await store.complete(first.record.id, { code: 201, headers, body });

    const [line] = await runWorker(["--key", key, "--amount", "4200"]);
    expect(line).toMatchObject({ key, outcome: "replay", http: 201, headers, executed: false });
    expect(Buffer.from(line.body!).equals(Buffer.from(body))).toBe(true);
    expect(countKinds(await eventsOf(key))).toEqual({ reserved: 1, completed: 1, replayed: 1 });
  });

  it("PHP meets a TypeScript-owned record in progress (processing, then pending) with 409", async () => {
    const [key] = freshKeys(1);
    const first = await store.begin({ scope: SCOPE, operation: OPERATION, key, payload: workerPayload(77), provider: "mockpay" });
    expect(first.outcome).toBe("owner");
    expect((await runWorker(["--key", key, "--amount", "77"]))[0]).toMatchObject({ outcome: "in_progress", http: 409, status: "processing", executed: false });
    await store.markPending(first.record.id, { providerRequestId: "preq_1", error: "timeout" });
    expect((await runWorker(["--key", key, "--amount", "77"]))[0]).toMatchObject({ outcome: "in_progress", http: 409, status: "pending", executed: false });
    const events = await eventsOf(key);
    expect(events.map((e) => [e.kind, e.detail?.status ?? null])).toEqual([
      ["reserved", null],
      ["in_progress", "processing"],
      ["pending", null],
      ["in_progress", "pending"],
    ]);
    expect((await recordOf(key)).status).toBe("pending");
  });

  it("a failure PHP stored is replayed (402) by PHP and by the TypeScript store", async () => {
    const [key] = freshKeys(1);
    const lines = await runWorker(
      [],
      [
        { key, amount: 500, decline: true },
        { key, amount: 500 },
      ],
    );
    expect(lines[0]).toMatchObject({ outcome: "owner", http: 402, executed: true });
    expect(lines[1]).toMatchObject({ outcome: "replay", http: 402, body: '{"error":"card_declined"}', executed: false });
    const rec = await recordOf(key);
    expect(rec).toMatchObject({ status: "failed", response_code: 402, last_error: "card declined by mockpay", version: 1 });
    const ts = await store.begin({ scope: SCOPE, operation: OPERATION, key, payload: workerPayload(500) });
    expect(ts.outcome === "replay" && ts.response).toEqual({ code: 402, headers: [["Content-Type", "application/json"]], body: '{"error":"card_declined"}' });
    const events = await eventsOf(key);
    expect(events.map((e) => e.kind)).toEqual(["reserved", "failed", "replayed", "replayed"]);
    expect(events[1].detail).toEqual({ error: "card declined by mockpay" });
  });

  it("complete() and fail() act only on a processing record: a second completion is a 409 and changes nothing", async () => {
    const [key] = freshKeys(1);
    const first = await store.begin({ scope: SCOPE, operation: OPERATION, key, payload: workerPayload(1) });
    if (first.outcome !== "owner") throw new Error("expected to own the key");
    await store.complete(first.record.id, { code: 200, body: "first" });
    const before = await recordOf(key);
    const url = new URL(db.url!);
    const dsn = usingMysql
      ? `mysql:host=${url.hostname};port=${url.port || 3306};dbname=${url.pathname.slice(1)};charset=utf8mb4`
      : `pgsql:host=${url.hostname};port=${url.port || 5432};dbname=${url.pathname.slice(1)}`;
    const run = spawnSync("php", [], {
      input: `<?php require ${phpLiteral(LIBRARY)};
$store = new IdempotencyStore(new PDO(${phpLiteral(dsn)}, ${phpLiteral(decodeURIComponent(url.username))}, ${phpLiteral(decodeURIComponent(url.password))}));
foreach ([fn () => $store->complete(${first.record.id}, 201, [], 'second'), fn () => $store->fail(${first.record.id}, 500, [], 'x', 'late')] as $f) {
  try { $f(); echo "done\\n"; } catch (IdempotencyError $e) { echo $e->getCode(), "\\n"; }
}`,
      encoding: "utf8",
    });
    expect(run.stderr).toBe("");
    expect(run.stdout).toBe("409\n409\n");
    expect(await recordOf(key)).toEqual(before);
    expect(countKinds(await eventsOf(key))).toEqual({ reserved: 1, completed: 1 });
  });

  it.runIf(usingMysql)(
    "MySQL: the reservation's count is PDO's default — 1 then 0; with PDO::MYSQL_ATTR_FOUND_ROWS it is 1 and 1 (the library needs the default)",
    async () => {
      const url = new URL(db.url!);
      const dsn = `mysql:host=${url.hostname};port=${url.port || 3306};dbname=${url.pathname.slice(1)};charset=utf8mb4`;
      const [key] = freshKeys(1);
      const run = (options: string, k: string) => {
        const r = spawnSync("php", [], {
          input: `<?php
$db = new PDO(${phpLiteral(dsn)}, ${phpLiteral(decodeURIComponent(url.username))}, ${phpLiteral(decodeURIComponent(url.password))}, ${options});
$db->setAttribute(PDO::ATTR_ERRMODE, PDO::ERRMODE_EXCEPTION);
$out = [];
foreach ([1, 2] as $_) {
  $s = $db->prepare("INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, expires_at)
    VALUES ('php-count', 'o', ?, 'h', 'processing', UTC_TIMESTAMP(6)) ON DUPLICATE KEY UPDATE id = LAST_INSERT_ID(id)");
  $s->execute([${phpLiteral(k)}]);
  $out[] = $s->rowCount();
}
echo json_encode($out);`,
          encoding: "utf8",
        });
        expect(r.stderr).toBe("");
        return JSON.parse(r.stdout);
      };
      expect(run("[]", key)).toEqual([1, 0]);
      expect(run("[PDO::MYSQL_ATTR_FOUND_ROWS => true]", `${key}-found-rows`)).toEqual([1, 1]);
      await db.sql.query(`DELETE FROM idempotency_records WHERE scope = 'php-count'`);
    },
  );

  it("a missing or overlong key is a 400 and writes nothing", async () => {
    const count = async () =>
      (await db.sql.query<{ n: bigint }>(`SELECT (SELECT count(*) FROM idempotency_records) + (SELECT count(*) FROM idempotency_events) AS n`))[0].n;
    const before = await count();
    const lines = await runWorker([], [{ amount: 1 }, { key: "", amount: 1 }, { key: "k".repeat(256), amount: 1 }, { key: "has space", amount: 1 }]);
    expect(lines.map((l) => [l.outcome, l.http, l.executed])).toEqual(Array(4).fill(["error", 400, false]));
    expect(await count()).toBe(before);
  });
});
