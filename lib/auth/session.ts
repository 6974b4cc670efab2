import { getToken } from "next-auth/jwt";
import type { PrismaClient } from "../generated/prisma/client";
import { permissionsOf, type Principal, type Role } from "./permissions";
import { liveSession } from "./sessions";

/**
 * The signed-in user behind a request's session cookie (next-auth JWT), loaded
 * fresh from the database on every request with the server-side session the
 * cookie names (lib/auth/sessions.ts): a signed-out, revoked or expired session is
 * no session, and disabling a user or changing roles takes effect at once, not
 * when the JWT expires. A cookie from before server-side sessions (no `sid`) is
 * refused: its owner signs in again.
 */
export async function sessionPrincipal(prisma: PrismaClient, request: Request): Promise<Principal | null> {
  const jwt = await sessionJwt(request);
  const uid = typeof jwt?.uid === "string" && /^\d{1,19}$/.test(jwt.uid) ? BigInt(jwt.uid) : null;
  const sid = typeof jwt?.sid === "string" && /^[A-Za-z0-9_-]{20,100}$/.test(jwt.sid) ? jwt.sid : null;
  if (!uid || !sid) return null;
  const session = await liveSession(prisma, sid, uid);
  if (!session) return null;
  const user = session.user;
  return { kind: "user", userId: user.id, email: user.email, roles: user.roles as Role[], permissions: permissionsOf(user.roles), sessionId: session.id };
}

/** The decoded session cookie (next-auth JWT), or null. */
async function sessionJwt(request: Request) {
  // Only the cookie: next-auth would also read a Bearer header as a JWT.
  const cookie = request.headers.get("cookie");
  if (!cookie) return null;
  // getToken reads the session cookie from req.cookies only (next-auth's SessionStore), never from the Cookie header.
  return getToken({ req: { headers: new Headers({ cookie }), cookies: parseCookies(cookie) } as never, secret: process.env.NEXTAUTH_SECRET });
}

/** The session secret (`sid`) of a request's session cookie, or null. */
export async function sessionSecretOf(request: Request): Promise<string | null> {
  const jwt = await sessionJwt(request);
  return typeof jwt?.sid === "string" ? jwt.sid : null;
}

/** The names of the session cookie (next-auth chunks a long one into .0, .1, …) a request carries. */
export function sessionCookieNames(request: Request): string[] {
  return Object.keys(parseCookies(request.headers.get("cookie") ?? "")).filter((n) => /^(__Secure-)?next-auth\.session-token(\.\d+)?$/.test(n));
}

/** Cookie header → { name: value } (first occurrence wins, values URI-decoded when they are encoded). */
function parseCookies(header: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 1) continue;
    const name = part.slice(0, eq).trim();
    if (name in out) continue;
    const raw = part
      .slice(eq + 1)
      .trim()
      .replace(/^"(.*)"$/, "$1");
    try {
      out[name] = decodeURIComponent(raw);
    } catch {
      out[name] = raw;
    }
  }
  return out;
}

/** Set-Cookie values that delete every session cookie the request carries (next-auth's names and attributes). */
export function clearedSessionCookies(request: Request): string[] {
  return sessionCookieNames(request).map((name) => `${name}=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax${name.startsWith("__Secure-") ? "; Secure" : ""}`);
}
