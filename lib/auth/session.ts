import { getToken } from "next-auth/jwt";
import type { PrismaClient } from "../generated/prisma/client";
import { permissionsOf, type Principal, type Role } from "./permissions";

/**
 * The signed-in user behind a request's session cookie (next-auth JWT), loaded
 * fresh from the database on every request: disabling a user or changing roles
 * takes effect at once, not when the JWT expires.
 */
export async function sessionPrincipal(prisma: PrismaClient, request: Request): Promise<Principal | null> {
  // Only the cookie: next-auth would also read a Bearer header as a JWT.
  if (!request.headers.get("cookie")) return null;
  const headers = new Headers({ cookie: request.headers.get("cookie")! });
  // getToken reads the session cookie from req.cookies only (next-auth's SessionStore), never from the Cookie header.
  const jwt = await getToken({ req: { headers, cookies: parseCookies(headers.get("cookie")!) } as never, secret: process.env.NEXTAUTH_SECRET });
  const uid = typeof jwt?.uid === "string" && /^\d{1,19}$/.test(jwt.uid) ? BigInt(jwt.uid) : null;
  if (!uid) return null;
  const user = await prisma.consoleUser.findUnique({ where: { id: uid } });
  if (!user || user.disabledAt) return null;
  return { kind: "user", userId: user.id, email: user.email, roles: user.roles as Role[], permissions: permissionsOf(user.roles) };
}

/** Cookie header → { name: value } (first occurrence wins, values URI-decoded when they are encoded). */
function parseCookies(header: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 1) continue;
    const name = part.slice(0, eq).trim();
    if (name in out) continue;
    const raw = part.slice(eq + 1).trim().replace(/^"(.*)"$/, "$1");
    try {
      out[name] = decodeURIComponent(raw);
    } catch {
      out[name] = raw;
    }
  }
  return out;
}
