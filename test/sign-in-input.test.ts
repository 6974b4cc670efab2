import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";

// Watch verifyPassword: a refused malformed email must still cost one (dummy) verification, like an unknown one.
vi.mock("@/lib/auth/password", async (importOriginal) => {
  const original = await importOriginal<typeof import("@/lib/auth/password")>();
  return { ...original, verifyPassword: vi.fn(original.verifyPassword) };
});

import { verifyAuditChain } from "@/lib/audit";
import { verifyPassword } from "@/lib/auth/password";
import { passwordSignIn } from "@/lib/auth/sign-in";
import { isStorableText } from "@/lib/db/storable";
import { createUser } from "@/lib/auth/users";
import { provideDatabase } from "@/lib/db/client";
import { createTestDatabase, type TestDatabase } from "./helpers/db";

/**
 * Issue 11: the credentials sign-in (/api/auth/callback/credentials → passwordSignIn)
 * sits outside the API's input boundary. Text the database cannot store — a NUL byte
 * (PostgreSQL: 22021), an unpaired UTF-16 surrogate — and absurdly long input must be
 * a plain refused sign-in: no exception (no 500), no unstorable byte sent to the
 * database, audited as auth.sign_in_failed like any other refusal, and (for the
 * unstorable text) counted by the throttle like a wrong password.
 */

const PASSWORD = "correct horse battery staple";
const system = { type: "system" as const, label: "test" };

let db: TestDatabase;
let seq = 0;
/** A fresh user and a fresh IP per test, so throttling windows do not overlap. */
async function newUser() {
  seq++;
  const email = `input${seq}@example.test`;
  const user = await createUser(db.prisma, system, { email, name: `Input ${seq}`, password: PASSWORD, roles: ["viewer"], reason: "test fixture" });
  return { email, id: BigInt(user.id), ip: `10.9.${seq}.1` };
}
const meta = (ip: string) => ({ ip, userAgent: "vitest-agent/1.0", requestId: `req-${ip}` });

async function lastRefusal() {
  const e = await db.prisma.auditEntry.findFirstOrThrow({ where: { action: "auth.sign_in_failed" }, orderBy: { id: "desc" } });
  return { outcome: e.outcome, actorType: e.actorType, actorLabel: e.actorLabel, ip: e.ip, reason: (e.detail as { reason?: string } | null)?.reason };
}

const WRONG = { ok: false, refusal: { code: "wrong_credentials" } };

beforeAll(async () => {
  db = await createTestDatabase();
  provideDatabase(db);
});
afterAll(async () => {
  await db?.drop();
});
beforeEach(() => {
  vi.mocked(verifyPassword).mockClear();
});

