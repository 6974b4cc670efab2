import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { parseRedisConfig } from "@/lib/redis/config";
import { decodeValue, FORMAT_PRESETS } from "@/lib/redis/formats";
import { globToRegExp, prefixGlob } from "@/lib/redis/glob";
import { phpToPlain, phpUnserialize } from "@/lib/redis/php-serialize";

/**
 * The value formats (no Redis needed): each preset reads the values its library
 * writes — taken from the libraries' code (README "Redis key stores") — and refuses
 * what is not a record (lock keys, sessions, counters, other JSON). Plus the
 * configuration's parsing and the glob matcher.
 */

const fmt = (name: string) => FORMAT_PRESETS[name].format;

describe("seed: 'processing', then JSON {status, body}", () => {
  it("reads the sentinel and the result; anything else is not a record", () => {
    expect(decodeValue(fmt("seed"), "idempotency:k", "processing")).toMatchObject({ state: "processing", stateValue: "processing", httpStatus: null });
    expect(decodeValue(fmt("seed"), "idempotency:k", '{"status":201,"body":{"id":"ch_1","card":"4242 4242 4242 4242"}}')).toMatchObject({
      state: "completed",
      httpStatus: 201,
      body: '{"id":"ch_1","card":"4242 4242 4242 4242"}',
      fingerprint: null,
    });
    expect(decodeValue(fmt("seed"), "k", '{"status":503,"body":"upstream down"}')).toMatchObject({
      state: "completed",
      httpStatus: 503,
      body: "upstream down",
    });
    for (const unrelated of ["Processing", "processing ", "1", "{}", '{"user":42,"expires":1}', "[1,2]", "not json", '{"status":"active"}']) {
      expect(decodeValue(fmt("seed"), "k", unrelated), unrelated).toBeNull();
    }
    expect(decodeValue(fmt("seed"), "k", { field: "value" }), "a hash").toBeNull();
    expect(decodeValue(fmt("seed"), "k", null)).toBeNull();
  });
});

describe("powertools (Python RedisCachePersistenceLayer, TypeScript CachePersistenceLayer)", () => {
  const f = fmt("powertools");
  it("reads INPROGRESS with its lease and validation hash, and COMPLETED with data; the lock key is not a record", () => {
    // Python's json.dumps: ", " and ": " separators; expiration in s, in_progress_expiration in ms.
    const inProgress =
      '{"status": "INPROGRESS", "expiration": 1767225600, "in_progress_expiration": 1767222000123, "validation": "5d41402abc4b2a76b9719d911017c592"}';
    expect(decodeValue(f, "fn.handler#e3b0c4", inProgress)).toEqual({
      state: "processing",
      stateValue: "INPROGRESS",
      httpStatus: null,
      body: null,
      headers: null,
      fingerprint: "5d41402abc4b2a76b9719d911017c592",
      expiresAt: new Date(1767225600_000),
      inProgressExpiresAt: new Date(1767222000123),
    });
    const data = JSON.stringify({ statusCode: 502, body: '{"message":"bad gateway"}' });
    const completed = JSON.stringify({ status: "COMPLETED", expiration: 1767225600, data });
    expect(decodeValue(f, "fn.handler#e3b0c4", completed)).toMatchObject({
      state: "completed",
      stateValue: "COMPLETED",
      httpStatus: 502,
      body: data,
      fingerprint: null,
    });
    expect(decodeValue(f, "fn.handler#e3b0c4:lock", "True")).toBeNull();
    expect(decodeValue(f, "x", '{"status": "EXPIRED", "expiration": 1}')).toBeNull();
  });

  it("powertools-java: a hash whose field names carry the key", () => {
    const key = "{idempotency:id:fn#abc}";
    const hash = { [`${key}:status`]: "INPROGRESS", [`${key}:expiration`]: "1767225600", [`${key}:in-progress-expiration`]: "1767222000123" };
    expect(decodeValue(fmt("powertools-java"), key, hash)).toMatchObject({
      state: "processing",
      stateValue: "INPROGRESS",
      inProgressExpiresAt: new Date(1767222000123),
    });
    const done = { [`${key}:status`]: "COMPLETED", [`${key}:expiration`]: "1767225600", [`${key}:data`]: '{"ok":true}', [`${key}:validation`]: "abc" };
    expect(decodeValue(fmt("powertools-java"), key, done)).toMatchObject({ state: "completed", body: '{"ok":true}', fingerprint: "abc" });
    // The same fields under another key's name are not this key's record.
    expect(decodeValue(fmt("powertools-java"), "{idempotency:id:other}", done)).toBeNull();
    expect(decodeValue(fmt("powertools-java"), key, JSON.stringify({ status: "COMPLETED" })), "a string").toBeNull();
  });
});

