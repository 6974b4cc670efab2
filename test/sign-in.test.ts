import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";

// Watch verifyPassword: unknown users must still cost one (dummy) verification.
vi.mock("@/lib/auth/password", async (importOriginal) => {
  const original = await importOriginal<typeof import("@/lib/auth/password")>();
  return { ...original, verifyPassword: vi.fn(original.verifyPassword) };
});

import { verifyAuditChain } from "@/lib/audit";
import { safeCallbackPath, signInErrorMessage } from "@/lib/auth/callback-url";
import { authConfigProblems } from "@/lib/auth/config";
import { authOptions, oidcConfigFromEnv, SESSION_MAX_AGE_S, signInErrorCode } from "@/lib/auth/options";
import { verifyPassword } from "@/lib/auth/password";
import { groupsFromClaim, parseRoleMap, passwordSignIn, rolesFromGroups, ssoSignIn } from "@/lib/auth/sign-in";
import { checkSignInThrottle, DEFAULT_THROTTLE, throttleDecision, waitMinutes } from "@/lib/auth/throttle";
import { PEER_ADDRESS_HEADER, trustPeerAddressHeader } from "@/lib/http/client-address";
import { createUser, updateUser } from "@/lib/auth/users";
import { provideDatabase } from "@/lib/db/client";
import { createTestDatabase, type TestDatabase } from "./helpers/db";

const PASSWORD = "correct horse battery staple";
const system = { type: "system" as const, label: "test" };
const MIN = 60_000;

let db: TestDatabase;
let seq = 0;
/** A fresh user (and a fresh IP for it) per test, so throttling windows do not overlap. */
async function newUser(roles: ("viewer" | "admin" | "support")[] = ["viewer"]) {
  seq++;
  const email = `user${seq}@example.test`;
  const user = await createUser(db.prisma, system, { email, name: `User ${seq}`, password: PASSWORD, roles, reason: "test fixture" });
  return { email, id: BigInt(user.id), ip: `10.0.${seq}.1` };
}
const meta = (ip: string) => ({ ip, userAgent: "vitest-agent/1.0", requestId: `req-${ip}` });

async function auditEntries(action?: string) {
  return db.prisma.auditEntry.findMany({ where: action ? { action } : {}, orderBy: { id: "asc" } });
}

beforeAll(async () => {
  db = await createTestDatabase();
  provideDatabase(db);
});
afterAll(async () => {
  await db.drop();
});
beforeEach(() => {
  vi.mocked(verifyPassword).mockClear();
});

describe("throttle window logic (pure)", () => {
  const now = new Date("2026-01-01T12:00:00Z");
  const ago = (ms: number) => new Date(now.getTime() - ms);

  it("allows fewer failures than the limit", () => {
    expect(throttleDecision([ago(1000), ago(2000)], 5, 15 * MIN, now)).toEqual({ throttled: false, retryAfterMs: 0 });
  });

  it("throttles at the limit until the limit-th newest failure leaves the window", () => {
    const failures = [ago(1 * MIN), ago(2 * MIN), ago(3 * MIN), ago(4 * MIN), ago(10 * MIN)];
    const d = throttleDecision(failures, 5, 15 * MIN, now);
    expect(d.throttled).toBe(true);
    expect(d.retryAfterMs).toBe(5 * MIN); // 10 min ago + 15 min window
    expect(waitMinutes(d.retryAfterMs)).toBe(5);
  });

  it("ignores failures outside the window and in the future", () => {
    const failures = [ago(16 * MIN), ago(20 * MIN), ago(1 * MIN), ago(2 * MIN), new Date(now.getTime() + MIN)];
    expect(throttleDecision(failures, 3, 15 * MIN, now).throttled).toBe(false);
  });

  it("rounds the wait up to whole minutes, never 0", () => {
    expect(waitMinutes(1)).toBe(1);
    expect(waitMinutes(MIN + 1)).toBe(2);
    expect(waitMinutes(15 * MIN)).toBe(15);
  });
});

