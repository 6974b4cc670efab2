import { encode } from "next-auth/jwt";
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from "vitest";
import { authOptions } from "@/lib/auth/options";
import { ROLES } from "@/lib/auth/permissions";
import { updateUser } from "@/lib/auth/users";
import { provideDatabase } from "@/lib/db/client";
import { SESSION_COOKIE, sessionCookie, TEST_NEXTAUTH_SECRET, useTestAuthEnv } from "./helpers/auth-fixtures";
import { createTestDatabase, type TestDatabase } from "./helpers/db";
import { call, json, tokenFor } from "./helpers/records-api";

/**
 * Server-side sessions (issue 11): signing out ends the session in the database,
 * so the old cookie is refused afterwards (it used to read the API for 8 hours);
 * an admin sees a user's sessions and signs them out everywhere; disabling a user
 * ends their sessions; role changes apply at the next request.
 */

useTestAuthEnv();

let db: TestDatabase;
let admin: { token: string; userId: bigint };
const system = { type: "system" as const, label: "test" };

beforeAll(async () => {
  db = await createTestDatabase();
  provideDatabase(db);
  admin = await tokenFor(db, [...ROLES]);
});
afterAll(() => db?.drop());

const records = () => import("@/app/api/v1/records/route");
const session = () => import("@/app/api/v1/session/route");
const userSessions = () => import("@/app/api/v1/users/[id]/sessions/route");
const users = () => import("@/app/api/v1/users/route");

const withCookie = (cookie: string, init: RequestInit = {}) => ({
  ...init,
  headers: { cookie, "sec-fetch-site": "same-origin", ...(init.headers as Record<string, string>) },
});
const readRecords = async (cookie: string) => (await call((await records()).GET, "/api/v1/records", null, withCookie(cookie))).status;
const signOut = async (cookie: string) => call((await session()).DELETE, "/api/v1/session", null, withCookie(cookie, { method: "DELETE" }));

async function newUser(roles: string[]) {
  return db.prisma.consoleUser.create({ data: { email: `s${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}@example.test`, roles } });
}