describe("node-idempotency (@node-idempotency/storage-adapter-redis)", () => {
  it("reads IN_PROGRESS / COMPLETE with fingerPrint and response.additional.statusCode", () => {
    const f = fmt("node-idempotency");
    expect(decodeValue(f, "node-idempotency:POST:/orders:k1", '{"status":"IN_PROGRESS","fingerPrint":"ab12"}')).toMatchObject({
      state: "processing",
      stateValue: "IN_PROGRESS",
      fingerprint: "ab12",
    });
    const complete = { status: "COMPLETE", fingerPrint: "ab12", response: { additional: { statusCode: 201 }, body: { id: 7 } } };
    expect(decodeValue(f, "k", JSON.stringify(complete))).toMatchObject({ state: "completed", httpStatus: 201, body: '{"id":7}', fingerprint: "ab12" });
    const failed = { status: "COMPLETE", response: { additional: { statusCode: 500 }, error: { message: "boom" } } };
    expect(decodeValue(f, "k", JSON.stringify(failed))).toMatchObject({ state: "completed", httpStatus: 500, body: '{"message":"boom"}', fingerprint: null });
  });
});

describe("laravel-idempotency (square1/laravel-idempotency on Laravel's Redis cache: PHP serialize())", () => {
  const serialized =
    'a:5:{s:4:"body";s:13:"{"id":"ch_1"}";s:6:"status";i:201;s:7:"headers";a:1:{s:12:"content-type";a:1:{i:0;s:16:"application/json";}}s:4:"path";s:9:"api/order";s:11:"originalKey";s:3:"k-1";}';

  it("reads the cache lock's owner token as processing and the serialized response as completed", () => {
    const f = fmt("laravel-idempotency");
    expect(decodeValue(f, "laravel_database_laravel_cache_idempotency:7:k-1", "aB3dE5fG7hJ9kL1m")).toMatchObject({ state: "processing" });
    expect(decodeValue(f, "k", serialized)).toMatchObject({
      state: "completed",
      httpStatus: 201,
      body: '{"id":"ch_1"}',
      headers: [["content-type", "application/json"]],
      fingerprint: null,
    });
    expect(decodeValue(f, "k", 's:5:"hello";')).toBeNull();
    expect(decodeValue(f, "k", "i:5;")).toBeNull();
    expect(decodeValue(f, "k", 'a:1:{s:4:"body";s:99:"short";}')).toBeNull();
  });

  it("reads what PHP's serialize() writes (multibyte strings, nested arrays), when php is installed", () => {
    const php = spawnSync(
      "php",
      [
        "-r",
        'echo serialize(["body" => "Café 🎉 \\"q\\"", "status" => 503, "headers" => ["x-a" => ["1", "2"]], "n" => null, "f" => 1.5, "b" => true, 3 => "int key"]);',
      ],
      { encoding: "utf8" },
    );
    if (php.status !== 0) return; // covered by the literal above; CI has php
    expect(phpToPlain(phpUnserialize(php.stdout)!)).toEqual({
      body: 'Café 🎉 "q"',
      status: 503,
      headers: { "x-a": ["1", "2"] },
      n: null,
      f: 1.5,
      b: true,
      "3": "int key",
    });
    expect(decodeValue(fmt("laravel-idempotency"), "k", php.stdout)).toMatchObject({
      state: "completed",
      httpStatus: 503,
      headers: [
        ["x-a", "1"],
        ["x-a", "2"],
      ],
    });
  });
});

