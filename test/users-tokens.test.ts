import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as tokenItemRoute from "@/app/api/v1/tokens/[id]/route";
import * as tokensRoute from "@/app/api/v1/tokens/route";
import * as userItemRoute from "@/app/api/v1/users/[id]/route";
import * as usersRoute from "@/app/api/v1/users/route";
import { verifyAuditChain } from "@/lib/audit";
import { dummyVerifyPassword, hashPassword, passwordNeedsRehash, passwordPolicyError, verifyPassword } from "@/lib/auth/password";
import { permissionsOf, type Principal, type Role } from "@/lib/auth/permissions";
import { createApiToken, listApiTokens, revokeApiToken } from "@/lib/auth/token-admin";
import { verifyApiToken } from "@/lib/auth/tokens";
import { AdminLockoutError, createUser, disableUser, enableUser, listUsers, setRoles, type SystemActor, type UserView } from "@/lib/auth/users";
import { openDatabase, provideDatabase } from "@/lib/db/client";
import { byDialect } from "@/lib/db/dialect";
import { createEmptyTestDatabase, createTestDatabase, usingDatabaseServer, type TestDatabase } from "./helpers/db";
import { call as callRoute, type RouteParams } from "./helpers/records-api";

const ROOT = path.resolve(import.meta.dirname, "..");
const SYSTEM: SystemActor = { type: "system", label: "test setup" };
const PASSWORD = "correct horse battery staple";
const ADMIN_SCOPES = [...permissionsOf(["admin"])];

let db: TestDatabase;
let root: UserView; // the admin every API call below acts as
let rootToken: string;
/** Every plaintext token this file sees, to prove none is stored anywhere. */
const plaintexts: string[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  provideDatabase(db); // the route handlers' db() is this database
  root = await createUser(db.prisma, SYSTEM, { email: "root@example.com", name: "Root", password: PASSWORD, roles: ["admin"], reason: "first admin" });
  rootToken = (await createApiToken(db.prisma, SYSTEM, { userId: root.id, name: "root", scopes: ADMIN_SCOPES, reason: "test setup" })).token;
  plaintexts.push(rootToken);
});
afterAll(() => db?.drop());

// ---------------------------------------------------------------------------
// helpers

/** Next's params for an [id] route. */
const idParams = (id: string | bigint | number) => ({ id: String(id) });

/** Calls a route handler (helpers/records-api call) with a request id and a JSON body, and reads the answer. */
async function call(
  handler: Parameters<typeof callRoute>[0],
  method: string,
  url: string,
  opts: { token?: string; body?: unknown; rawBody?: string; params?: RouteParams } = {},
) {
  const headers: Record<string, string> = { "x-request-id": `req-${Math.random().toString(36).slice(2)}`, "user-agent": "vitest" };
  const body = opts.rawBody ?? (opts.body === undefined ? undefined : JSON.stringify(opts.body));
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await callRoute(handler, url, opts.token ?? null, { method, headers, body }, opts.params);
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: text ? JSON.parse(text) : null, requestId: headers["x-request-id"] };
}

let seq = 0;
const email = (label: string) => `${label}-${++seq}@example.com`;

async function makeUser(roles: Role[], opts: { password?: string } = {}) {
  return createUser(db.prisma, SYSTEM, { email: email(roles.join("-")), password: opts.password, roles, reason: "fixture" });
}

async function makeToken(user: UserView, scopes: string[], opts: { days?: number } = {}) {
  const { token, apiToken } = await createApiToken(db.prisma, SYSTEM, {
    userId: user.id,
    name: `fixture ${++seq}`,
    scopes: scopes as never,
    expiresInDays: opts.days,
    reason: "fixture",
  });
  plaintexts.push(token);
  return { token, apiToken };
}

function principalOf(user: UserView): Principal {
  return { kind: "user", userId: BigInt(user.id), email: user.email, roles: user.roles, permissions: permissionsOf(user.roles) };
}

const counts = async () => ({
  users: await db.prisma.consoleUser.count(),
  tokens: await db.prisma.apiToken.count(),
  audit: await db.prisma.auditEntry.count(),
});

const auditOf = (action: string, targetId?: string) =>
  db.prisma.auditEntry.findMany({ where: { action, ...(targetId ? { targetId } : {}) }, orderBy: { id: "asc" } });

const jsonText = (v: unknown) => JSON.stringify(v, (_k, x) => (typeof x === "bigint" ? x.toString() : x));

const lastAudit = async () => (await db.prisma.auditEntry.findFirst({ orderBy: { id: "desc" } }))!;

function expectProblem(r: { status: number; headers: Headers; json: { status?: number; detail?: string } }, status: number, detail?: RegExp) {
  expect(r.status, JSON.stringify(r.json)).toBe(status);
  expect(r.headers.get("content-type")).toBe("application/problem+json");
  expect(r.json.status).toBe(status);
  if (detail) expect(r.json.detail).toMatch(detail);
}

/** Makes every audit append with this reason fail: a failure *after* the change, inside its transaction. */
async function withFailingAudit(reason: string, fn: () => Promise<void>) {
  await db.sql.exec(
    byDialect(db, {
      postgres: `
    CREATE OR REPLACE FUNCTION test_fail_audit() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.reason = '${reason}' THEN RAISE EXCEPTION 'forced failure after the change'; END IF;
      RETURN NEW;
    END $$;
    CREATE TRIGGER test_fail_audit BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION test_fail_audit();`,
      mysql: `
    CREATE TRIGGER test_fail_audit BEFORE INSERT ON audit_log FOR EACH ROW
    BEGIN
      IF NEW.reason = '${reason}' THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'forced failure after the change'; END IF;
    END`,
    }),
  );
  try {
    await fn();
  } finally {
    await db.sql.exec(
      byDialect(db, { postgres: `DROP TRIGGER test_fail_audit ON audit_log; DROP FUNCTION test_fail_audit();`, mysql: `DROP TRIGGER test_fail_audit` }),
    );
  }
}

/** Active admins, counted in the process: `roles: { has: … }` is PostgreSQL's list filter (a JSON array on MySQL). */
const activeAdmins = async () => (await db.prisma.consoleUser.findMany({ where: { disabledAt: null } })).filter((u) => u.roles.includes("admin")).length;

// ---------------------------------------------------------------------------