describe("password sign-in refuses input the database cannot store, without an exception", () => {
  it("NUL in the email: refused like a wrong password, audited and counted under a storable email", async () => {
    const u = await newUser();
    const [local, domain] = u.email.split("@");
    const result = await passwordSignIn(db.prisma, { email: `${local}\u0000@${domain}`, password: PASSWORD }, meta(u.ip));
    expect(result).toEqual(WRONG);
    // Same cost as an unknown email: one verification against the dummy hash.
    expect(vi.mocked(verifyPassword)).toHaveBeenCalledTimes(1);
    expect(vi.mocked(verifyPassword).mock.calls[0][1]).toBeNull();
    expect(await lastRefusal()).toEqual({
      outcome: "refused",
      actorType: "anonymous",
      actorLabel: `${local}\ufffd@${domain}`,
      ip: u.ip,
      reason: "unstorable_email",
    });
    // Throttling counts it (per IP), under the storable form of the email.
    const attempts = await db.prisma.signInAttempt.findMany({ where: { ip: u.ip } });
    expect(attempts).toMatchObject([{ email: `${local}\ufffd@${domain}`, succeeded: false }]);
  });

  it("NUL in the password: refused like a wrong password, counted against the account", async () => {
    const u = await newUser();
    // The right password plus a NUL: scrypt alone would accept it (HMAC zero-pads its key, trailing NULs vanish).
    expect(await passwordSignIn(db.prisma, { email: u.email, password: `${PASSWORD}\u0000` }, meta(u.ip))).toEqual(WRONG);
    expect(await passwordSignIn(db.prisma, { email: u.email, password: "\u0000".repeat(20) }, meta(u.ip))).toEqual(WRONG);
    expect(vi.mocked(verifyPassword)).toHaveBeenCalledTimes(2);
    const last = await lastRefusal();
    expect(last).toMatchObject({ outcome: "refused", actorLabel: u.email, reason: "unstorable_password" });
    expect(await db.prisma.signInAttempt.count({ where: { email: u.email, succeeded: false } })).toBe(2);
  });

  it("lone surrogates (high, low, in email or password): refused like a wrong password", async () => {
    const u = await newUser();
    const [local, domain] = u.email.split("@");
    for (const email of [`${local}\ud800@${domain}`, `\udc00${u.email}`, `${u.email}\ud83d`]) {
      expect(await passwordSignIn(db.prisma, { email, password: PASSWORD }, meta(u.ip))).toEqual(WRONG);
      expect((await lastRefusal()).reason).toBe("unstorable_email");
    }
    expect(await passwordSignIn(db.prisma, { email: u.email, password: `${PASSWORD}\udfff` }, meta(u.ip))).toEqual(WRONG);
    expect((await lastRefusal()).reason).toBe("unstorable_password");
    // A well-formed surrogate pair (an emoji) is ordinary text: merely a wrong password.
    expect(await passwordSignIn(db.prisma, { email: u.email, password: `${PASSWORD} \ud83d\ude00` }, meta(u.ip))).toEqual(WRONG);
    expect((await lastRefusal()).reason).toBe("wrong_password");
  });

  it("a 10,000-character email (with or without a NUL) is refused as invalid input before any verification", async () => {
    const u = await newUser();
    const before = await db.prisma.signInAttempt.count();
    const long = await passwordSignIn(db.prisma, { email: `${"a".repeat(10_000)}@example.test`, password: PASSWORD }, meta(u.ip));
    const longNul = await passwordSignIn(db.prisma, { email: `${"\u0000".repeat(10_000)}@example.test`, password: PASSWORD }, meta(u.ip));
    const longPassword = await passwordSignIn(db.prisma, { email: u.email, password: `\u0000${"p".repeat(10_000)}` }, meta(u.ip));
    for (const r of [long, longNul, longPassword]) expect(r).toEqual({ ok: false, refusal: { code: "invalid_input" } });
    expect(vi.mocked(verifyPassword)).not.toHaveBeenCalled();
    expect(await db.prisma.signInAttempt.count()).toBe(before);
    const refusals = await db.prisma.auditEntry.findMany({ where: { action: "auth.sign_in_failed" }, orderBy: { id: "desc" }, take: 3 });
    for (const e of refusals) {
      expect((e.detail as { reason: string }).reason).toBe("input_too_long");
      expect(e.actorLabel!.length).toBeLessThanOrEqual(300);
      expect(isStorableText(e.actorLabel!)).toBe(true);
    }
  });

  it("unstorable attempts count towards the per-IP throttle", async () => {
    const u = await newUser();
    const policy = { windowMs: 15 * 60_000, maxFailuresPerAccount: 5, maxFailuresPerIp: 3 };
    for (let i = 0; i < 3; i++) {
      expect(await passwordSignIn(db.prisma, { email: `spray${i}\u0000@example.test`, password: PASSWORD }, meta(u.ip), { policy })).toEqual(WRONG);
    }
    const next = await passwordSignIn(db.prisma, { email: u.email, password: PASSWORD }, meta(u.ip), { policy });
    expect(next).toMatchObject({ ok: false, refusal: { code: "throttled", scope: "ip" } });
  });

  it("nothing unstorable reached the tables, and the audit chain is intact", async () => {
    const attempts = await db.prisma.signInAttempt.findMany({ select: { email: true, ip: true } });
    expect(attempts.length).toBeGreaterThan(0);
    for (const a of attempts) expect(isStorableText(a.email) && isStorableText(a.ip)).toBe(true);
    const entries = await db.prisma.auditEntry.findMany({ where: { action: "auth.sign_in_failed" }, select: { actorLabel: true } });
    for (const e of entries) expect(isStorableText(e.actorLabel ?? "")).toBe(true);
    expect(await verifyAuditChain(db.prisma)).toMatchObject({ intact: true });
  });

  it("a good sign-in still works", async () => {
    const u = await newUser();
    const good = await passwordSignIn(db.prisma, { email: ` ${u.email.toUpperCase()} `, password: PASSWORD }, meta(u.ip));
    expect(good).toEqual({ ok: true, user: { id: String(u.id), email: u.email, name: expect.any(String), roles: ["viewer"] } });
    expect(await db.prisma.signInAttempt.findMany({ where: { email: u.email } })).toMatchObject([{ ip: u.ip, succeeded: true }]);
  });
});