describe("configuration", () => {
  it("REDIS_URL is the store 'default' with the seed's pattern, TTL and format unless told otherwise", () => {
    const c = parseRedisConfig({ REDIS_URL: "redis://:s3cret@cache.internal:6379/3" });
    expect(c.stores).toHaveLength(1);
    expect(c.stores[0]).toMatchObject({
      name: "default",
      pattern: "idempotency:*",
      ttlSeconds: 86400,
      wedgedAfterSeconds: 300,
      formatName: "seed",
      displayUrl: "redis://:***@cache.internal:6379/3",
    });
    expect(c).toMatchObject({ censusIntervalSeconds: 60, scanCount: 100, scanPauseMs: 2 });
    const custom = parseRedisConfig({
      REDIS_URL: "redis://h",
      REDIS_KEY_PATTERN: "idem:{tenant}:*",
      REDIS_KEY_TTL_SECONDS: "3600",
      REDIS_WEDGED_AFTER: "2m",
      REDIS_SCAN_COUNT: "200",
    });
    expect(custom.stores[0]).toMatchObject({ pattern: "idem:{tenant}:*", ttlSeconds: 3600, wedgedAfterSeconds: 120 });
    expect(custom.scanCount).toBe(200);
  });

  it("REDIS_STORES adds stores with pattern, TTL, format and threshold per store; preset defaults apply", () => {
    const c = parseRedisConfig({
      REDIS_URL: "redis://h:6379/0",
      REDIS_STORES: "orders=redis://h:6379/2?pattern=ord%3A*&ttl=7200&wedgedAfter=10m, lambda=rediss://u:p@h:6380/0?format=powertools",
    });
    expect(c.stores.map((s) => s.name)).toEqual(["default", "orders", "lambda"]);
    expect(c.stores[1]).toMatchObject({ url: "redis://h:6379/2", pattern: "ord:*", ttlSeconds: 7200, wedgedAfterSeconds: 600, formatName: "seed" });
    expect(c.stores[2]).toMatchObject({
      url: "rediss://u:p@h:6380/0",
      pattern: "*#*",
      ttlSeconds: 3600,
      formatName: "powertools",
      displayUrl: "rediss://u:***@h:6380/0",
    });
  });

  it("REDIS_FORMATS: a JSON object with a state field, its values and expiry fields; extends a preset", () => {
    const c = parseRedisConfig({
      REDIS_STORES: "a=redis://h/1?format=mine",
      REDIS_FORMATS: JSON.stringify({
        mine: {
          stateField: "state",
          processing: "running",
          completed: ["done", "failed"],
          statusField: "http.code",
          bodyField: "http.body",
          fingerprintField: "req_hash",
          expiresAt: "exp:ms",
        },
      }),
    });
    const f = c.stores[0].format;
    expect(decodeValue(f, "k", '{"state":"running","req_hash":"h1"}')).toMatchObject({ state: "processing", stateValue: "running", fingerprint: "h1" });
    expect(decodeValue(f, "k", '{"state":"failed","http":{"code":422,"body":"no"},"exp":1767225600000}')).toMatchObject({
      state: "completed",
      stateValue: "failed",
      httpStatus: 422,
      body: "no",
      expiresAt: new Date(1767225600000),
    });
    expect(decodeValue(f, "k", '{"state":"weird"}')).toBeNull();
    const hash = parseRedisConfig({
      REDIS_STORES: "b=redis://h/1?format=h",
      REDIS_FORMATS: '{"h":{"encoding":"hash","stateField":"st","processing":"P","completed":"C","statusField":"code"}}',
    }).stores[0].format;
    expect(decodeValue(hash, "k", { st: "C", code: "409" })).toMatchObject({ state: "completed", httpStatus: 409 });
    const ext = parseRedisConfig({ REDIS_STORES: "c=redis://h/1?format=fp", REDIS_FORMATS: '{"fp":{"extends":"seed","fingerprintField":"payload_hash"}}' })
      .stores[0];
    expect(ext.pattern).toBe("idempotency:*");
    expect(decodeValue(ext.format, "k", '{"status":200,"body":"x","payload_hash":"ab"}')).toMatchObject({ fingerprint: "ab" });
  });

  it("malformed settings fail loudly, naming the variable", () => {
    const bad: [Record<string, string>, RegExp][] = [
      [{ REDIS_URL: "http://h" }, /REDIS_URL.*redis:\/\//],
      [{ REDIS_URL: "redis://h", REDIS_KEY_TTL_SECONDS: "0" }, /ttl.*from 1/],
      [{ REDIS_URL: "redis://h", REDIS_KEY_FORMAT: "nope" }, /format "nope" is neither a preset/],
      [{ REDIS_URL: "redis://h", REDIS_WEDGED_AFTER: "soon" }, /wedgedAfter.*not a duration/],
      [{ REDIS_STORES: "Bad Name=redis://h" }, /store name "Bad Name"/],
      [{ REDIS_STORES: "a=redis://h,a=redis://g" }, /used twice/],
      [{ REDIS_STORES: "noequals" }, /not name=redis/],
      [{ REDIS_FORMATS: "{" }, /REDIS_FORMATS must be a JSON object/],
      [{ REDIS_FORMATS: '{"seed":{}}' }, /not a preset/],
      [{ REDIS_FORMATS: '{"x":{"stateField":"s","processing":"p"}}' }, /both its processing and its completed/],
      [{ REDIS_FORMATS: '{"x":{"stateField":"s","processing":"p","completed":"c","colour":"red"}}' }, /REDIS_FORMATS.x/],
      [{ REDIS_FORMATS: '{"x":{"expiresAt":"exp"}}' }, /field:s/],
      [{ REDIS_CENSUS_SECONDS: "-1" }, /REDIS_CENSUS_SECONDS/],
      [{ REDIS_SCAN_COUNT: "100000" }, /REDIS_SCAN_COUNT.*10 to 5000/],
    ];
    for (const [env, message] of bad) expect(() => parseRedisConfig(env), JSON.stringify(env)).toThrow(message);
  });
});

describe("globs", () => {
  it("match as Redis does: * ? [set] [^set] [a-z] and escapes", () => {
    const cases: [string, string, boolean][] = [
      ["idempotency:*", "idempotency:abc", true],
      ["idempotency:*", "idempotency:", true],
      ["idempotency:*", "session:abc", false],
      ["idempotency:*", "xidempotency:abc", false],
      ["*#*", "fn.handler#e3b0", true],
      ["*#*", "fn.handler#e3b0:lock", true],
      ["{idempotency:id:*}", "{idempotency:id:a#b}", true],
      ["k?y", "key", true],
      ["k?y", "kely", false],
      ["k[ae]y", "kay", true],
      ["k[^ae]y", "kay", false],
      ["k[a-c]y", "kby", true],
      ["a\\*b", "a*b", true],
      ["a\\*b", "axb", false],
      ["a.b", "axb", false],
    ];
    for (const [pattern, key, match] of cases) expect(globToRegExp(pattern).test(key), `${pattern} ~ ${key}`).toBe(match);
    expect(prefixGlob("ord*[1]?\\")).toBe("ord\\*\\[1\\]\\?\\\\*");
    expect(globToRegExp(prefixGlob("a*[b]")).test("a*[b]c")).toBe(true);
    expect(globToRegExp(prefixGlob("a*[b]")).test("aX[b]c")).toBe(false);
  });
});