describe("passwords", () => {
  it("hashes with scrypt N=2^15 r=8 p=1, a 16-byte salt and a 64-byte key; verifies; a wrong password fails", async () => {
    const stored = await hashPassword(PASSWORD);
    expect(stored).toMatch(/^scrypt\$32768\$8\$1\$[A-Za-z0-9+/]{22}==\$[A-Za-z0-9+/]{86}==$/);
    expect(stored).not.toContain(PASSWORD);
    expect(await verifyPassword(PASSWORD, stored)).toBe(true);
    expect(await verifyPassword(PASSWORD.toUpperCase(), stored)).toBe(false);
    expect(await verifyPassword(`${PASSWORD} `, stored)).toBe(false);
    expect(await verifyPassword("", stored)).toBe(false);
    expect(passwordNeedsRehash(stored)).toBe(false);
  });

  it("salts every hash differently", async () => {
    const [a, b] = await Promise.all([hashPassword(PASSWORD), hashPassword(PASSWORD)]);
    expect(a).not.toBe(b);
    expect(a.split("$")[4]).not.toBe(b.split("$")[4]);
    expect(await verifyPassword(PASSWORD, a)).toBe(true);
    expect(await verifyPassword(PASSWORD, b)).toBe(true);
  });

  it("enforces the policy (12–200 characters, not only whitespace) without echoing the password", async () => {
    expect(passwordPolicyError("a".repeat(11))).toMatch(/at least 12/);
    expect(passwordPolicyError("a".repeat(12))).toBeNull();
    expect(passwordPolicyError("a".repeat(200))).toBeNull();
    expect(passwordPolicyError("a".repeat(201))).toMatch(/at most 200/);
    expect(passwordPolicyError(" ".repeat(12))).toMatch(/whitespace/);
    expect(passwordPolicyError("🔑".repeat(12))).toBeNull(); // code points, not UTF-16 units
    // Sign-in refuses NUL and lone surrogates (lib/auth/sign-in.ts), so no account may get one.
    expect(passwordPolicyError("long-enough-secret\u0000")).toMatch(/NUL/);
    expect(passwordPolicyError("long-enough-secret\ud800")).toMatch(/surrogate/);
    await expect(hashPassword("short-secret")).resolves.toMatch(/^scrypt\$/);
    const err = await hashPassword("tiny-secret").catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).not.toContain("tiny-secret");
  });

  it("missing or malformed stored hashes fail after a full-cost dummy verification", async () => {
    const stored = await hashPassword(PASSWORD);
    for (const bad of [null, undefined, "", "plain", "scrypt$3$8$1$AAAA$BBBB", stored.replace("$32768$", "$2097152$")]) {
      expect(await verifyPassword(PASSWORD, bad)).toBe(false);
    }
    expect(await dummyVerifyPassword(PASSWORD)).toBe(false);
    // Older parameters still verify (and ask for a re-hash).
    expect(passwordNeedsRehash(stored.replace("$32768$", "$16384$"))).toBe(true);
    const time = async (fn: () => Promise<unknown>) => {
      const t = performance.now();
      await fn();
      return performance.now() - t;
    };
    const median = async (fn: () => Promise<unknown>) => {
      const ts = [await time(fn), await time(fn), await time(fn)].sort((a, b) => a - b);
      return ts[1];
    };
    const real = await median(() => verifyPassword("wrong password here", stored));
    const unknownUser = await median(() => verifyPassword("wrong password here", null));
    expect(unknownUser).toBeGreaterThan(real * 0.3);
  });
});

