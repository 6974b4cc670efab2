import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as audit from "@/app/api/v1/audit/route";
import * as auditExport from "@/app/api/v1/audit/export/route";
import * as auditVerify from "@/app/api/v1/audit/verify/route";
import * as tokens from "@/app/api/v1/tokens/route";
import * as users from "@/app/api/v1/users/route";
import { MAX_BODY_BYTES, type RouteHandler } from "@/lib/api/handler";
import { ALL_PERMISSIONS, ROLES } from "@/lib/auth/permissions";
import { provideDatabase } from "@/lib/db/client";
import { createTestToken, createTestUser, dropTestDatabase, sessionCookie, tableSnapshot, useTestAuthEnv } from "./helpers/auth-fixtures";
import { createTestDatabase, type TestDatabase } from "./helpers/db";
import { call } from "./helpers/records-api";

/**
 * Hostile and sloppy input against the real route handlers (through
 * provideDatabase): every refusal is a 4xx application/problem+json with a
 * readable detail, and nothing is written anywhere — except, for an
 * authenticated mutation, the audit entry recording its refusal.
 */

useTestAuthEnv();

// Imported, not looked up: a route file that moves fails this file instead of skipping its tests.
type Handler = RouteHandler;

let db: TestDatabase;
let adminId: bigint;
let bearer: Record<string, string>;
let cookie: string;

beforeAll(async () => {
  db = await createTestDatabase();
  provideDatabase(db);
  const admin = await createTestUser(db.prisma, { roles: [...ROLES], email: "admin@bad-input.test" });
  adminId = admin.id;
  bearer = { authorization: `Bearer ${await createTestToken(db.prisma, admin.id, { scopes: ALL_PERMISSIONS })}` };
  cookie = await sessionCookie(admin.id);
});
afterAll(() => dropTestDatabase(db));

interface Call {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  body?: BodyInit;
}

/**
 * Calls the handler and checks the refusal: the status, problem+json with a
 * detail, nothing written, and — for an authenticated mutation of a route with an
 * audit action — exactly one new audit entry, the refusal.
 */