describe("password sign-in", () => {
  it("signs in with the right password: attempt recorded, last_sign_in_at set, audited with ip and user agent", async () => {
    const u = await newUser(["support"]);
    const result = await passwordSignIn(db.prisma, { email: `  ${u.email.toUpperCase()} `, password: PASSWORD }, meta(u.ip));
    expect(result).toEqual({ ok: true, user: { id: String(u.id), email: u.email, name: expect.any(String), roles: ["support"] } });
    const row = await db.prisma.consoleUser.findUniqueOrThrow({ where: { id: u.id } });
    expect(row.lastSignInAt).not.toBeNull();
    const attempts = await db.prisma.signInAttempt.findMany({ where: { email: u.email } });
    expect(attempts).toMatchObject([{ ip: u.ip, succeeded: true }]);
    const entry = (await auditEntries("auth.sign_in")).find((e) => e.actorId === String(u.id))!;
    expect(entry).toMatchObject({
      outcome: "done",
      actorType: "user",
      actorLabel: u.email,
      ip: u.ip,
      userAgent: "vitest-agent/1.0",
      targetTable: "console_users",
    });
  });

  it("refuses a wrong password and an unknown email alike, verifying a password either way", async () => {
    const u = await newUser();
    const wrong = await passwordSignIn(db.prisma, { email: u.email, password: "not the password at all" }, meta(u.ip));
    const unknown = await passwordSignIn(db.prisma, { email: "nobody@example.test", password: PASSWORD }, meta(u.ip));
    expect(wrong).toEqual({ ok: false, refusal: { code: "wrong_credentials" } });
    expect(unknown).toEqual(wrong);
    // Both paths ran one password verification (the unknown one against the dummy hash).
    expect(vi.mocked(verifyPassword)).toHaveBeenCalledTimes(2);
    expect(vi.mocked(verifyPassword).mock.calls[1][1]).toBeNull();
    const refusals = (await auditEntries("auth.sign_in_failed")).slice(-2);
    expect(refusals.map((e) => [e.outcome, e.actorType, e.actorLabel, (e.detail as { reason: string }).reason])).toEqual([
      ["refused", "anonymous", u.email, "wrong_password"],
      ["refused", "anonymous", "nobody@example.test", "unknown_email"],
    ]);
    expect(await db.prisma.signInAttempt.count({ where: { email: "nobody@example.test", succeeded: false } })).toBe(1);
  });

  it("the dummy verification costs about as much as a real one", async () => {
    const stored = (await db.prisma.consoleUser.findFirstOrThrow({ where: { passwordHash: { not: null } } })).passwordHash!;
    const time = async (fn: () => Promise<unknown>) => {
      const t = performance.now();
      await fn();
      return performance.now() - t;
    };
    // Fastest of three each: robust against a busy machine slowing one run down.
    const fastest = async (stored: string | null) => {
      const runs: number[] = [];
      for (const p of ["x".repeat(20), "y".repeat(20), "z".repeat(20)]) runs.push(await time(() => verifyPassword(p, stored)));
      return Math.min(...runs);
    };
    const real = await fastest(stored);
    const dummy = await fastest(null);
    expect(dummy).toBeGreaterThan(real * 0.3);
  });

  it("reports a disabled account only to someone who knows its password", async () => {
    const u = await newUser();
    await updateUser(db.prisma, system, { userId: u.id, disabled: true, reason: "left the company" });
    expect(await passwordSignIn(db.prisma, { email: u.email, password: PASSWORD }, meta(u.ip))).toEqual({ ok: false, refusal: { code: "disabled" } });
    expect(await passwordSignIn(db.prisma, { email: u.email, password: "wrong wrong wrong" }, meta(u.ip))).toEqual({
      ok: false,
      refusal: { code: "wrong_credentials" },
    });
    const last = (await auditEntries("auth.sign_in_failed")).slice(-2);
    expect(last.map((e) => (e.detail as { reason: string }).reason)).toEqual(["account_disabled", "wrong_password"]);
  });

  it("refuses overlong input fast: no password verification, no attempt recorded", async () => {
    const u = await newUser();
    const before = await db.prisma.signInAttempt.count();
    const started = performance.now();
    const longEmail = await passwordSignIn(db.prisma, { email: `${"a".repeat(250)}@example.test`, password: PASSWORD }, meta(u.ip));
    const longPassword = await passwordSignIn(db.prisma, { email: u.email, password: "p".repeat(201) }, meta(u.ip));
    const huge = await passwordSignIn(db.prisma, { email: u.email, password: "p".repeat(1_000_000) }, meta(u.ip));
    const missing = await passwordSignIn(db.prisma, { email: u.email }, meta(u.ip));
    for (const r of [longEmail, longPassword, huge, missing]) expect(r).toEqual({ ok: false, refusal: { code: "invalid_input" } });
    expect(vi.mocked(verifyPassword)).not.toHaveBeenCalled();
    expect(await db.prisma.signInAttempt.count()).toBe(before);
    expect(performance.now() - started).toBeLessThan(5_000);
    // 200 characters is still allowed (and merely wrong here).
    expect(await passwordSignIn(db.prisma, { email: u.email, password: "p".repeat(200) }, meta(u.ip))).toEqual({
      ok: false,
      refusal: { code: "wrong_credentials" },
    });
    const refusals = (await auditEntries("auth.sign_in_failed")).slice(-5, -1);
    expect(refusals.map((e) => (e.detail as { reason: string }).reason)).toEqual([
      "input_too_long",
      "input_too_long",
      "input_too_long",
      "missing_email_or_password",
    ]);
  });

  it("throttles an account after 5 failures in 15 minutes, even with the right password, until the window passes", async () => {
    const u = await newUser();
    const t0 = new Date(Date.now() - 20 * MIN);
    const at = (min: number) => new Date(t0.getTime() + min * MIN);
    for (let i = 0; i < 5; i++) {
      const r = await passwordSignIn(db.prisma, { email: u.email, password: `wrong password ${i}` }, meta(u.ip), { now: at(i * 0.5) });
      expect(r).toEqual({ ok: false, refusal: { code: "wrong_credentials" } });
    }
    vi.mocked(verifyPassword).mockClear();
    // 6th attempt, right password: throttled, without verifying anything.
    const sixth = await passwordSignIn(db.prisma, { email: u.email, password: PASSWORD }, meta(u.ip), { now: at(3) });
    // Lifts when the oldest of the 5 failures (at 0 min) leaves the 15-minute window.
    expect(sixth).toEqual({ ok: false, refusal: { code: "throttled", scope: "account", waitMinutes: 12 } });
    expect(vi.mocked(verifyPassword)).not.toHaveBeenCalled();
    // From another IP too: it is the account that is throttled.
    const elsewhere = await passwordSignIn(db.prisma, { email: u.email, password: PASSWORD }, meta("192.0.2.77"), { now: at(10) });
    expect(elsewhere).toEqual({ ok: false, refusal: { code: "throttled", scope: "account", waitMinutes: 5 } });
    // Throttled attempts are not counted, so knocking on does not extend the lock.
    expect(await passwordSignIn(db.prisma, { email: u.email, password: PASSWORD }, meta(u.ip), { now: at(15.1) })).toMatchObject({ ok: true });
    const throttled = (await auditEntries("auth.sign_in_failed")).filter(
      (e) => e.actorLabel === u.email && (e.detail as { reason: string }).reason === "throttled_account",
    );
    expect(throttled).toHaveLength(2);
    expect(throttled[0].detail).toMatchObject({ scope: "account", waitMinutes: 12 });
  });

  it("a successful sign-in resets the account's failure count", async () => {
    const u = await newUser();
    const t0 = new Date(Date.now() - 10 * MIN);
    const at = (s: number) => new Date(t0.getTime() + s * 1000);
    for (let i = 0; i < 4; i++) await passwordSignIn(db.prisma, { email: u.email, password: "wrong password!" }, meta(u.ip), { now: at(i) });
    expect(await passwordSignIn(db.prisma, { email: u.email, password: PASSWORD }, meta(u.ip), { now: at(10) })).toMatchObject({ ok: true });
    for (let i = 0; i < 4; i++) await passwordSignIn(db.prisma, { email: u.email, password: "wrong password!" }, meta(u.ip), { now: at(20 + i) });
    expect(await checkSignInThrottle(db.prisma, u.email, u.ip, at(30))).toEqual({ throttled: false });
    await passwordSignIn(db.prisma, { email: u.email, password: "wrong password!" }, meta(u.ip), { now: at(40) });
    expect(await checkSignInThrottle(db.prisma, u.email, u.ip, at(50))).toMatchObject({ throttled: true, scope: "account" });
  });

  it("throttles an IP after 20 failures in 15 minutes across accounts (password spraying)", async () => {
    const ip = "198.51.100.23";
    const t0 = new Date(Date.now() - 30 * MIN);
    const at = (min: number) => new Date(t0.getTime() + min * MIN);
    for (let i = 0; i < DEFAULT_THROTTLE.maxFailuresPerIp; i++) {
      const r = await passwordSignIn(db.prisma, { email: `spray${i}@example.test`, password: "Summer2026!!" }, meta(ip), { now: at(i * 0.25) });
      expect(r).toEqual({ ok: false, refusal: { code: "wrong_credentials" } });
    }
    const u = await newUser();
    const blocked = await passwordSignIn(db.prisma, { email: u.email, password: PASSWORD }, meta(ip), { now: at(6) });
    expect(blocked).toEqual({ ok: false, refusal: { code: "throttled", scope: "ip", waitMinutes: 9 } }); // oldest of the 20 at 0 min
    // The same account from another address is fine; the IP is free again after the window.
    expect(await passwordSignIn(db.prisma, { email: u.email, password: PASSWORD }, meta("203.0.113.50"), { now: at(6) })).toMatchObject({ ok: true });
    expect(await checkSignInThrottle(db.prisma, "someone@example.test", ip, at(14.9))).toMatchObject({ throttled: true, scope: "ip" });
    expect(await checkSignInThrottle(db.prisma, "someone@example.test", ip, at(15.1))).toEqual({ throttled: false });
  });

  it("never writes a password into the audit trail, and the chain stays intact", async () => {
    const entries = await auditEntries();
    const text = JSON.stringify(entries, (_k, v) => (typeof v === "bigint" ? v.toString() : v));
    for (const secret of [PASSWORD, "not the password at all", "wrong password 0", "Summer2026!!", "wrong wrong wrong"]) {
      expect(text).not.toContain(secret);
    }
    expect(entries.some((e) => e.action === "auth.sign_in_failed")).toBe(true);
    expect(await verifyAuditChain(db.prisma)).toMatchObject({ intact: true });
  });
});

