import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROLES } from "@/lib/auth/permissions";
import { parseRequestInput } from "@/lib/api/schemas";
import { provideDatabase } from "@/lib/db/client";
import { z } from "zod";
import { createTestDatabase, type TestDatabase } from "./helpers/db";
import { pendingRecord } from "./helpers/pending-records";
import { call, json, tokenFor } from "./helpers/records-api";

/**
 * The issue 11 findings, one by one, against the real route handlers: each was a
 * 500 (PostgreSQL refusing a NUL byte, 22021, or a bigint overflowing, 22003) and
 * is now a 400 problem naming the field, from the one input boundary every route
 * goes through (lib/api/schemas.ts parseRequestInput, called by lib/api/handler.ts).
 * A refused mutation is audited as refused, and it is not stored under its
 * Idempotency-Key: the same key with a corrected body then runs.
 */

let db: TestDatabase;
let admin: { token: string; userId: bigint };

beforeAll(async () => {
  db = await createTestDatabase();
  provideDatabase(db);
  admin = await tokenFor(db, [...ROLES]);
});
afterAll(() => db?.drop());

const mod = (p: string) => import(/* @vite-ignore */ `@/app/api/v1/${p}/route`);

async function expect400(res: Response, field: RegExp) {
  const text = await res.text();
  expect(res.status, text).toBe(400);
  expect(res.headers.get("content-type")).toBe("application/problem+json");
  const problem = JSON.parse(text);
  expect(problem.detail).toMatch(field);
  expect(problem.errors?.length).toBeGreaterThan(0);
  return problem;
}

const post = (body: unknown, key: string | null = randomUUID()) => ({
  method: "POST",
  headers: { "content-type": "application/json", ...(key ? { "idempotency-key": key } : {}) },
  body: JSON.stringify(body),
});

describe("the issue's 500s are 400s naming the field", () => {
  it("NUL in query text: audit actor / targetId, audit export, queue provider", async () => {
    const audit = await mod("audit");
    const exp = await mod("audit/export");
    const queue = await mod("queue");
    await expect400(await call(audit.GET, "/api/v1/audit?actor=%00", admin.token), /actor must not contain NUL/);
    await expect400(await call(audit.GET, "/api/v1/audit?targetId=a%00", admin.token), /targetId must not contain NUL/);
    await expect400(await call(exp.GET, "/api/v1/audit/export?actor=%00", admin.token), /actor must not contain NUL/);
    await expect400(await call(queue.GET, "/api/v1/queue?provider=a%00b", admin.token), /provider must not contain NUL/);
  });

  it("integers past bigint: audit cursor, purges before", async () => {
    const audit = await mod("audit");
    const purges = await mod("purges");
    await expect400(await call(audit.GET, "/api/v1/audit?cursor=9999999999999999999", admin.token), /cursor is outside the range of a 64-bit integer/);
    await expect400(await call(purges.GET, "/api/v1/purges?before=9223372036854775808", admin.token), /before is outside the range/);
    // The largest bigint is fine.
    expect((await call(purges.GET, "/api/v1/purges?before=9223372036854775807", admin.token)).status).toBe(200);
  });

  it("NUL in bodies: resolve providerReference, compensations reason, legal holds, users name — refused, audited as refused, nothing stored under the key", async () => {
    const rec = await pendingRecord(db);
    const resolve = await mod("records/[id]/resolve");
    const key = randomUUID();
    const bad = { outcome: "completed", providerReference: "ch_\u0000", reason: "bank statement says so", expectedVersion: rec.version };
    const auditBefore = await db.prisma.auditEntry.count();
    await expect400(
      await call(resolve.POST, `/api/v1/records/${rec.id}/resolve`, admin.token, post(bad, key), { id: String(rec.id) }),
      /providerReference must not contain NUL/,
    );
    const refusal = await db.prisma.auditEntry.findFirstOrThrow({ where: { action: "records.resolve" }, orderBy: { id: "desc" } });
    expect(refusal).toMatchObject({ outcome: "refused" });
    expect(await db.prisma.auditEntry.count()).toBe(auditBefore + 1);
    // The same key with the corrected body runs (the refusal was never an answer stored under it).
    const ok = await call(resolve.POST, `/api/v1/records/${rec.id}/resolve`, admin.token, post({ ...bad, providerReference: "ch_fixed" }, key), {
      id: String(rec.id),
    });
    expect(ok.status, await ok.clone().text()).toBe(200);
    expect(ok.headers.get("idempotent-replayed")).toBeNull();

    const compensations = await mod("compensations");
    await expect400(
      await call(compensations.POST, "/api/v1/compensations", admin.token, post({ recordId: String(rec.id), kind: "refund", reason: "dup\u0000licate" })),
      /reason must not contain NUL/,
    );
    expect(await db.prisma.auditEntry.findFirstOrThrow({ where: { action: "compensations.request" }, orderBy: { id: "desc" } })).toMatchObject({
      outcome: "refused",
    });

    const holds = await mod("legal-holds");
    await expect400(
      await call(holds.POST, "/api/v1/legal-holds", admin.token, post({ scope: "tenant:a", reason: "court\u0000order" })),
      /reason must not contain NUL/,
    );
    const lift = await mod("legal-holds/[id]/lift");
    await expect400(await call(lift.POST, "/api/v1/legal-holds/1/lift", admin.token, post({ reason: "\u0000" }), { id: "1" }), /reason must not contain NUL/);
    const users = await mod("users");
    await expect400(
      await call(users.POST, "/api/v1/users", admin.token, post({ email: "nul@example.test", name: "N\u0000L", roles: ["viewer"], reason: "new colleague" })),
      /name must not contain NUL/,
    );
    expect(await db.prisma.consoleUser.count({ where: { email: "nul@example.test" } })).toBe(0);
  });

  it("a lone surrogate in a JSON body (jsonb refuses it) and a NUL in a key are refused the same way", async () => {
    const views = await mod("views");
    await expect400(
      await call(views.POST, "/api/v1/views", admin.token, post({ page: "/records", name: "x\ud800", query: "" })),
      /name must not contain NUL characters or unpaired UTF-16 surrogates/,
    );
    await expect400(await call(views.POST, "/api/v1/views", admin.token, post({ page: "/records", name: "ok", query: "", "k\u0000": 1 })), /\(a key\)/);
  });

  it("the boundary as a function: every bad field named, in the query, the path and the body", () => {
    const schema = z.object({ a: z.string(), b: z.string().regex(/^\d+$/).transform(BigInt), c: z.array(z.string()) }).strict();
    expect(() => parseRequestInput(schema, { a: "x\u0000", b: "1", c: ["ok", "\u0000"] }, "body")).toThrow(
      /invalid body: a must not contain NUL.*; c\.1 must not contain NUL/,
    );
    expect(() => parseRequestInput(schema, { a: "x", b: "9223372036854775808", c: [] }, "query")).toThrow(
      /invalid query: b is outside the range of a 64-bit integer/,
    );
    expect(parseRequestInput(schema, { a: "x", b: "9223372036854775807", c: [] }, "path")).toEqual({ a: "x", b: 9223372036854775807n, c: [] });
  });
});