async function expectRefused(handler: Handler, c: Call, status: number, detail?: RegExp, opts: { auditedAs?: bigint } = {}) {
  const before = await tableSnapshot(db.sql);
  const lastAudit = await db.prisma.auditEntry.findFirst({ orderBy: { id: "desc" }, select: { id: true } });
  const res = await call(handler, `http://localhost${c.url}`, null, { method: c.method ?? "GET", headers: c.headers, body: c.body });
  const text = await res.text();
  const label = `${c.method ?? "GET"} ${c.url} (${JSON.stringify(c.headers ?? {}).slice(0, 120)})`;
  expect(res.status, `${label}: ${text.slice(0, 300)}`).toBe(status);
  expect(res.headers.get("content-type"), label).toBe("application/problem+json");
  const problem = JSON.parse(text);
  expect(problem, label).toMatchObject({ status, type: expect.stringMatching(/^https:\/\//), title: expect.any(String), detail: expect.any(String) });
  expect(problem.detail.length, label).toBeGreaterThan(10);
  if (detail) expect(problem.detail, label).toMatch(detail);
  // Nothing leaks: no stack traces, no SQL.
  expect(text, label).not.toMatch(/at \w+ \(|node_modules|SELECT |prisma/i);

  const after = await tableSnapshot(db.sql);
  const audited = opts.auditedAs !== undefined && handler.action !== undefined;
  const { audit_log: auditBefore, ...restBefore } = before;
  const { audit_log: auditAfter, ...restAfter } = after;
  expect(restAfter, `${label}: tables changed`).toEqual(restBefore);
  expect(auditAfter.rows - auditBefore.rows, `${label}: audit entries written`).toBe(audited ? 1 : 0);
  if (audited) {
    const entry = await db.prisma.auditEntry.findFirstOrThrow({ where: { id: { gt: lastAudit?.id ?? 0n } } });
    expect(entry).toMatchObject({ action: handler.action, outcome: "refused", actorId: String(opts.auditedAs) });
    expect(JSON.stringify(entry.detail)).toContain(String(status));
  }
  return problem;
}

const json = (body: unknown, extra: Record<string, string> = {}) => ({
  headers: { "content-type": "application/json", ...bearer, ...extra },
  body: typeof body === "string" ? body : JSON.stringify(body),
});

describe("malformed Authorization headers → 401, nothing written", () => {
  const headers = () => [
    { authorization: "Basic YWRtaW46c2VjcmV0" },
    { authorization: "Bearer" },
    { authorization: "Bearer " },
    { authorization: "Bearer  ic_two_spaces" },
    { authorization: "Bearer a b" },
    { authorization: "bearer" + bearer.authorization.slice(6) + "x" },
    { authorization: "Bearer ic_\u00e4\u00f6\u00fc\u00df_n\u00f6n-\u00e4scii" },
    { authorization: `Bearer ${"A".repeat(10 * 1024)}` },
    { authorization: `Bearer ic_${"a".repeat(12)}_${"B".repeat(43)}` },
    { authorization: "" },
    { authorization: "Token abc" },
  ];

  it("on GET /api/v1/audit, /export and /verify", async () => {
    for (const h of headers()) {
      for (const [route, url] of [
        [audit, "/api/v1/audit"],
        [auditExport, "/api/v1/audit/export"],
        [auditVerify, "/api/v1/audit/verify"],
      ] as const) {
        await expectRefused(route.GET!, { url, headers: h }, 401);
      }
    }
  });

  it("on POST /api/v1/users (with a valid body)", async () => {
    for (const h of headers()) {
      const body = JSON.stringify({ email: "new@bad-input.test", roles: ["viewer"], reason: "bad auth test" });
      await expectRefused(users.POST, { url: "/api/v1/users", method: "POST", headers: { "content-type": "application/json", ...h }, body }, 401);
    }
  });

  it("a session cookie does not count when a (bad) Authorization header is present", async () => {
    await expectRefused(audit.GET!, { url: "/api/v1/audit", headers: { cookie, authorization: "Bearer nope" } }, 401);
  });
});

describe("unknown, repeated or out-of-range query parameters → 400, nothing written", () => {
  it("on the audit routes", async () => {
    for (const [route, url] of [
      [audit, "/api/v1/audit?verbose=1"],
      [audit, "/api/v1/audit?limit=201"],
      [audit, "/api/v1/audit?limit=-1"],
      [audit, "/api/v1/audit?cursor=abc"],
      [audit, "/api/v1/audit?outcome=done&outcome=refused"],
      [audit, "/api/v1/audit?from=yesterday"],
      [audit, "/api/v1/audit?from=2026-02-01&to=2026-01-01"],
      [audit, `/api/v1/audit?actor=${"x".repeat(10_000)}`],
      [audit, "/api/v1/audit?targetTable=Robert');DROP TABLE audit_log;--"],
      [auditExport, "/api/v1/audit/export?limit=10"],
      [auditExport, "/api/v1/audit/export?format=xlsx"],
      [auditVerify, "/api/v1/audit/verify?repair=1"],
      [audit, "/api/v1/audit?%00=1"],
    ] as const) {
      await expectRefused(route.GET!, { url, headers: bearer }, 400, /query|more than once/);
    }
  });

  it("on POST /api/v1/users (audited as a refusal)", async () => {
    const body = { email: "query@bad-input.test", roles: ["viewer"], reason: "query test" };
    await expectRefused(users.POST, { url: "/api/v1/users?dryRun=1", method: "POST", ...json(body) }, 400, /dryRun/, { auditedAs: adminId });
  });
});

describe("bodies: wrong content type → 415, too large → 413, invalid JSON → 400", () => {
  const mutations = () => [
    {
      name: "POST /api/v1/users",
      handler: users.POST,
      url: "/api/v1/users",
      valid: { email: "x@bad-input.test", roles: ["viewer"], reason: "bad body test" },
    },
    {
      name: "POST /api/v1/tokens",
      handler: tokens.POST,
      url: "/api/v1/tokens",
      valid: { name: "bad body test", scopes: ["records.read"], reason: "bad body test" },
    },
  ];

  it("on POST /api/v1/users and /api/v1/tokens", async () => {
    for (const m of mutations()) {
      const call = (headers: Record<string, string>, body: BodyInit): Call => ({ url: m.url, method: "POST", headers: { ...bearer, ...headers }, body });
      const valid = JSON.stringify(m.valid);
      const audited = { auditedAs: adminId };
      // Wrong or missing content types, even with a perfectly good JSON body.
      for (const type of [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/json-patch+json",
        "application/jsonx",
        "text/json",
      ]) {
        await expectRefused(m.handler, call({ "content-type": type }, valid), 415, /application\/json/, audited);
      }
      await expectRefused(m.handler, call({}, new URLSearchParams({ email: "x@y.z", reason: "form" })), 415, /application\/json/, audited);
      await expectRefused(m.handler, call({ "content-type": "" }, valid), 415, /application\/json/, audited);
      // Too large: by its declared length, by its actual length, and streamed without a length.
      const huge = JSON.stringify({ ...m.valid, reason: "x".repeat(MAX_BODY_BYTES) });
      await expectRefused(m.handler, call({ "content-type": "application/json" }, huge), 413, /limited/, audited);
      await expectRefused(m.handler, call({ "content-type": "application/json", "content-length": String(MAX_BODY_BYTES + 1) }, huge), 413, /limited/, audited);
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          for (let i = 0; i < 20; i++) controller.enqueue(new TextEncoder().encode("x".repeat(8192)));
          controller.close();
        },
      });
      await expectRefused(m.handler, call({ "content-type": "application/json" }, stream), 413, /limited/, audited);
      // Not JSON, or JSON of the wrong shape.
      for (const body of ["{", "{'email': 'x'}", "", "\u0000", `{"reason": "trailing", }`, "NaN"]) {
        await expectRefused(m.handler, call({ "content-type": "application/json" }, body), 400, /JSON|body/, audited);
      }
      for (const body of ["null", "[]", '"a string"', "42", "{}"]) {
        await expectRefused(m.handler, call({ "content-type": "application/json; charset=utf-8" }, body), 400, /body/, audited);
      }
      // Unknown fields, and a reason that is missing or too long.
      await expectRefused(
        m.handler,
        call({ "content-type": "application/json" }, JSON.stringify({ ...m.valid, isAdmin: true })),
        400,
        /isAdmin|nrecognized/,
        audited,
      );
      await expectRefused(m.handler, call({ "content-type": "application/json" }, JSON.stringify({ ...m.valid, reason: undefined })), 400, /reason/, audited);
      await expectRefused(
        m.handler,
        call({ "content-type": "application/json" }, JSON.stringify({ ...m.valid, reason: "r".repeat(5000) })),
        400,
        /reason/,
        audited,
      );
    }
  });

  it("overlong and malformed emails on POST /api/v1/users → 400", async () => {
    const body = (email: unknown) => ({ email, roles: ["viewer"], reason: "email test" });
    for (const email of [
      `${"a".repeat(10_000)}@example.test`,
      `a@${"b".repeat(10_000)}.test`,
      "no-at-sign",
      "",
      " @ ",
      42,
      null,
      ["a@b.test"],
      "a@b.test\u0000",
      "Robert'); DROP TABLE console_users;--@x.test",
    ]) {
      await expectRefused(users.POST, { url: "/api/v1/users", method: "POST", ...json(body(email)) }, 400, /email/, { auditedAs: adminId });
    }
    await expectRefused(users.POST, { url: "/api/v1/users", method: "POST", ...json({ ...body("ok@bad-input.test"), roles: ["superuser"] }) }, 400, /roles/, {
      auditedAs: adminId,
    });
  });

  it("a cookie-authenticated mutation without same-origin headers → 403 (CSRF), nothing written", async () => {
    const body = JSON.stringify({ email: "csrf@bad-input.test", roles: ["viewer"], reason: "csrf test" });
    await expectRefused(
      users.POST,
      { url: "/api/v1/users", method: "POST", headers: { cookie, "content-type": "application/json" }, body },
      403,
      /CSRF|Cross-site/,
    );
    await expectRefused(
      users.POST,
      {
        url: "/api/v1/users",
        method: "POST",
        headers: { cookie, "content-type": "application/json", origin: "https://evil.example", "sec-fetch-site": "cross-site" },
        body,
      },
      403,
      /CSRF|Cross-site/,
    );
  });
});

describe("the audit routes refuse other methods with 405 problem+json, nothing written", () => {
  it("POST, PUT, PATCH, DELETE", async () => {
    for (const [route, url] of [
      [audit, "/api/v1/audit"],
      [auditExport, "/api/v1/audit/export"],
      [auditVerify, "/api/v1/audit/verify"],
    ] as const) {
      for (const method of ["POST", "PUT", "PATCH", "DELETE"] as const) {
        const problem = await expectRefused(route[method]!, { url, method, ...json({ reason: "x" }) }, 405, /GET/);
        expect(problem.type).toMatch(/method-not-allowed$/);
      }
    }
  });
});