describe("next-auth options", () => {
  // What a production server has (these tests also run with DATABASE_URL set).
  beforeEach(() => {
    vi.stubEnv("NEXTAUTH_SECRET", "test-secret-".padEnd(40, "x"));
    vi.stubEnv("NEXTAUTH_URL", "http://127.0.0.1:3000");
  });
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  const authorize = (input: Record<string, string>, headers: Record<string, string>) => {
    const provider = authOptions().providers[0] as unknown as {
      options: { authorize: (c: Record<string, string>, req: { headers: Record<string, string> }) => Promise<unknown> };
    };
    return provider.options.authorize(input, { headers });
  };

  it("authorize() returns the user with roles, null for wrong credentials, and throws a coded error when throttled", async () => {
    const u = await newUser(["admin"]);
    // As scripts/server.mjs passes it: the socket's address (a client's X-Forwarded-For is ignored).
    trustPeerAddressHeader();
    const headers = { [PEER_ADDRESS_HEADER]: "192.0.2.200", "x-forwarded-for": "6.6.6.6", "user-agent": "Browser/1" };
    await expect(authorize({ email: u.email, password: PASSWORD, csrfToken: "x" }, headers)).resolves.toMatchObject({
      id: String(u.id),
      email: u.email,
      roles: ["admin"],
    });
    const entry = (await auditEntries("auth.sign_in")).at(-1)!;
    expect(entry).toMatchObject({ ip: "192.0.2.200", userAgent: "Browser/1" });
    for (let i = 0; i < 5; i++) await expect(authorize({ email: u.email, password: "wrong-password" }, headers)).resolves.toBeNull();
    await expect(authorize({ email: u.email, password: PASSWORD }, headers)).rejects.toThrow(/^TooManyAttempts:1[45]$/);
    await expect(authorize({ email: "x".repeat(300), password: PASSWORD }, headers)).rejects.toThrow("InvalidInput");
  });

  it("puts uid, the server-side session and roles in the JWT, and ends sessions 8 hours after sign-in", async () => {
    const u = await newUser(["viewer"]);
    const jwt = authOptions({ ip: "192.0.2.50", userAgent: "Browser/3" }).callbacks!.jwt!;
    const token = await jwt({
      token: {},
      user: { id: String(u.id), email: u.email, name: "A", roles: ["viewer"] } as never,
      account: { provider: "credentials", type: "credentials", providerAccountId: String(u.id) },
      trigger: "signIn",
    });
    expect(token).toMatchObject({ uid: String(u.id), sub: String(u.id), roles: ["viewer"], email: u.email, sid: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/) });
    // The cookie carries the secret; the database only its hash, with where the session came from.
    const session = await db.prisma.consoleSession.findFirstOrThrow({ where: { userId: u.id } });
    expect(session).toMatchObject({ method: "password", ip: "192.0.2.50", userAgent: "Browser/3", revokedAt: null });
    expect(session.secretHash).not.toContain(token.sid as string);
    expect(session.expiresAt.getTime() - session.createdAt.getTime()).toBe(SESSION_MAX_AGE_S * 1000);
    await expect(jwt({ token, user: undefined as never, account: null })).resolves.toEqual(token);
    const stale = { ...token, signedInAt: Math.floor(Date.now() / 1000) - SESSION_MAX_AGE_S - 1 };
    await expect(jwt({ token: stale, user: undefined as never, account: null })).rejects.toThrow("session expired");
    expect(authOptions().session).toMatchObject({ strategy: "jwt", maxAge: 8 * 3600, updateAge: 15 * 60 });
    expect(authOptions().pages).toMatchObject({ signIn: "/login" });
  });

  it("maps refusals to codes the login page explains", () => {
    expect(signInErrorCode({ code: "throttled", scope: "ip", waitMinutes: 7 })).toBe("TooManyAttempts:7");
    expect(signInErrorMessage("TooManyAttempts:7")).toBe("Too many sign-in attempts. Wait 7 minutes and try again.");
    expect(signInErrorMessage("CredentialsSignin")).toBe("Wrong email or password.");
    expect(signInErrorMessage(signInErrorCode({ code: "disabled" }))).toMatch(/disabled/);
  });

  it("only same-origin paths are callback targets", () => {
    expect(safeCallbackPath("/admin/users?x=1#top")).toBe("/admin/users?x=1#top");
    for (const bad of [
      "https://evil.test/",
      "//evil.test/x",
      "/\\evil.test",
      "javascript:alert(1)",
      "/login?callbackUrl=/",
      "/api/auth/signout",
      "",
      undefined,
      "/a\nb",
    ]) {
      expect(safeCallbackPath(bad)).toBe("/");
    }
  });

  it("requires NEXTAUTH_SECRET (≥ 32 characters) and NEXTAUTH_URL in production only", () => {
    vi.stubEnv("DATABASE_URL", "postgresql://db.test/console");
    vi.stubEnv("NEXTAUTH_SECRET", "");
    expect(() => authOptions()).toThrow(/NEXTAUTH_SECRET/);
    expect(authConfigProblems({})).toEqual([]);
    expect(authConfigProblems({ DATABASE_URL: "postgresql://x/y" })).toHaveLength(2);
    expect(authConfigProblems({ DATABASE_URL: "postgresql://x/y", NEXTAUTH_SECRET: "short", NEXTAUTH_URL: "https://c.test" })[0]).toMatch(/at least 32/);
    expect(authConfigProblems({ DATABASE_URL: "postgresql://x/y", NEXTAUTH_SECRET: "s".repeat(32), NEXTAUTH_URL: "https://c.test" })).toEqual([]);
    // A half-configured single sign-on stops the server in any mode.
    expect(authConfigProblems({ OIDC_ISSUER: "https://idp.test" })).toEqual([expect.stringMatching(/OIDC_CLIENT_ID/)]);
    expect(authConfigProblems({ OIDC_ISSUER: "https://idp.test", OIDC_CLIENT_ID: "c", OIDC_CLIENT_SECRET: "s", OIDC_ROLE_MAP: "ops=root" })).toHaveLength(1);
  });
});

