import { encode } from "next-auth/jwt";
import type { PrismaClient } from "@/lib/generated/prisma/client";
import { createHash, randomBytes } from "node:crypto";
import { createSession } from "@/lib/auth/sessions";
import { generateToken } from "@/lib/auth/tokens";
import { db } from "@/lib/db";
import type { SqlExecutor } from "@/lib/db/sql";
import type { TestDatabase } from "./db";

/**
 * Test principals made directly with Prisma (not through lib/auth/users or
 * token-admin, so these tests depend only on the token format and the session
 * cookie lib/auth/session.ts reads).
 */

export const TEST_NEXTAUTH_SECRET = "test-secret-for-route-tests-0123456789abcdef";
export const SESSION_COOKIE = "next-auth.session-token";

/** Session cookies are read with NEXTAUTH_SECRET and, over http, under next-auth's plain cookie name. */
export function useTestAuthEnv(): void {
  process.env.NEXTAUTH_SECRET = TEST_NEXTAUTH_SECRET;
  delete process.env.NEXTAUTH_URL;
  delete process.env.VERCEL;
}

let n = 0;

export async function createTestUser(prisma: PrismaClient, opts: { roles: string[]; email?: string; disabled?: boolean }) {
  return prisma.consoleUser.create({
    data: {
      email: opts.email ?? `u${Date.now().toString(36)}-${n++}@example.test`,
      roles: opts.roles,
      disabledAt: opts.disabled ? new Date() : null,
    },
  });
}

/** A bearer token for the user: the plaintext is returned, only its prefix and hash are stored. */
export async function createTestToken(
  prisma: PrismaClient,
  userId: bigint,
  opts: { scopes: readonly string[]; expiresAt?: Date | null; revoked?: boolean; name?: string },
): Promise<string> {
  const g = generateToken();
  await prisma.apiToken.create({
    data: {
      userId,
      name: opts.name ?? `test token ${n++}`,
      tokenPrefix: g.prefix,
      tokenHash: g.hash,
      scopes: [...opts.scopes],
      expiresAt: opts.expiresAt === undefined ? new Date(Date.now() + 86_400_000) : opts.expiresAt,
      revokedAt: opts.revoked ? new Date() : null,
    },
  });
  return g.token;
}

/**
 * The Cookie header of a signed-in browser session for the user: a server-side
 * session (lib/auth/sessions.ts, in the database given to provideDatabase) and
 * the next-auth JWT naming it (uid + sid). For a user that does not exist, a
 * JWT naming a session that does not exist either.
 */
export async function sessionCookie(userId: bigint): Promise<string> {
  const database = await db();
  const exists = await database.prisma.consoleUser.findUnique({ where: { id: userId }, select: { id: true } });
  const sid = exists ? (await createSession(database.prisma, { userId, method: "password" })).secret : randomBytes(32).toString("base64url");
  const jwt = await encode({ token: { uid: String(userId), sid }, secret: process.env.NEXTAUTH_SECRET ?? TEST_NEXTAUTH_SECRET });
  return `${SESSION_COOKIE}=${jwt}`;
}

/**
 * Every table of the public schema: its row count and a digest of its rows, so a
 * test can assert that nothing was written anywhere. `api_tokens.last_used_at`
 * is left out: verifying a token legitimately touches it (at most once a minute).
 */
export async function tableSnapshot(sql: SqlExecutor): Promise<Record<string, { rows: number; digest: string | null }>> {
  if (sql.dialect.name === "mysql") return mysqlTableSnapshot(sql);
  const tables = await sql.query<{ name: string }>(
    `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY 1`,
  );
  const out: Record<string, { rows: number; digest: string | null }> = {};
  for (const { name } of tables) {
    const t = `"${name.replace(/"/g, '""')}"`;
    const [row] = await sql.query<{ n: bigint; digest: string | null }>(
      `SELECT count(*)::bigint AS n, md5(string_agg((to_jsonb(t) - 'last_used_at')::text, ',' ORDER BY (to_jsonb(t) - 'last_used_at')::text)) AS digest FROM ${t} t`,
    );
    out[name] = { rows: Number(row.n), digest: row.digest };
  }
  return out;
}

/** MySQL: the same, digested here (no to_jsonb; GROUP_CONCAT would cut long groups short). */
async function mysqlTableSnapshot(sql: SqlExecutor): Promise<Record<string, { rows: number; digest: string | null }>> {
  const tables = await sql.query<{ name: string }>(
    `SELECT TABLE_NAME AS name FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_TYPE = 'BASE TABLE' ORDER BY 1`,
  );
  const out: Record<string, { rows: number; digest: string | null }> = {};
  for (const { name } of tables) {
    const rows = await sql.query<Record<string, unknown>>(`SELECT * FROM \`${name.replace(/`/g, "``")}\``);
    const texts = rows.map(({ last_used_at: _touched, ...row }) => JSON.stringify(row, (_k, v) => (typeof v === "bigint" ? v.toString() : v))).sort();
    out[name] = { rows: rows.length, digest: rows.length ? createHash("md5").update(texts.join(",")).digest("hex") : null };
  }
  return out;
}

/**
 * Drops a test database after its pool's sockets have really closed. pg's
 * Pool.end() resolves before its clients' connections are gone, and the
 * helper's DROP DATABASE … WITH (FORCE) then kills them mid-close: an uncaught
 * 57P01 "terminating connection due to administrator command" that fails the
 * run at random under load. (Root cause in test/helpers/db.ts drop().)
 */
/** Kept for the tests that call it: TestDatabase.drop() now waits for connections to close itself. */
export async function dropTestDatabase(db: TestDatabase | undefined): Promise<void> {
  await db?.drop();
}
