import { randomBytes } from "node:crypto";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROUTE_MODULES } from "@/app/api/v1/openapi.json/route-modules";
import { buildOpenApiDocument, HTTP_METHODS, type HttpMethod } from "@/lib/api/openapi";
import type { RouteHandler } from "@/lib/api/handler";
import { ROLES } from "@/lib/auth/permissions";
import { provideDatabase } from "@/lib/db/client";
import { byDialect } from "@/lib/db/dialect";
import { storableText } from "@/lib/db/storable";
import { useTestAuthEnv } from "./helpers/auth-fixtures";
import { createTestDatabase, type TestDatabase } from "./helpers/db";
import { queryBound } from "./helpers/sql";
import { bodyValue, businessDigest, HOSTILE_STRINGS, hostileString, hostileValue, parameterText, validValue } from "./helpers/fuzz";
import { pendingRecord, stuckRecord } from "./helpers/pending-records";
import { startProviderService, type ProviderService } from "./helpers/provider";
import { call, tokenFor } from "./helpers/records-api";

/**
 * Property-based fuzzing of the whole API (issue 11): every operation of the
 * OpenAPI document, driven with generated paths, queries, headers and bodies —
 * mostly shaped like the schema, with hostile values mixed in (NUL, lone
 * surrogates, integers past every column, wrong types, overlong text, unknown
 * fields). Deterministic: a fixed seed per operation. For every request:
 * - never a 5xx;
 * - every error is application/problem+json with its status;
 * - a refused request (4xx) changed no row of any business table.
 * The figures are printed at the end.
 */

useTestAuthEnv();

const SEED = 20261201;
/** Generated requests per operation; × the document's operations ≥ 1,000 per run. */
const RUNS_PER_OPERATION = 24;

let db: TestDatabase;
let provider: ProviderService;
let adminToken: string;
let adminId: bigint;
const savedEnv = { PROVIDER_URL: process.env.PROVIDER_URL, PROVIDERS: process.env.PROVIDERS, PROVIDER_TIMEOUT_MS: process.env.PROVIDER_TIMEOUT_MS };

const ids: bigint[] = [];
const figures = { requests: 0, byStatus: new Map<number, number>(), serverErrors: 0, refusedWithChanges: 0, refusedUnchanged: 0, ms: 0 };

interface Operation {
  method: HttpMethod;
  path: string;
  handler: RouteHandler;
  op: Record<string, any>;
}

const doc = buildOpenApiDocument(ROUTE_MODULES);
const operations: Operation[] = [];
for (const route of ROUTE_MODULES) {
  const p = route.path.replace(/\[(\w+)\]/g, "{$1}");
  for (const method of HTTP_METHODS) {
    const op = (doc.paths as Record<string, Record<string, any>>)[p]?.[method.toLowerCase()];
    const handler = route.module[method];
    if (op && typeof handler === "function") operations.push({ method, path: p, handler, op });
  }
}

beforeAll(async () => {
  [db, provider] = await Promise.all([createTestDatabase(), startProviderService()]);
  provideDatabase(db);
  delete process.env.PROVIDERS;
  process.env.PROVIDER_URL = provider.url;
  process.env.PROVIDER_TIMEOUT_MS = "300";
  const admin = await tokenFor(db, [...ROLES]);
  adminToken = admin.token;
  adminId = admin.userId;
  await tokenFor(db, ["viewer"]);
  // Something for the handlers to find: records in every state, a completed charge to compensate.
  for (let i = 0; i < 3; i++) await pendingRecord(db);
  await stuckRecord(db, { ageSeconds: 3600 });
  await db.sql.query(
    `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, response_code, response_body, provider, provider_reference, amount_minor, currency, expires_at)
     VALUES ('tenant:fuzz', 'capture_payment', 'k-done', repeat('a', 64), 'completed', 201, '{"card":"4242424242424242"}', 'mockpay', 'ch_fuzz', 1000, 'EUR',
       ${byDialect(db, { postgres: "now() - interval '40 days'", mysql: "NOW(6) - INTERVAL 40 DAY" })})`,
  );
  await db.sql.query(`INSERT INTO retention_policies (operation, keep_records_days, keep_events_days) VALUES (NULL, 7, 7)`);
  const known = await db.sql.query<{ id: bigint }>(
    `SELECT id FROM idempotency_records UNION SELECT id FROM console_users UNION SELECT id FROM api_tokens UNION SELECT id FROM retention_policies`,
  );
  ids.push(...known.map((r) => BigInt(r.id)));
}, 120_000);