describe("single sign-on", () => {
  const roleMap = parseRoleMap("payments-admins=admin, payments-ops=operator,support=support,payments-ops=approver");
  const sso = (subject: string, groups: string[], extra: { email?: string; emailVerified?: boolean } = {}) =>
    ssoSignIn(
      db.prisma,
      "oidc",
      { subject, email: extra.email ?? `${subject}@corp.test`, emailVerified: extra.emailVerified ?? true, name: subject, groups },
      roleMap,
      meta("192.0.2.9"),
    );

  it("parses the role map and maps groups to roles", () => {
    expect(rolesFromGroups(["payments-ops", "unrelated"], roleMap)).toEqual(["operator", "approver"]);
    expect(rolesFromGroups(["nothing"], roleMap)).toEqual([]);
    expect(groupsFromClaim("a b,c")).toEqual(["a", "b", "c"]);
    expect(groupsFromClaim(["a", 3, "b"])).toEqual(["a", "b"]);
    expect(() => parseRoleMap("ops=root")).toThrow(/OIDC_ROLE_MAP/);
    expect(oidcConfigFromEnv({})).toBeNull();
    expect(() => oidcConfigFromEnv({ OIDC_ISSUER: "https://idp.test" })).toThrow(/together/);
    expect(oidcConfigFromEnv({ OIDC_ISSUER: "https://idp.test/", OIDC_CLIENT_ID: "c", OIDC_CLIENT_SECRET: "s", OIDC_ROLE_MAP: "g=viewer" })).toMatchObject({
      issuer: "https://idp.test",
      groupsClaims: ["groups"],
      groupsScope: undefined,
      scopes: null,
      logout: true,
      name: "Single sign-on",
    });
  });

  it("creates the user on first sign-in, then follows group changes (audited as role changes)", async () => {
    const first = await sso("alice", ["support"]);
    expect(first).toMatchObject({ ok: true, user: { email: "alice@corp.test", roles: ["support"] } });
    const id = (first as { user: { id: string } }).user.id;
    const created = (await auditEntries("users.create")).at(-1)!;
    expect(created).toMatchObject({ actorType: "system", targetId: id, reason: "first single sign-on" });

    expect(await sso("alice", ["payments-admins", "support"])).toMatchObject({ ok: true, user: { roles: ["support", "admin"] } });
    const change = (await auditEntries("users.roles_changed_by_sso")).at(-1)!;
    expect(change).toMatchObject({ targetId: id, before: { roles: ["support"] }, after: { roles: ["support", "admin"] } });
    const signIns = (await auditEntries("auth.sign_in")).filter((e) => e.actorId === id);
    expect(signIns).toHaveLength(2);
    expect(signIns[1].detail).toMatchObject({ method: "sso", provider: "oidc" });
  });

  it("refuses (and audits) a user whose groups map to no role, stripping an existing user's roles", async () => {
    expect(await sso("bob", ["payments-ops"])).toMatchObject({ ok: true });
    expect(await sso("bob", ["marketing"])).toEqual({ ok: false, refusal: { code: "sso_no_role" } });
    const bob = await db.prisma.consoleUser.findUniqueOrThrow({ where: { email: "bob@corp.test" } });
    expect(bob.roles).toEqual([]);
    const refusal = (await auditEntries("auth.sign_in_failed")).at(-1)!;
    expect(refusal).toMatchObject({ outcome: "refused", detail: { method: "sso", reason: "no_role_for_groups", groups: ["marketing"] } });
    expect(await sso("carol", [])).toEqual({ ok: false, refusal: { code: "sso_no_role" } });
    expect(await db.prisma.consoleUser.findUnique({ where: { email: "carol@corp.test" } })).toBeNull();
  });

  it("next-auth glue: the OIDC provider comes from the environment, and its sign-in maps the user for the JWT", async () => {
    vi.stubEnv("NEXTAUTH_SECRET", "test-secret-".padEnd(40, "x"));
    vi.stubEnv("NEXTAUTH_URL", "http://127.0.0.1:3000");
    vi.stubEnv("OIDC_ISSUER", "https://idp.example.test/realms/payments/");
    vi.stubEnv("OIDC_CLIENT_ID", "console");
    vi.stubEnv("OIDC_CLIENT_SECRET", "s3cr3t");
    vi.stubEnv("OIDC_ROLE_MAP", "payments-ops=operator");
    vi.stubEnv("OIDC_GROUPS_CLAIM", "roles_claim");
    vi.stubEnv("OIDC_NAME", "Corp SSO");
    try {
      const options = authOptions({ ip: "192.0.2.44", userAgent: "Browser/2" });
      const oidc = options.providers.find((p) => p.id === "oidc") as unknown as {
        name: string;
        wellKnown: string;
        checks: string[];
        idToken: boolean;
        profile: (claims: Record<string, unknown>) => Record<string, unknown>;
      };
      expect(oidc).toMatchObject({
        name: "Corp SSO",
        wellKnown: "https://idp.example.test/realms/payments/.well-known/openid-configuration",
        checks: ["pkce", "state"],
        idToken: true,
      });
      const user = oidc.profile({ sub: "erin-sub", email: "Erin@Corp.test", name: "Erin", roles_claim: ["payments-ops"], email_verified: true }) as never;
      const signIn = options.callbacks!.signIn!;
      const account = { provider: "oidc", providerAccountId: "erin-sub", type: "oauth" as const };
      await expect(signIn({ user, account, profile: undefined })).resolves.toBe(true);
      const token = await options.callbacks!.jwt!({ token: {}, user, account, trigger: "signIn" });
      const erin = await db.prisma.consoleUser.findUniqueOrThrow({ where: { email: "erin@corp.test" } });
      expect(token).toMatchObject({ uid: erin.id.toString(), roles: ["operator"], sid: expect.any(String) });
      expect(await db.prisma.consoleSession.findFirstOrThrow({ where: { userId: erin.id } })).toMatchObject({ method: "sso", provider: "oidc" });
      expect((await auditEntries("auth.sign_in")).at(-1)).toMatchObject({ actorId: erin.id.toString(), ip: "192.0.2.44", userAgent: "Browser/2" });
      // No mapped group: refused with a reason the login page explains.
      const stranger = oidc.profile({ sub: "sam", email: "sam@corp.test", roles_claim: ["marketing"] }) as never;
      await expect(signIn({ user: stranger, account: { ...account, providerAccountId: "sam" }, profile: undefined })).resolves.toBe("/login?error=SsoNoRole");
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it("links an existing password user by verified email only, and refuses disabled users", async () => {
    const u = await newUser(["viewer"]);
    expect(await sso("dave", ["support"], { email: u.email, emailVerified: false })).toEqual({ ok: false, refusal: { code: "sso_conflict" } });
    expect(await sso("dave", ["support"], { email: u.email })).toMatchObject({ ok: true, user: { id: String(u.id), roles: ["support"] } });
    expect((await auditEntries("users.sso_linked")).at(-1)).toMatchObject({ targetId: String(u.id) });
    // Another identity with the same email cannot take the account over.
    expect(await sso("mallory", ["payments-admins"], { email: u.email })).toEqual({ ok: false, refusal: { code: "sso_conflict" } });
    await updateUser(db.prisma, system, { userId: u.id, disabled: true, reason: "offboarding" });
    expect(await sso("dave", ["support"], { email: u.email })).toEqual({ ok: false, refusal: { code: "disabled" } });
    expect(await verifyAuditChain(db.prisma)).toMatchObject({ intact: true });
  });
});