describe("users", () => {
  it("POST /api/v1/users creates the user and its audit entry (before/after, reason, never the hash)", async () => {
    const before = await counts();
    const r = await call(usersRoute.POST, "POST", "/api/v1/users", {
      token: rootToken,
      body: { email: "  Alice.Smith@Example.COM ", name: " Alice ", password: PASSWORD, roles: ["support", "viewer", "support"], reason: "new support hire" },
    });
    expect(r.status, r.text).toBe(201);
    expect(r.headers.get("cache-control")).toBe("no-store");
    const user = r.json.user as UserView;
    expect(user).toMatchObject({
      email: "alice.smith@example.com",
      name: "Alice",
      roles: ["viewer", "support"],
      disabled: false,
      hasPassword: true,
      sso: false,
    });
    expect(user.id).toMatch(/^\d+$/);
    expect(r.text).not.toMatch(/scrypt|passwordHash|password_hash/);
    expect(r.text).not.toContain(PASSWORD);

    const row = await db.prisma.consoleUser.findUniqueOrThrow({ where: { id: BigInt(user.id) } });
    expect(await verifyPassword(PASSWORD, row.passwordHash)).toBe(true);
    expect(await counts()).toEqual({ users: before.users + 1, tokens: before.tokens, audit: before.audit + 1 });

    const [entry] = await auditOf("users.create", user.id);
    expect(entry).toMatchObject({
      actorType: "token",
      actorId: root.id,
      action: "users.create",
      targetTable: "console_users",
      reason: "new support hire",
      outcome: "done",
      requestId: r.requestId,
      userAgent: "vitest",
      before: null,
    });
    expect(entry.after).toMatchObject({ email: "alice.smith@example.com", roles: ["viewer", "support"], hasPassword: true, disabledAt: null });
    expect(jsonText(entry)).not.toMatch(/scrypt|passwordHash|correct horse/);
  });

  it("invites without a password (SSO-only or set later)", async () => {
    const r = await call(usersRoute.POST, "POST", "/api/v1/users", {
      token: rootToken,
      body: { email: email("invitee"), roles: ["viewer"], reason: "invite" },
    });
    expect(r.status, r.text).toBe(201);
    expect(r.json.user).toMatchObject({ hasPassword: false, name: null });
  });

  it("a duplicate email (any case) is a 409 with a clear message; nothing is written but the refusal", async () => {
    const first = await makeUser(["viewer"]);
    const before = await counts();
    const r = await call(usersRoute.POST, "POST", "/api/v1/users", {
      token: rootToken,
      body: { email: first.email.toUpperCase(), roles: ["admin"], reason: "again" },
    });
    expectProblem(r, 409, new RegExp(`${first.email.replace(".", "\\.")} already exists`));
    expect(await counts()).toEqual({ ...before, audit: before.audit + 1 });
    expect(await lastAudit()).toMatchObject({ action: "users.create", outcome: "refused", reason: "again", detail: { status: 409, email: first.email } });
    // The same through the library (the CLI's path).
    await expect(createUser(db.prisma, SYSTEM, { email: first.email, roles: ["viewer"], reason: "cli" })).rejects.toMatchObject({ status: 409 });
    // Racing creations of one new email: one wins, the others get the same 409 (the unique index decides).
    const racing = email("race");
    const results = await Promise.allSettled(
      Array.from({ length: 5 }, () => createUser(db.prisma, SYSTEM, { email: racing, roles: ["viewer"], reason: "race" })),
    );
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    for (const r of results.filter((r) => r.status === "rejected")) {
      expect((r as PromiseRejectedResult).reason).toMatchObject({ status: 409, message: expect.stringMatching(/already exists/) });
    }
    expect(await db.prisma.consoleUser.count({ where: { email: racing } })).toBe(1);
  });

  it("refuses bad input with 400 naming the field, writing nothing but the wrapper's refusal entry", async () => {
    const bodies: [unknown, RegExp][] = [
      [{ email: "not-an-email", roles: ["viewer"], reason: "x y z" }, /email/],
      [{ email: `${"a".repeat(250)}@example.com`, roles: ["viewer"], reason: "x y z" }, /email/],
      [{ email: email("b"), roles: [], reason: "x y z" }, /roles/],
      [{ email: email("b"), roles: ["root"], reason: "x y z" }, /roles/],
      [{ email: email("b"), roles: ["viewer"], password: "too-short", reason: "x y z" }, /password .*at least 12/],
      [{ email: email("b"), roles: ["viewer"] }, /reason/],
      [{ email: email("b"), roles: ["viewer"], reason: "x y z", isAdmin: true }, /isAdmin|unrecognized/i],
    ];
    for (const [body, detail] of bodies) {
      const before = await counts();
      const r = await call(usersRoute.POST, "POST", "/api/v1/users", { token: rootToken, body });
      expectProblem(r, 400, detail);
      expect(r.text).not.toContain("too-short");
      expect(await counts()).toEqual({ ...before, audit: before.audit + 1 });
      expect(await lastAudit()).toMatchObject({ action: "users.create", outcome: "refused" });
    }
  });

  it("a change and its audit entry commit together: a failure after the change leaves nothing behind", async () => {
    const existing = await makeUser(["viewer"]);
    const token = await makeToken(existing, ["stats.read"]);
    const before = await counts();
    await withFailingAudit("force a failure", async () => {
      const failedEmail = email("ghost");
      await expect(createUser(db.prisma, SYSTEM, { email: failedEmail, password: PASSWORD, roles: ["viewer"], reason: "force a failure" })).rejects.toThrow(
        /forced failure/,
      );
      expect(await db.prisma.consoleUser.findUnique({ where: { email: failedEmail } })).toBeNull();

      await expect(setRoles(db.prisma, SYSTEM, { userId: existing.id, roles: ["operator"], reason: "force a failure" })).rejects.toThrow(/forced failure/);
      await expect(disableUser(db.prisma, SYSTEM, { userId: existing.id, reason: "force a failure" })).rejects.toThrow(/forced failure/);
      expect(await db.prisma.consoleUser.findUniqueOrThrow({ where: { id: BigInt(existing.id) } })).toMatchObject({ roles: ["viewer"], disabledAt: null });

      await expect(
        createApiToken(db.prisma, SYSTEM, { userId: existing.id, name: "ghost", scopes: ["stats.read"], reason: "force a failure" }),
      ).rejects.toThrow(/forced failure/);
      await expect(revokeApiToken(db.prisma, SYSTEM, { tokenId: token.apiToken.id, reason: "force a failure" })).rejects.toThrow(/forced failure/);
      expect((await verifyApiToken(db.prisma, token.token)).ok).toBe(true);

      // Through the API: a 500 problem without internals, and still nothing written.
      const r = await call(usersRoute.POST, "POST", "/api/v1/users", {
        token: rootToken,
        body: { email: failedEmail, roles: ["viewer"], reason: "force a failure" },
      });
      expectProblem(r, 500);
      expect(r.text).not.toMatch(/forced failure|audit_log/);
    });
    expect(await counts()).toEqual(before);
    expect(await verifyAuditChain(db.prisma)).toMatchObject({ intact: true });
  });

  it("PATCH roles: audited with before/after; the same roles again is a no-op success, audited as such", async () => {
    const u = await makeUser(["viewer"]);
    const r = await call(userItemRoute.PATCH, "PATCH", `/api/v1/users/${u.id}`, {
      params: idParams(u.id),
      token: rootToken,
      body: { roles: ["operator", "viewer"], reason: "joins on-call" },
    });
    expect(r.status, r.text).toBe(200);
    expect(r.json).toMatchObject({ noop: false, user: { id: u.id, roles: ["viewer", "operator"] } });
    const [entry] = await auditOf("users.update", u.id);
    expect(entry).toMatchObject({
      outcome: "done",
      reason: "joins on-call",
      before: { roles: ["viewer"] },
      after: { roles: ["viewer", "operator"] },
      detail: { noop: false, changes: ["roles"] },
    });

    const row = await db.prisma.consoleUser.findUniqueOrThrow({ where: { id: BigInt(u.id) } });
    const again = await call(userItemRoute.PATCH, "PATCH", `/api/v1/users/${u.id}`, {
      params: idParams(u.id),
      token: rootToken,
      body: { roles: ["viewer", "operator"], reason: "retry" },
    });
    expect(again.status).toBe(200);
    expect(again.json.noop).toBe(true);
    expect((await db.prisma.consoleUser.findUniqueOrThrow({ where: { id: BigInt(u.id) } })).updatedAt).toEqual(row.updatedAt);
    const entries = await auditOf("users.update", u.id);
    expect(entries).toHaveLength(2);
    expect(entries[1]).toMatchObject({ outcome: "done", reason: "retry", detail: { noop: true, changes: [] } });
  });

  it("disable: the user's tokens fail with user_disabled at once; disabling again is a no-op; enable restores them", async () => {
    const u = await makeUser(["support"]);
    const { token } = await makeToken(u, ["stats.read", "records.read"]);
    expect((await verifyApiToken(db.prisma, token)).ok).toBe(true);

    const r = await call(userItemRoute.PATCH, "PATCH", `/api/v1/users/${u.id}`, {
      params: idParams(u.id),
      token: rootToken,
      body: { disabled: true, reason: "left the company" },
    });
    expect(r.status, r.text).toBe(200);
    expect(r.json).toMatchObject({ noop: false, user: { disabled: true } });
    expect(await verifyApiToken(db.prisma, token)).toEqual({ ok: false, reason: "user_disabled" });
    const refused = await call(tokensRoute.GET, "GET", "/api/v1/tokens", { token });
    expectProblem(refused, 401, /user disabled/);

    const again = await call(userItemRoute.PATCH, "PATCH", `/api/v1/users/${u.id}`, {
      params: idParams(u.id),
      token: rootToken,
      body: { disabled: true, reason: "double check" },
    });
    expect(again.json.noop).toBe(true);

    const enabled = await enableUser(db.prisma, principalOf(root), { userId: u.id, reason: "came back" });
    expect(enabled).toMatchObject({ noop: false, user: { disabled: false } });
    expect((await verifyApiToken(db.prisma, token)).ok).toBe(true);
    const entries = await auditOf("users.update", u.id);
    expect(entries.map((e) => (e.detail as { noop: boolean }).noop)).toEqual([false, true, false]);
    expect(entries[0]).toMatchObject({ before: { disabledAt: null }, detail: { changes: ["disabled"] } });
    expect((entries[0].after as { disabledAt: string }).disabledAt).toMatch(/^\d{4}-/);
  });

  it("no self-lockout and never zero active admins — also when two admins demote each other at once", async () => {
    const self = await call(userItemRoute.PATCH, "PATCH", `/api/v1/users/${root.id}`, {
      params: idParams(root.id),
      token: rootToken,
      body: { roles: ["viewer"], reason: "oops" },
    });
    expectProblem(self, 409, /your own admin role/);
    expect(await lastAudit()).toMatchObject({ action: "users.update", outcome: "refused", targetId: root.id, detail: { status: 409 } });
    const selfDisable = await call(userItemRoute.PATCH, "PATCH", `/api/v1/users/${root.id}`, {
      params: idParams(root.id),
      token: rootToken,
      body: { disabled: true, reason: "oops" },
    });
    expectProblem(selfDisable, 409, /disable yourself/);

    // root is the only active admin: not even the system may demote or disable it.
    expect(await activeAdmins()).toBe(1);
    await expect(setRoles(db.prisma, SYSTEM, { userId: root.id, roles: ["viewer"], reason: "cli" })).rejects.toThrow(/last active admin/);
    await expect(disableUser(db.prisma, SYSTEM, { userId: root.id, reason: "cli" })).rejects.toBeInstanceOf(AdminLockoutError);

    // Keeping admin while adding roles is fine, for oneself too.
    expect((await setRoles(db.prisma, principalOf(root), { userId: root.id, roles: ["admin", "viewer"], reason: "also viewer" })).noop).toBe(false);

    // Two admins demoting each other concurrently: exactly one wins.
    const other = await makeUser(["admin"]);
    const rootNow = { ...root, roles: ["viewer", "admin"] as Role[] };
    const results = await Promise.allSettled([
      setRoles(db.prisma, principalOf(rootNow), { userId: other.id, roles: ["viewer"], reason: "race" }),
      setRoles(db.prisma, principalOf(other), { userId: root.id, roles: ["viewer"], reason: "race" }),
    ]);
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    const loser = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
    expect(loser.reason).toBeInstanceOf(AdminLockoutError);
    expect(await activeAdmins()).toBe(1);

    // Restore: root admin, the other one not.
    await setRoles(db.prisma, SYSTEM, { userId: root.id, roles: ["admin"], reason: "restore" });
    await setRoles(db.prisma, SYSTEM, { userId: other.id, roles: ["viewer"], reason: "restore" });
    expect((await verifyApiToken(db.prisma, rootToken)).ok).toBe(true);
  });

  it("GET lists users (never a hash); unknown ids 404, malformed ids 400, other methods 405; non-admins 403", async () => {
    const r = await call(usersRoute.GET, "GET", "/api/v1/users", { token: rootToken });
    expect(r.status).toBe(200);
    expect(r.json.users.map((u: UserView) => u.email)).toContain("alice.smith@example.com");
    expect(r.text).not.toMatch(/scrypt|passwordHash/);
    expect((await listUsers(db.prisma, SYSTEM)).length).toBe(r.json.users.length);

    expectProblem(
      await call(userItemRoute.PATCH, "PATCH", "/api/v1/users/999999", {
        params: idParams("999999"),
        token: rootToken,
        body: { disabled: true, reason: "who" },
      }),
      404,
      /No user/,
    );
    for (const id of ["abc", "0", "-1", "%E0%A4%A", "99999999999999999999", "9223372036854775808"]) {
      expectProblem(
        await call(userItemRoute.PATCH, "PATCH", `/api/v1/users/${id}`, { params: idParams(id), token: rootToken, body: { disabled: true, reason: "who" } }),
        400,
        /id/,
      );
    }
    expectProblem(await call(tokensRoute.GET, "GET", "/api/v1/tokens?owner=9223372036854775808", { token: rootToken }), 400, /owner/);
    expectProblem(
      await call(userItemRoute.PATCH, "PATCH", `/api/v1/users/${root.id}`, { params: idParams(root.id), token: rootToken, body: { reason: "nothing" } }),
      400,
      /roles and\/or disabled/,
    );
    for (const [handler, method, url, allow, params] of [
      [usersRoute.DELETE, "DELETE", "/api/v1/users", "GET, POST", {}],
      [userItemRoute.GET, "GET", `/api/v1/users/${root.id}`, "PATCH", idParams(root.id)],
      [tokensRoute.PUT, "PUT", "/api/v1/tokens", "GET, POST", {}],
      [tokenItemRoute.POST, "POST", "/api/v1/tokens/1", "DELETE", idParams(1)],
    ] as const) {
      const res = await call(handler, method, url, { token: rootToken, params });
      expectProblem(res, 405);
      expect(res.headers.get("allow")).toBe(allow);
    }

    const viewer = await makeUser(["viewer"]);
    const { token } = await makeToken(viewer, ["stats.read", "tokens.own"]);
    expectProblem(await call(usersRoute.GET, "GET", "/api/v1/users", { token }), 403, /users\.manage/);
    expectProblem(await call(usersRoute.POST, "POST", "/api/v1/users", { token, body: { email: email("x"), roles: ["admin"], reason: "escalate" } }), 403);
    expectProblem(await call(usersRoute.GET, "GET", "/api/v1/users"), 401);
    // The library refuses on its own too (defence in depth), and audits it.
    await expect(createUser(db.prisma, principalOf(viewer), { email: email("x"), roles: ["admin"], reason: "escalate" })).rejects.toMatchObject({
      status: 403,
    });
    expect(await lastAudit()).toMatchObject({ action: "users.create", outcome: "refused", actorId: viewer.id });
  });
});