afterAll(async () => {
  for (const [k, v] of Object.entries(savedEnv)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  const by = [...figures.byStatus.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([s, n]) => `${s}: ${n}`)
    .join(", ");
  console.log(
    `API fuzz (${{ postgres: "PostgreSQL", mysql: "MySQL/MariaDB", embedded: "PGlite" }[db?.mode ?? "embedded"]}, seed ${SEED}): ${figures.requests} requests over ${operations.length} operations in ${(figures.ms / 1000).toFixed(1)} s — by status {${by}}; ` +
      `5xx = ${figures.serverErrors}; refused requests ${figures.refusedUnchanged + figures.refusedWithChanges}, rows changed by them = ${figures.refusedWithChanges}`,
  );
  await provider?.stop();
  await db?.drop();
});

/** Ids that exist (records, users, tokens, policies), and ones that cannot. */
const idText = () =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...ids.map(String)) },
    { weight: 1, arbitrary: fc.constantFrom("1", "9223372036854775807", "9223372036854775808", "99999999999999999999", "0", "-1", "1.5", "1\u0000", "abc") },
  );

const hints = (): Record<string, fc.Arbitrary<unknown>> => ({
  id: idText(),
  recordId: idText(),
  relatedRecordId: fc.option(idText(), { nil: null }),
  userId: idText(),
  cursor: idText(),
  before: idText(),
  recordIds: fc.array(idText(), { minLength: 1, maxLength: 3 }),
  reason: fc.oneof({ weight: 4, arbitrary: fc.constant("fuzzing the API") }, { weight: 1, arbitrary: fc.constantFrom(...HOSTILE_STRINGS) }),
  list: fc.constantFrom("records", "queue", "duplicates", "conflicts", "nope", "records\u0000"),
  owner: fc.constantFrom("me", "all", "1", "9223372036854775808"),
  page: fc.constantFrom("/records", "/queue", "/", "/x\u0000"),
  query: fc.constantFrom("status=pending", "", "q=%00"),
});

interface Generated {
  params: Record<string, string>;
  query: [string, string][];
  body: unknown;
  bodyText?: string;
  key: string | null;
}

/**
 * Three kinds of requests, all from the document: clean ones (every value as the
 * schema asks, a fresh key: they reach the handlers' own checks and succeed or are
 * refused there), clean ones with exactly one hostile value (one query or path
 * parameter, or one body field: the rest valid, so nothing else stops it before
 * it reaches the database), and hostile ones (hostile values mixed in everywhere).
 */
function requestArbitrary(o: Operation): fc.Arbitrary<Generated> {
  return fc.oneof({ weight: 2, arbitrary: cleanRequest(o) }, { weight: 3, arbitrary: oneHostile(o) }, { weight: 2, arbitrary: hostileRequest(o) });
}

function oneHostile(o: Operation): fc.Arbitrary<Generated> {
  const parameters = (o.op.parameters ?? []) as { name: string; in: string }[];
  const schema = o.op.requestBody?.content?.["application/json"]?.schema as { properties?: Record<string, unknown> } | undefined;
  const slots = [
    ...parameters.filter((p) => p.in === "query" || p.in === "path").map((p) => ({ in: p.in, name: p.name })),
    ...Object.keys(schema?.properties ?? {}).map((name) => ({ in: "body", name })),
  ];
  if (!slots.length) return cleanRequest(o);
  return fc.tuple(cleanRequest(o), fc.constantFrom(...slots), hostileString, hostileValue).map(([g, slot, text, value]) => {
    if (slot.in === "path") return { ...g, params: { ...g.params, [slot.name]: text } };
    if (slot.in === "query") return { ...g, query: [...g.query.filter(([k]) => k !== slot.name), [slot.name, text] as [string, string]] };
    const body = g.body && typeof g.body === "object" && !Array.isArray(g.body) ? (g.body as Record<string, unknown>) : {};
    // Half the time a string no column can hold, else any hostile value (wrong types included).
    return { ...g, body: { ...body, [slot.name]: text.length % 2 ? text : value } };
  });
}