describe("signing out ends the session", () => {
  it("DELETE /api/v1/session: the same cookie is refused afterwards, the cookie is deleted, the sign-out audited", async () => {
    const u = await newUser(["support"]);
    const cookie = await sessionCookie(u.id);
    expect(await readRecords(cookie)).toBe(200);
    const res = await signOut(cookie);
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ signedOut: true, redirectTo: "/login" });
    expect(res.headers.getSetCookie()).toEqual([`${SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax`]);
    // The old cookie (a copy kept by anyone) no longer reads anything.
    expect(await readRecords(cookie)).toBe(401);
    expect((await signOut(cookie)).status).toBe(401);
    const entry = await db.prisma.auditEntry.findFirstOrThrow({ where: { action: "auth.sign_out", actorId: String(u.id) } });
    expect(entry).toMatchObject({ outcome: "done", detail: { method: "password" } });
    expect(await db.prisma.consoleSession.findFirstOrThrow({ where: { userId: u.id } })).toMatchObject({ revokedReason: "signed out", idToken: null });
  });

  it("next-auth's own /api/auth/signout ends it too (its signOut event)", async () => {
    // authOptions() checks the production settings when DATABASE_URL is set (the Postgres run).
    vi.stubEnv("NEXTAUTH_URL", "http://127.0.0.1:3000");
    onTestFinished(() => {
      vi.unstubAllEnvs();
    });
    const u = await newUser(["support"]);
    const options = authOptions({ ip: "192.0.2.7" });
    const token = await options.callbacks!.jwt!({
      token: {},
      user: { id: String(u.id), email: u.email, roles: ["support"] } as never,
      account: null,
      trigger: "signIn",
    });
    const cookie = `${SESSION_COOKIE}=${await encode({ token, secret: TEST_NEXTAUTH_SECRET })}`;
    expect(await readRecords(cookie)).toBe(200);
    await options.events!.signOut!({ token, session: undefined as never });
    expect(await readRecords(cookie)).toBe(401);
  });

  it("a token cannot sign out; a cookie from before server-side sessions (no sid), an expired or forged session is no session", async () => {
    const res = await call((await session()).DELETE, "/api/v1/session", admin.token, { method: "DELETE" });
    expect(res.status).toBe(400);
    const u = await newUser(["support"]);
    const legacy = `${SESSION_COOKIE}=${await encode({ token: { uid: String(u.id) }, secret: TEST_NEXTAUTH_SECRET })}`;
    expect(await readRecords(legacy)).toBe(401);
    const forgedSid = `${SESSION_COOKIE}=${await encode({ token: { uid: String(u.id), sid: "A".repeat(43) }, secret: TEST_NEXTAUTH_SECRET })}`;
    expect(await readRecords(forgedSid)).toBe(401);
    const cookie = await sessionCookie(u.id);
    await db.prisma.consoleSession.updateMany({ where: { userId: u.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    expect(await readRecords(cookie)).toBe(401);
  });

  it("another user's session secret under my uid is no session", async () => {
    const a = await newUser(["support"]);
    const b = await newUser(["admin"]);
    const bCookie = await sessionCookie(b.id);
    const { getToken } = await import("next-auth/jwt");
    const decoded = await getToken({
      req: { headers: new Headers({ cookie: bCookie }), cookies: { [SESSION_COOKIE]: bCookie.split("=")[1] } } as never,
      secret: TEST_NEXTAUTH_SECRET,
    });
    const swapped = `${SESSION_COOKIE}=${await encode({ token: { uid: String(a.id), sid: decoded!.sid }, secret: TEST_NEXTAUTH_SECRET })}`;
    expect(await readRecords(swapped)).toBe(401);
  });
});

describe("admins: a user's sessions, sign out everywhere", () => {
  it("lists the live sessions and ends them all at once (audited with the reason)", async () => {
    const u = await newUser(["support"]);
    const laptop = await sessionCookie(u.id);
    const phone = await sessionCookie(u.id);
    const route = await userSessions();
    const listed = await call(route.GET, `/api/v1/users/${u.id}/sessions`, admin.token, {}, { id: String(u.id) });
    expect(listed.status).toBe(200);
    const { sessions } = await json(listed);
    expect(sessions).toHaveLength(2);
    expect(sessions[0]).toMatchObject({
      id: expect.any(String),
      method: "password",
      createdAt: expect.any(String),
      lastSeenAt: expect.any(String),
      expiresAt: expect.any(String),
    });
    expect(JSON.stringify(sessions)).not.toMatch(/secret|idToken/i);

    const revoked = await call(
      route.DELETE,
      `/api/v1/users/${u.id}/sessions`,
      admin.token,
      { method: "DELETE", headers: { "content-type": "application/json" }, body: JSON.stringify({ reason: "laptop stolen" }) },
      { id: String(u.id) },
    );
    expect(revoked.status).toBe(200);
    expect(await json(revoked)).toEqual({ revoked: 2 });
    expect(await readRecords(laptop)).toBe(401);
    expect(await readRecords(phone)).toBe(401);
    expect((await json(await call(route.GET, `/api/v1/users/${u.id}/sessions`, admin.token, {}, { id: String(u.id) }))).sessions).toEqual([]);
    expect(await db.prisma.auditEntry.findFirstOrThrow({ where: { action: "users.sessions_revoke", targetId: String(u.id) } })).toMatchObject({
      outcome: "done",
      reason: "laptop stolen",
      detail: { revoked: 2 },
    });
    // The user signs in again: a new session works.
    expect(await readRecords(await sessionCookie(u.id))).toBe(200);
    // Unknown user: 404.
    expect((await call(route.GET, "/api/v1/users/999999/sessions", admin.token, {}, { id: "999999" })).status).toBe(404);
  });

  it("disabling a user ends their sessions for good; role changes apply at the very next request", async () => {
    const u = await newUser(["viewer"]);
    const cookie = await sessionCookie(u.id);
    const usersRoute = await users();
    expect((await call(usersRoute.GET, "/api/v1/users", null, withCookie(cookie))).status).toBe(403);
    await updateUser(db.prisma, system, { userId: u.id, roles: ["admin"], reason: "promoted" });
    expect((await call(usersRoute.GET, "/api/v1/users", null, withCookie(cookie))).status).toBe(200);
    await updateUser(db.prisma, system, { userId: u.id, roles: ["viewer"], reason: "demoted" });
    expect((await call(usersRoute.GET, "/api/v1/users", null, withCookie(cookie))).status).toBe(403);

    await updateUser(db.prisma, system, { userId: u.id, disabled: true, reason: "left the company" });
    expect(await readRecords(cookie)).toBe(401);
    expect(
      (await db.prisma.auditEntry.findFirstOrThrow({ where: { action: "users.update", targetId: String(u.id) }, orderBy: { id: "desc" } })).detail,
    ).toMatchObject({ sessionsEnded: 1 });
    await updateUser(db.prisma, system, { userId: u.id, disabled: false, reason: "came back" });
    expect(await readRecords(cookie)).toBe(401);
  });
});