describe("API tokens", () => {
  it("POST /api/v1/tokens shows the token once (201); it verifies with exactly its scopes", async () => {
    const u = await makeUser(["operator"]);
    const { token: own } = await makeToken(u, ["tokens.own", "stats.read", "records.read", "records.resolve"]);
    const r = await call(tokensRoute.POST, "POST", "/api/v1/tokens", {
      token: own,
      body: { name: " nightly job ", scopes: ["records.read", "stats.read", "records.read"], reason: "automation" },
    });
    expect(r.status, r.text).toBe(201);
    expect(r.headers.get("cache-control")).toBe("no-store");
    expect(r.json.token).toMatch(/^ic_[a-z0-9]{12}_[A-Za-z0-9_-]{43}$/);
    plaintexts.push(r.json.token);
    expect(r.json.apiToken).toMatchObject({
      name: "nightly job",
      userId: u.id,
      scopes: ["stats.read", "records.read"],
      status: "active",
      revokedAt: null,
      lastUsedAt: null,
    });
    expect(r.json.apiToken.prefix).toBe(`ic_${r.json.token.split("_")[1]}_…`);
    expect(r.json.apiToken).not.toHaveProperty("tokenHash");
    // The default expiry is 90 days.
    expect(Date.parse(r.json.apiToken.expiresAt) - Date.now()).toBeGreaterThan(89.9 * 86_400_000);
    expect(Date.parse(r.json.apiToken.expiresAt) - Date.now()).toBeLessThan(90.1 * 86_400_000);

    const check = await verifyApiToken(db.prisma, r.json.token);
    expect(check.ok).toBe(true);
    if (check.ok) expect([...check.principal.permissions].sort()).toEqual(["records.read", "stats.read"]);

    const [entry] = await auditOf("tokens.create", r.json.apiToken.id);
    expect(entry).toMatchObject({ actorType: "token", actorId: u.id, outcome: "done", reason: "automation", before: null });
    expect(entry.after).toMatchObject({ name: "nightly job", scopes: ["stats.read", "records.read"], userEmail: u.email, prefix: r.json.apiToken.prefix });
  });

  it("scopes beyond one's permissions are refused (403) with nothing written but the refusal; unknown scopes are 400", async () => {
    const viewer = await makeUser(["viewer"]);
    const { token } = await makeToken(viewer, ["stats.read", "records.read", "tokens.own"]);
    const before = await counts();
    const r = await call(tokensRoute.POST, "POST", "/api/v1/tokens", {
      token,
      body: { name: "sneaky", scopes: ["records.read", "records.resolve"], reason: "try" },
    });
    expectProblem(r, 403, /records\.resolve/);
    expect(await counts()).toEqual({ ...before, audit: before.audit + 1 });
    expect(await lastAudit()).toMatchObject({ action: "tokens.create", outcome: "refused", actorId: viewer.id, reason: "try", detail: { status: 403 } });

    // A token without tokens.own cannot create tokens at all.
    const { token: narrow } = await makeToken(viewer, ["stats.read"]);
    expectProblem(
      await call(tokensRoute.POST, "POST", "/api/v1/tokens", { token: narrow, body: { name: "n", scopes: ["stats.read"], reason: "try" } }),
      403,
      /tokens\.own/,
    );
    // Scopes the token itself does not carry, even when the user has them.
    const { token: partial } = await makeToken(viewer, ["tokens.own", "stats.read"]);
    expectProblem(
      await call(tokensRoute.POST, "POST", "/api/v1/tokens", { token: partial, body: { name: "n", scopes: ["records.read"], reason: "widen" } }),
      403,
      /records\.read/,
    );

    for (const body of [
      { name: "x", scopes: ["foo"], reason: "bad" },
      { name: "x", scopes: [], reason: "bad" },
      { name: "", scopes: ["stats.read"], reason: "bad" },
      { name: "x", scopes: ["stats.read"], expiresInDays: 0, reason: "bad" },
      { name: "x", scopes: ["stats.read"], expiresInDays: 366, reason: "bad" },
      { name: "x", scopes: ["stats.read"], expiresInDays: 1.5, reason: "bad" },
      { name: "x", scopes: ["stats.read"] },
    ]) {
      expectProblem(await call(tokensRoute.POST, "POST", "/api/v1/tokens", { token, body }), 400);
    }
    expect((await counts()).tokens).toBe(before.tokens + 2);
  });

  it("a token cannot mint a token that outlives it: the new expiry is capped at the creator's", async () => {
    const u = await makeUser(["support"]);
    const { token, apiToken: parent } = await makeToken(u, ["tokens.own", "records.read"], { days: 10 });
    const capped = await call(tokensRoute.POST, "POST", "/api/v1/tokens", {
      token,
      body: { name: "longer", scopes: ["records.read"], expiresInDays: 30, reason: "extend" },
    });
    expect(capped.status, capped.text).toBe(201);
    plaintexts.push(capped.json.token);
    expect(capped.json.apiToken.expiresAt).toBe(parent.expiresAt);
    expect(capped.json.notice).toMatch(/capped/);
    expect((await auditOf("tokens.create", capped.json.apiToken.id))[0].detail).toEqual({ expiryLimitedToCreatingToken: true, requestedDays: 30 });

    const shorter = await call(tokensRoute.POST, "POST", "/api/v1/tokens", {
      token,
      body: { name: "shorter", scopes: ["records.read"], expiresInDays: 5, reason: "fine" },
    });
    expect(shorter.status, shorter.text).toBe(201);
    plaintexts.push(shorter.json.token);
    expect(Date.parse(shorter.json.apiToken.expiresAt)).toBeLessThan(Date.parse(parent.expiresAt!));
    expect(shorter.json).not.toHaveProperty("notice");
  });

  it("for another user (tokens.manage): scopes ⊆ that user's permissions ∩ the creator's", async () => {
    const operator = await makeUser(["operator"]);
    const viewer = await makeUser(["viewer"]);
    const mk = (userId: string, scopes: string[]) =>
      call(tokensRoute.POST, "POST", "/api/v1/tokens", { token: rootToken, body: { userId, name: "for them", scopes, reason: "handover" } });

    const ok = await mk(operator.id, ["records.read", "stats.read"]);
    expect(ok.status, ok.text).toBe(201);
    plaintexts.push(ok.json.token);
    expect(ok.json.apiToken).toMatchObject({ userId: operator.id, createdById: root.id });
    // The operator may resolve records, the admin may not: the admin must not hold such a credential.
    expectProblem(await mk(operator.id, ["records.resolve"]), 403, /both .* and you hold/);
    // The viewer lacks users.manage: a dormant scope would wake up if they ever became admin.
    expectProblem(await mk(viewer.id, ["users.manage"]), 403, /users\.manage/);
    expectProblem(await mk("999999", ["stats.read"]), 404);

    // Without tokens.manage, only for oneself.
    const { token } = await makeToken(viewer, ["tokens.own", "stats.read"]);
    expectProblem(
      await call(tokensRoute.POST, "POST", "/api/v1/tokens", { token, body: { userId: operator.id, name: "x", scopes: ["stats.read"], reason: "x y" } }),
      403,
      /tokens\.manage/,
    );
    // Disabled users get no new tokens.
    await disableUser(db.prisma, SYSTEM, { userId: viewer.id, reason: "gone" });
    expectProblem(await mk(viewer.id, ["stats.read"]), 409, /disabled/);
  });

  it("revoke: verification then fails with 'revoked'; revoking again is a no-op; others' tokens need tokens.manage", async () => {
    const u = await makeUser(["support"]);
    const other = await makeUser(["support"]);
    const { token, apiToken } = await makeToken(u, ["tokens.own", "records.read"]);
    const { token: victim, apiToken: victimRow } = await makeToken(other, ["records.read"]);

    expectProblem(
      await call(tokenItemRoute.DELETE, "DELETE", `/api/v1/tokens/${victimRow.id}`, { params: idParams(victimRow.id), token, body: { reason: "not mine" } }),
      403,
      /tokens\.manage/,
    );
    expect(await lastAudit()).toMatchObject({ action: "tokens.revoke", outcome: "refused", targetId: victimRow.id, actorId: u.id });
    expect((await verifyApiToken(db.prisma, victim)).ok).toBe(true);

    expectProblem(await call(tokenItemRoute.DELETE, "DELETE", `/api/v1/tokens/${apiToken.id}`, { params: idParams(apiToken.id), token }), 415);
    expectProblem(
      await call(tokenItemRoute.DELETE, "DELETE", `/api/v1/tokens/${apiToken.id}`, { params: idParams(apiToken.id), token, body: {} }),
      400,
      /reason/,
    );

    const r = await call(tokenItemRoute.DELETE, "DELETE", `/api/v1/tokens/${apiToken.id}`, {
      params: idParams(apiToken.id),
      token,
      body: { reason: "rotating" },
    });
    expect(r.status, r.text).toBe(200);
    expect(r.json).toMatchObject({ noop: false, apiToken: { id: apiToken.id, status: "revoked" } });
    expect(await verifyApiToken(db.prisma, token)).toEqual({ ok: false, reason: "revoked" });

    const again = await revokeApiToken(db.prisma, principalOf(u), { tokenId: apiToken.id, reason: "again" });
    expect(again.noop).toBe(true);
    const entries = await auditOf("tokens.revoke", apiToken.id);
    expect(entries.map((e) => [e.outcome, (e.detail as { noop: boolean }).noop])).toEqual([
      ["done", false],
      ["done", true],
    ]);
    expect(entries[0].before).toMatchObject({ revokedAt: null });
    expect((entries[0].after as { revokedAt: string }).revokedAt).toMatch(/^\d{4}-/);

    // An admin (tokens.manage) revokes anyone's.
    const byAdmin = await call(tokenItemRoute.DELETE, "DELETE", `/api/v1/tokens/${victimRow.id}`, {
      params: idParams(victimRow.id),
      token: rootToken,
      body: { reason: "leaked" },
    });
    expect(byAdmin.status, byAdmin.text).toBe(200);
    expect(await verifyApiToken(db.prisma, victim)).toEqual({ ok: false, reason: "revoked" });
    expectProblem(
      await call(tokenItemRoute.DELETE, "DELETE", "/api/v1/tokens/999999", { params: idParams("999999"), token: rootToken, body: { reason: "none" } }),
      404,
    );
  });

  it("expired tokens fail with 'expired'; last_used_at is recorded on use", async () => {
    const u = await makeUser(["viewer"]);
    const { token, apiToken } = await makeToken(u, ["tokens.own", "stats.read"]);
    expect((await db.prisma.apiToken.findUniqueOrThrow({ where: { id: BigInt(apiToken.id) } })).lastUsedAt).toBeNull();
    const started = Date.now();
    const r = await call(tokensRoute.GET, "GET", "/api/v1/tokens", { token });
    expect(r.status).toBe(200);
    const used = (await db.prisma.apiToken.findUniqueOrThrow({ where: { id: BigInt(apiToken.id) } })).lastUsedAt;
    expect(used!.getTime()).toBeGreaterThanOrEqual(started - 1000);

    await db.prisma.apiToken.update({ where: { id: BigInt(apiToken.id) }, data: { expiresAt: new Date(Date.now() - 1000) } });
    expect(await verifyApiToken(db.prisma, token)).toEqual({ ok: false, reason: "expired" });
    expectProblem(await call(tokensRoute.GET, "GET", "/api/v1/tokens", { token }), 401, /expired/);
    const [listed] = await listApiTokens(db.prisma, principalOf(u));
    expect(listed).toMatchObject({ id: apiToken.id, status: "expired" });
  });

  it("GET /api/v1/tokens: own tokens (never a hash); owner=all or another user needs tokens.manage", async () => {
    const u = await makeUser(["support"]);
    const { token } = await makeToken(u, ["tokens.own", "records.read"]);
    await makeToken(u, ["records.read"]);
    const mine = await call(tokensRoute.GET, "GET", "/api/v1/tokens", { token });
    expect(mine.status).toBe(200);
    expect(mine.json.tokens).toHaveLength(2);
    expect(mine.json.tokens.every((t: { userId: string }) => t.userId === u.id)).toBe(true);
    expect(mine.text).not.toMatch(/tokenHash|token_hash/);
    for (const t of plaintexts) expect(mine.text).not.toContain(t.slice(16));

    expectProblem(await call(tokensRoute.GET, "GET", "/api/v1/tokens?owner=all", { token }), 403, /tokens\.manage/);
    expectProblem(await call(tokensRoute.GET, "GET", `/api/v1/tokens?owner=${root.id}`, { token }), 403);
    expectProblem(await call(tokensRoute.GET, "GET", "/api/v1/tokens?owner=everyone", { token }), 400);
    expect(await call(tokensRoute.GET, "GET", `/api/v1/tokens?owner=${u.id}`, { token })).toMatchObject({ status: 200 });

    const all = await call(tokensRoute.GET, "GET", "/api/v1/tokens?owner=all", { token: rootToken });
    expect(all.status).toBe(200);
    expect(new Set(all.json.tokens.map((t: { userId: string }) => t.userId)).size).toBeGreaterThan(3);
    const theirs = await call(tokensRoute.GET, "GET", `/api/v1/tokens?owner=${u.id}`, { token: rootToken });
    expect(theirs.json.tokens).toHaveLength(2);
  });

  it("no plaintext token (nor its secret) is stored in any table; the audit chain is intact", async () => {
    expect(plaintexts.length).toBeGreaterThan(10);
    // Every row as text (MySQL: the rows as the driver reads them, JSON columns included).
    const dump = byDialect(db, {
      postgres: async (table: string) => (await db.sql.query<{ j: string }>(`SELECT row_to_json(t)::text AS j FROM "${table}" t`)).map((r) => r.j).join("\n"),
      mysql: async (table: string) => (await db.sql.query(`SELECT * FROM "${table}"`)).map((r) => jsonText(r)).join("\n"),
    });
    const everything = [await dump("api_tokens"), await dump("audit_log"), await dump("console_users")].join("\n");
    for (const t of plaintexts) {
      const secret = t.slice("ic_".length + 12 + 1); // base64url: may itself contain "_"
      expect(everything).not.toContain(t);
      expect(everything).not.toContain(secret);
    }
    // Only hashes, and those only in api_tokens.
    const hashes = await db.prisma.apiToken.findMany({ select: { tokenHash: true } });
    const audit = await dump("audit_log");
    for (const h of hashes) expect(audit).not.toContain(h.tokenHash);
    expect(audit).not.toMatch(/scrypt\$/);
    expect(await verifyAuditChain(db.prisma)).toMatchObject({ intact: true });
  });
});