function cleanRequest(o: Operation): fc.Arbitrary<Generated> {
  const h = { ...hints(), reason: fc.constant("fuzzing the API"), id: fc.constantFrom(...ids.map(String)) };
  const parameters = (o.op.parameters ?? []) as { name: string; in: string; required: boolean; schema: Record<string, unknown> }[];
  const pathParams: Record<string, fc.Arbitrary<string>> = {};
  for (const p of parameters.filter((x) => x.in === "path")) pathParams[p.name] = validValue(p.schema, h, p.name).map(String);
  const queryParams = parameters
    .filter((x) => x.in === "query")
    .map((p) =>
      fc.option(
        validValue(p.schema, h, p.name).map((v): [string, string] => [p.name, String(v)]),
        { nil: null, freq: 2 },
      ),
    );
  const schema = o.op.requestBody?.content?.["application/json"]?.schema as Record<string, unknown> | undefined;
  return fc
    .record({ params: fc.record(pathParams), query: fc.tuple(...queryParams), body: schema ? validValue(schema, h) : fc.constant(undefined) })
    .map((g) => ({
      params: g.params,
      query: g.query.filter((q): q is [string, string] => q !== null),
      body: g.body,
      key: `fuzz-${randomBytes(8).toString("hex")}`,
    }));
}

function hostileRequest(o: Operation): fc.Arbitrary<Generated> {
  const h = hints();
  const parameters = (o.op.parameters ?? []) as { name: string; in: string; required: boolean; schema: Record<string, unknown> }[];
  const pathParams: Record<string, fc.Arbitrary<string>> = {};
  for (const p of parameters.filter((x) => x.in === "path")) pathParams[p.name] = parameterText(p.schema, h, p.name);
  const queryParams = parameters
    .filter((x) => x.in === "query")
    .map((p) =>
      fc.option(
        parameterText(p.schema, h, p.name).map((v): [string, string] => [p.name, v]),
        { nil: null, freq: 2 },
      ),
    );
  const extraQuery = fc.option(fc.tuple(fc.constantFrom("unknown", "a\u0000", "cursor", "limit"), fc.constantFrom(...HOSTILE_STRINGS)), { nil: null, freq: 5 });
  const schema = o.op.requestBody?.content?.["application/json"]?.schema as Record<string, unknown> | undefined;
  const body = schema ? bodyValue(schema, h) : fc.constant(undefined);
  const bodyText = fc.option(fc.constantFrom("{", "[]", "null", '{"reason":"\\u0000"}', '{"a":1e999}', `{"reason":"${"x".repeat(70_000)}"}`), {
    nil: undefined,
    freq: 12,
  });
  const key = fc.oneof(
    { weight: 8, arbitrary: fc.constant("fresh") },
    { weight: 1, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: fc.constantFrom("x".repeat(256), "a b", "é", "\x7f", "k\tk") },
  );
  return fc.record({ params: fc.record(pathParams), query: fc.tuple(fc.tuple(...queryParams), extraQuery), body, bodyText, key }).map((g) => ({
    params: g.params,
    query: [...g.query[0].filter((q): q is [string, string] => q !== null), ...(g.query[1] ? [g.query[1]] : [])],
    body: g.body,
    bodyText: g.bodyText,
    key: g.key === "fresh" ? `fuzz-${randomBytes(8).toString("hex")}` : g.key,
  }));
}