describe("texts as long as every database stores them (MySQL: 255 characters where a column is indexed, ADR 0012)", () => {
  it("the longest key, user name, token name and view name the API accepts are stored; one character more is a 400 naming the field", async () => {
    const users = await mod("users");
    const longest = "k".repeat(255);
    const ok = await call(
      users.POST,
      "/api/v1/users",
      admin.token,
      post({ email: "long@example.test", name: "n".repeat(200), roles: ["viewer"], reason: "limits" }, longest),
    );
    expect(ok.status, await ok.clone().text()).toBe(201);
    expect((await db.prisma.consoleUser.findUniqueOrThrow({ where: { email: "long@example.test" } })).name).toHaveLength(200);
    const again = await call(
      users.POST,
      "/api/v1/users",
      admin.token,
      post({ email: "long@example.test", name: "n".repeat(200), roles: ["viewer"], reason: "limits" }, longest),
    );
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    await expect400(
      await call(users.POST, "/api/v1/users", admin.token, post({ email: "longer@example.test", roles: ["viewer"], reason: "limits" }, `${longest}k`)),
      /Idempotency-Key header.*at most 255/,
    );
    await expect400(
      await call(users.POST, "/api/v1/users", admin.token, post({ email: "longer@example.test", name: "n".repeat(201), roles: ["viewer"], reason: "limits" })),
      /name must be at most 200/,
    );
    await expect400(
      await call(users.POST, "/api/v1/users", admin.token, post({ email: `${"e".repeat(250)}@example.test`, roles: ["viewer"], reason: "limits" })),
      /email must be at most 254/,
    );
    const tokens = await mod("tokens");
    expect((await call(tokens.POST, "/api/v1/tokens", admin.token, post({ name: "t".repeat(100), scopes: ["stats.read"], reason: "limits" }))).status).toBe(
      201,
    );
    await expect400(
      await call(tokens.POST, "/api/v1/tokens", admin.token, post({ name: "t".repeat(101), scopes: ["stats.read"], reason: "limits" })),
      /name must be at most 100/,
    );
    const views = await mod("views");
    expect((await call(views.POST, "/api/v1/views", admin.token, post({ page: "/records", name: "v".repeat(100), query: "" }))).status).toBe(201);
    await expect400(
      await call(views.POST, "/api/v1/views", admin.token, post({ page: "/records", name: "v".repeat(101), query: "" })),
      /name must be at most 100/,
    );
  });
});

describe("regressions the fuzz suite found", () => {
  it("GET /api/v1/queue?kind=reconciliation&status=pending (kinds that exclude each other) lists nothing instead of a 500", async () => {
    const queue = await mod("queue");
    const res = await call(queue.GET, "/api/v1/queue?kind=reconciliation&status=pending&scope=s&provider=p", admin.token);
    expect(res.status, await res.clone().text()).toBe(200);
    expect((await json(res)).items).toEqual([]);
  });
});