// ---------------------------------------------------------------------------
// The CLI scripts, as an operator runs them

interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

function runScript(script: string, args: string[], env: Record<string, string | undefined>, stdin?: string): Promise<RunResult> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env };
  delete childEnv.DATABASE_URL;
  delete childEnv.PGLITE_DIR;
  delete childEnv.USER_PASSWORD;
  for (const [k, v] of Object.entries(env)) if (v !== undefined) childEnv[k] = v;
  return new Promise((resolve, reject) => {
    const child = spawn(path.join(ROOT, "node_modules/.bin/tsx"), [path.join(ROOT, "scripts", script), ...args], {
      cwd: ROOT,
      env: childEnv,
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    let timedOut = false;
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.stdin.end(stdin ?? "");
    // The script must end by itself (an open PGlite or pool would keep it alive).
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, 45_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, timedOut });
    });
  });
}

function expectExit(r: RunResult, code: number) {
  const output = `stdout:\n${r.stdout}\nstderr:\n${r.stderr}`;
  expect(r.timedOut, `the script did not exit by itself\n${output}`).toBe(false);
  expect(r.code, output).toBe(code);
  expect(output).not.toContain(PASSWORD);
  expect(output).not.toContain("piped password 123");
}

const TOKEN_LINE = /^ic_[a-z0-9]{12}_[A-Za-z0-9_-]{43}\n$/;