async function send(o: Operation, g: Generated): Promise<void> {
  // A URL cannot carry a lone surrogate (Next would decode it to U+FFFD); the handler gets the raw params anyway.
  const url = new URL(`http://console.test${o.path.replace(/\{(\w+)\}/g, (_m, n: string) => encodeURIComponent(storableText(g.params[n] ?? "")))}`);
  for (const [k, v] of g.query) url.searchParams.append(k, v);
  const headers = new Headers({ authorization: `Bearer ${adminToken}` });
  let body: string | undefined;
  if (o.method !== "GET") {
    headers.set("content-type", "application/json");
    body = g.bodyText ?? (g.body === undefined ? undefined : JSON.stringify(g.body));
    if (g.key !== null) {
      try {
        headers.set("idempotency-key", g.key);
      } catch {
        // A value undici refuses never reaches a server either (Node answers 400 itself).
      }
    }
  }
  const label = `${o.method} ${url.pathname}${url.search} ${body?.slice(0, 200) ?? ""}`;
  if (process.env.FUZZ_LOG) console.error("→", label.slice(0, 200));
  const before = await businessDigest(db.sql);
  const started = performance.now();
  if (process.env.FUZZ_LOG) console.error("  digest done");
  const res = await call(o.handler, url.href, null, { method: o.method, headers, body }, g.params);
  const text = await res.text();
  if (process.env.FUZZ_LOG) console.error("  answered", res.status);
  figures.ms += performance.now() - started;
  figures.requests++;
  figures.byStatus.set(res.status, (figures.byStatus.get(res.status) ?? 0) + 1);
  if (res.status >= 500) figures.serverErrors++;
  expect(res.status, `${label} → ${text.slice(0, 300)}`).toBeLessThan(500);
  if (res.status >= 400) {
    expect(res.headers.get("content-type"), label).toBe("application/problem+json");
    expect(JSON.parse(text), label).toMatchObject({ status: res.status, title: expect.any(String), type: expect.any(String) });
    const after = await businessDigest(db.sql);
    const changed = Object.keys(after).filter((t) => after[t] !== before[t]);
    if (changed.length) figures.refusedWithChanges++;
    else figures.refusedUnchanged++;
    expect(changed, `${label} → ${res.status} changed ${changed.join(", ")}`).toEqual([]);
  } else if (o.method !== "GET") {
    // The fuzzer's own principal stays usable: a generated request may have revoked its token or changed its roles.
    await byDialect(db, {
      postgres: () => db.sql.query(`UPDATE console_users SET roles = $2::text[], disabled_at = NULL WHERE id = $1`, [adminId, [...ROLES]]),
      mysql: () => db.sql.query(`UPDATE console_users SET roles = ?, disabled_at = NULL WHERE id = ?`, [JSON.stringify([...ROLES]), adminId]),
    })();
    await queryBound(
      db.sql,
      `UPDATE api_tokens SET revoked_at = NULL, expires_at = ${byDialect(db, { postgres: "now() + interval '1 day'", mysql: "NOW(6) + INTERVAL 1 DAY" })} WHERE user_id = $1`,
      [adminId],
    );
  }
  if (res.status < 400 && o.method === "POST" && o.path === "/api/v1/purges") {
    // A started purge runs in the background: let it finish before the next request is measured.
    for (let i = 0; i < 200; i++) {
      const [active] = await db.sql.query<{ n: number | bigint }>(`SELECT count(*) AS n FROM purge_runs WHERE state IN ('queued', 'running', 'cancelling')`);
      if (Number(active.n) === 0) break;
      await new Promise((r) => setTimeout(r, 25));
    }
  }
}

describe("API fuzz: every operation of the OpenAPI document", () => {
  it(`covers ≥ 1,000 generated requests (${RUNS_PER_OPERATION} per operation)`, () => {
    expect(operations.length * RUNS_PER_OPERATION).toBeGreaterThanOrEqual(1000);
  });

  operations.forEach((o, i) => {
    it(`${o.method} ${o.path}: no 5xx, errors are problem+json, refusals change nothing`, async () => {
      await fc.assert(
        fc.asyncProperty(requestArbitrary(o), (g) => send(o, g)),
        { seed: SEED + i, numRuns: RUNS_PER_OPERATION, endOnFailure: true },
      );
    });
  });

  it("hostile values are exercised (sanity of the generator)", () => {
    const sample = fc.sample(hostileValue, { seed: SEED, numRuns: 500 }).map((v) => JSON.stringify(v) ?? "");
    for (const marker of ["\\u0000", "\\ud800", "9223372036854775808", "1e+308"])
      expect(
        sample.some((v) => v.includes(marker)),
        marker,
      ).toBe(true);
  });
});
