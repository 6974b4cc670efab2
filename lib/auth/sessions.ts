import { createHash, randomBytes } from "node:crypto";
import { z } from "zod";
import type { ConsoleSession, ConsoleUser, Prisma, PrismaClient } from "../generated/prisma/client";
import { appendAudit, type AuditActor, type RequestMeta } from "../audit";
import { reasonSchema } from "../kernel/input";
import { NotFoundError } from "../kernel/errors";

/**
 * Server-side sessions (console_sessions). The session cookie is a next-auth JWT
 * (signed and encrypted with NEXTAUTH_SECRET) carrying the user id and a random
 * session secret; the database keeps only the secret's SHA-256. A request's
 * session is valid while its row exists, is not revoked and has not expired —
 * so signing out ends it for good (a copied cookie is refused afterwards), and an
 * admin can end every session of a user ("sign out everywhere"). Disabling a user
 * ends their sessions too; role changes apply at the next request because the
 * user is loaded fresh every time (lib/auth/session.ts).
 */

/** Absolute session lifetime: 8 hours from sign-in, however often it is used. */
export const SESSION_MAX_AGE_S = 8 * 60 * 60;
/** last_seen_at is written at most this often per session (one UPDATE a minute, not one per request). */
const TOUCH_EVERY_MS = 60_000;

export type SessionMethod = "password" | "sso";
type Tx = Prisma.TransactionClient;

export const sessionSecretHash = (secret: string) => createHash("sha256").update(secret, "utf8").digest("hex");

export interface NewSession {
  userId: bigint | string;
  method: SessionMethod;
  provider?: string | null;
  /** The identity provider's ID token, kept for RP-initiated logout (id_token_hint). */
  idToken?: string | null;
  request?: RequestMeta;
  now?: Date;
}

/** Starts a session; the returned secret goes into the cookie and nowhere else. */
export async function createSession(prisma: PrismaClient | Tx, s: NewSession): Promise<{ secret: string; session: ConsoleSession }> {
  const secret = randomBytes(32).toString("base64url");
  const now = s.now ?? new Date();
  const session = await prisma.consoleSession.create({
    data: {
      userId: BigInt(s.userId),
      secretHash: sessionSecretHash(secret),
      method: s.method,
      provider: s.provider ?? null,
      idToken: s.idToken && s.idToken.length <= 16_384 ? s.idToken : null,
      ip: s.request?.ip?.slice(0, 100) ?? null,
      userAgent: s.request?.userAgent?.slice(0, 500) ?? null,
      createdAt: now,
      lastSeenAt: now,
      expiresAt: new Date(now.getTime() + SESSION_MAX_AGE_S * 1000),
    },
  });
  return { secret, session };
}

/**
 * The live session behind a cookie's secret, with its user (who must be the
 * cookie's user and not disabled); null when revoked, expired, unknown or
 * disabled. Records the use at most once a minute.
 */
export async function liveSession(
  prisma: PrismaClient,
  secret: string,
  userId: bigint,
  now = new Date(),
): Promise<(ConsoleSession & { user: ConsoleUser }) | null> {
  const session = await prisma.consoleSession.findUnique({ where: { secretHash: sessionSecretHash(secret) }, include: { user: true } });
  if (!session || session.userId !== userId || session.revokedAt || session.expiresAt <= now || session.user.disabledAt) return null;
  if (now.getTime() - session.lastSeenAt.getTime() >= TOUCH_EVERY_MS) {
    await prisma.consoleSession.updateMany({ where: { id: session.id, revokedAt: null }, data: { lastSeenAt: now } });
  }
  return session;
}

const revokedData = (reason: string, now: Date) => ({ revokedAt: now, revokedReason: reason.slice(0, 200), idToken: null });

/** Ends one session by its cookie secret (sign-out). Returns the session as it was, or null if it was not live. */
export async function revokeSessionBySecret(tx: Tx, secret: string, reason: string, now = new Date()): Promise<ConsoleSession | null> {
  const session = await tx.consoleSession.findUnique({ where: { secretHash: sessionSecretHash(secret) } });
  if (!session || session.revokedAt) return null;
  const { count } = await tx.consoleSession.updateMany({ where: { id: session.id, revokedAt: null }, data: revokedData(reason, now) });
  return count ? session : null;
}

/** Ends every live session of a user; the number ended. */
export async function revokeUserSessions(tx: Tx, userId: bigint, reason: string, now = new Date()): Promise<number> {
  const { count } = await tx.consoleSession.updateMany({ where: { userId, revokedAt: null, expiresAt: { gt: now } }, data: revokedData(reason, now) });
  return count;
}

export interface SessionView {
  id: string;
  method: SessionMethod;
  provider: string | null;
  ip: string | null;
  userAgent: string | null;
  createdAt: string;
  lastSeenAt: string;
  expiresAt: string;
}

export function sessionView(s: ConsoleSession): SessionView {
  return {
    id: s.id.toString(),
    method: s.method as SessionMethod,
    provider: s.provider,
    ip: s.ip,
    userAgent: s.userAgent,
    createdAt: s.createdAt.toISOString(),
    lastSeenAt: s.lastSeenAt.toISOString(),
    expiresAt: s.expiresAt.toISOString(),
  };
}

/** A user's live sessions, newest first (for admins: /admin/users, GET /api/v1/users/{id}/sessions). */
export async function listLiveSessions(prisma: PrismaClient, userId: bigint, now = new Date()): Promise<SessionView[]> {
  const user = await prisma.consoleUser.findUnique({ where: { id: userId }, select: { id: true } });
  if (!user) throw new NotFoundError(`No user with id ${userId}.`);
  const rows = await prisma.consoleSession.findMany({ where: { userId, revokedAt: null, expiresAt: { gt: now } }, orderBy: { createdAt: "desc" }, take: 200 });
  return rows.map(sessionView);
}

/** Live sessions per user (the users list shows the count). */
export async function liveSessionCounts(prisma: PrismaClient, now = new Date()): Promise<Map<string, number>> {
  const rows = await prisma.consoleSession.groupBy({ by: ["userId"], where: { revokedAt: null, expiresAt: { gt: now } }, _count: { _all: true } });
  return new Map(rows.map((r) => [r.userId.toString(), r._count._all]));
}

export const revokeSessionsBodySchema = z.object({ reason: reasonSchema }).strict();

/** "Sign out everywhere": an admin ends all of a user's sessions, audited with the reason. */
export async function signOutEverywhere(
  prisma: PrismaClient,
  actor: AuditActor,
  input: { userId: bigint; reason: string },
  request: RequestMeta = {},
): Promise<{ revoked: number }> {
  return prisma.$transaction(async (tx) => {
    const user = await tx.consoleUser.findUnique({ where: { id: input.userId }, select: { id: true, email: true } });
    if (!user) throw new NotFoundError(`No user with id ${input.userId}.`);
    const revoked = await revokeUserSessions(tx, user.id, "signed out everywhere by an admin");
    await appendAudit(tx, {
      actor,
      action: "users.sessions_revoke",
      target: { table: "console_users", id: user.id },
      reason: input.reason,
      request,
      outcome: "done",
      detail: { revoked, email: user.email },
    });
    return { revoked };
  });
}