/** Bad command lines: each must exit 1, before opening the database. */
const BAD_USER_ARGS: [string[], RegExp][] = [
  [["--email", "not-an-email", "--role", "viewer", "--password", PASSWORD], /--email: must be a valid email/],
  [["--email", "x@example.com", "--role", "viewer,god", "--password", PASSWORD], /--role: /],
  [["--email", "x@example.com", "--role", "viewer", "--password", "short"], /password: must be at least 12/],
  [["--email", "x@example.com", "--password", PASSWORD], /--role is required/],
  [["--email", "x@example.com", "--role", "viewer", "--password", PASSWORD, "--admin"], /unknown option --admin/],
  [["--email", "x@example.com", "--role", "viewer"], /no password/],
];
const BAD_TOKEN_ARGS: [string[], RegExp][] = [
  [["--email", "cli-admin@example.com", "--name", "t", "--scopes", "stats.read,nope"], /--scopes: /],
  [["--email", "cli-admin@example.com", "--name", "t", "--scopes", "stats.read", "--days", "400"], /--days: must be at most 365/],
  [["--email", "cli-admin@example.com", "--scopes", "stats.read"], /--name is required/],
];

async function cliScenario(env: Record<string, string>, inspect: <T>(fn: (d: { prisma: TestDatabase["prisma"] }) => Promise<T>) => Promise<T>) {
  // Flags, USER_PASSWORD and stdin.
  const admin = await runScript("user-create.ts", ["--email", "CLI-Admin@Example.com", "--role", "admin", "--password", PASSWORD, "--name", "CLI Admin"], env);
  expectExit(admin, 0);
  expect(admin.stdout).toMatch(/^created user cli-admin@example\.com \(id \d+\) with roles admin\n$/);
  expect(admin.stderr).toMatch(/--password is visible in shell history/);
  const fromEnv = await runScript("user-create.ts", ["--email", "ops@example.com", "--role", "operator,viewer", "--reason", "on-call rota"], {
    ...env,
    USER_PASSWORD: `${PASSWORD} 2`,
  });
  expectExit(fromEnv, 0);
  const fromStdin = await runScript("user-create.ts", ["--email", "piped@example.com", "--roles", "support"], env, "piped password 123\nignored\n");
  expectExit(fromStdin, 0);
  const sso = await runScript("user-create.ts", ["--email", "sso@example.com", "--role", "viewer", "--no-password"], env);
  expectExit(sso, 0);
  expect(sso.stdout).toMatch(/no password/);

  // Refused before the database is opened, so they may run side by side.
  const badUsers = await Promise.all(BAD_USER_ARGS.map(([args]) => runScript("user-create.ts", args, env)));
  badUsers.forEach((r, i) => {
    expectExit(r, 1);
    expect(r.stderr).toMatch(BAD_USER_ARGS[i][1]);
    expect(r.stderr).toMatch(/usage: npm run user:create/);
    expect(r.stderr).not.toMatch(/^database: /m);
  });
  const dup = await runScript("user-create.ts", ["--email", "ops@example.com", "--role", "viewer", "--no-password"], env);
  expectExit(dup, 1);
  expect(dup.stderr).toMatch(/ops@example\.com already exists/);

  const tok = await runScript(
    "token-create.ts",
    ["--email", "ops@example.com", "--name", "reconciler", "--scopes", "records.read,records.reconcile", "--days", "30"],
    env,
  );
  expectExit(tok, 0);
  expect(tok.stdout).toMatch(TOKEN_LINE);
  expect(tok.stderr).toMatch(/created API token "reconciler".*for ops@example\.com[\s\S]*shown only this once/);
  const all = await runScript("token-create.ts", ["--email", "cli-admin@example.com", "--name", "admin automation", "--scopes", "all"], env);
  expectExit(all, 0);
  expect(all.stdout).toMatch(TOKEN_LINE);
  const badTokens = await Promise.all(BAD_TOKEN_ARGS.map(([args]) => runScript("token-create.ts", args, env)));
  badTokens.forEach((r, i) => {
    expectExit(r, 1);
    expect(r.stderr).toMatch(BAD_TOKEN_ARGS[i][1]);
    expect(r.stderr).not.toMatch(/^database: /m);
  });
  const unknown = await runScript("token-create.ts", ["--email", "nobody@example.com", "--name", "t", "--scopes", "stats.read"], env);
  expectExit(unknown, 1);
  expect(unknown.stderr).toMatch(/no user with the email nobody@example\.com/);
  const tooWide = await runScript("token-create.ts", ["--email", "ops@example.com", "--name", "t", "--scopes", "users.manage"], env);
  expectExit(tooWide, 1);
  expect(tooWide.stderr).toMatch(/may not carry users\.manage/);

  await inspect(async ({ prisma }) => {
    const users = await prisma.consoleUser.findMany({
      where: { email: { in: ["cli-admin@example.com", "ops@example.com", "piped@example.com", "sso@example.com", "x@example.com"] } },
      orderBy: { email: "asc" },
    });
    expect(users.map((u) => [u.email, u.roles])).toEqual([
      ["cli-admin@example.com", ["admin"]],
      ["ops@example.com", ["viewer", "operator"]],
      ["piped@example.com", ["support"]],
      ["sso@example.com", ["viewer"]],
    ]);
    expect(await verifyPassword(PASSWORD, users[0].passwordHash)).toBe(true);
    expect(await verifyPassword(`${PASSWORD} 2`, users[1].passwordHash)).toBe(true);
    expect(await verifyPassword("piped password 123", users[2].passwordHash)).toBe(true);
    expect(users[3].passwordHash).toBeNull();

    const entries = await prisma.auditEntry.findMany({ where: { actorType: "system", actorLabel: { startsWith: "cli:" } }, orderBy: { id: "asc" } });
    // 4 users + 2 tokens done; the duplicate and the over-wide scopes refused; bad input: nothing.
    expect(entries.map((e) => [e.actorLabel, e.action, e.outcome])).toEqual([
      ["cli:user:create", "users.create", "done"],
      ["cli:user:create", "users.create", "done"],
      ["cli:user:create", "users.create", "done"],
      ["cli:user:create", "users.create", "done"],
      ["cli:user:create", "users.create", "refused"],
      ["cli:token:create", "tokens.create", "done"],
      ["cli:token:create", "tokens.create", "done"],
      ["cli:token:create", "tokens.create", "refused"],
    ]);
    expect(entries[0]).toMatchObject({ reason: "bootstrap via CLI", actorId: null });
    expect(entries[0].userAgent).toMatch(/^cli user:create \(/);
    expect(entries[1].reason).toBe("on-call rota");
    expect(jsonText(entries)).not.toMatch(/scrypt|correct horse|piped password/);

    const opsToken = tok.stdout.trim();
    const check = await verifyApiToken(prisma, opsToken);
    expect(check.ok).toBe(true);
    if (check.ok) {
      expect([...check.principal.permissions].sort()).toEqual(["records.read", "records.reconcile"]);
      expect(check.token.expiresAt!.getTime() - Date.now()).toBeGreaterThan(29.9 * 86_400_000);
    }
    const adminCheck = await verifyApiToken(prisma, all.stdout.trim());
    expect(adminCheck.ok && [...adminCheck.principal.permissions].sort()).toEqual([...permissionsOf(["admin"])].sort());
    const stored = jsonText(await prisma.apiToken.findMany());
    expect(stored).not.toContain(opsToken.slice(16));
  });
}

describe("CLI scripts end to end", () => {
  // Reads no DATABASE_URL: the embedded suite runs it; the server suites would only run it again.
  it.skipIf(usingDatabaseServer)(
    "embedded PGlite: refuse without a migrated database, then create users and tokens; bad input writes nothing",
    async () => {
      const base = await mkdtemp(path.join(os.tmpdir(), "ic-user-cli-"));
      const dataDir = path.join(base, "pglite");
      const env = { PGLITE_DIR: dataDir };
      try {
        const none = await runScript("user-create.ts", ["--email", "a@example.com", "--role", "admin", "--password", PASSWORD], env);
        expectExit(none, 1);
        expect(none.stderr).toMatch(/no embedded database in .*npm run db:migrate/);
        expect(existsSync(path.join(dataDir, "PG_VERSION"))).toBe(false);

        const migrated = await runScript("migrate.ts", [], env);
        expectExit(migrated, 0);

        await cliScenario(env, async (fn) => {
          const d = await openDatabase({ mode: "embedded", dataDir });
          try {
            return await fn(d);
          } finally {
            await d.close();
          }
        });
        const warned = await runScript("token-create.ts", ["--email", "sso@example.com", "--name", "t", "--scopes", "stats.read", "--days", "1"], env);
        expectExit(warned, 0);
        expect(warned.stderr).toMatch(/PGlite does not lock its folder/);
      } finally {
        await rm(base, { recursive: true, force: true });
      }
    },
    240_000,
  );

  it.skipIf(!usingDatabaseServer)(
    "PostgreSQL and MySQL: refuse an unmigrated database, then the same scenario on a throwaway database",
    async () => {
      const empty = await createEmptyTestDatabase();
      try {
        const r = await runScript("user-create.ts", ["--email", "a@example.com", "--role", "admin", "--password", PASSWORD], { DATABASE_URL: empty.url });
        expectExit(r, 1);
        expect(r.stderr).toMatch(/not migrated: migrations are pending.*npm run db:migrate/);
        const [t] = await empty.sql.query<{ t: string | null }>(
          byDialect(empty, {
            postgres: `SELECT to_regclass('console_users')::text AS t`,
            mysql: `SELECT (SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'console_users') AS t`,
          }),
        );
        expect(t.t).toBeNull();
      } finally {
        await empty.drop();
      }
      // A URL of no database the console speaks (mysql:// is one since issue 14).
      const bad = await runScript("user-create.ts", ["--email", "a@example.com", "--role", "admin", "--password", PASSWORD], { DATABASE_URL: "mssql://x" });
      expectExit(bad, 1);
      expect(bad.stderr).toMatch(/postgres:\/\//);

      const target = await createTestDatabase();
      try {
        await cliScenario({ DATABASE_URL: target.url! }, (fn) => fn(target));
      } finally {
        await target.drop();
      }
    },
    240_000,
  );
});
