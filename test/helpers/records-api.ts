import { randomBytes } from "node:crypto";
import { ALL_PERMISSIONS, type Permission, type Role } from "@/lib/auth/permissions";
import { generateToken } from "@/lib/auth/tokens";
import type { Database } from "@/lib/db/client";

/**
 * For the read-API tests: a user with the given roles and an API token for them
 * (scopes default to every permission; the token then holds exactly its roles' permissions).
 */
export async function tokenFor(
  db: Database,
  roles: Role[],
  scopes: readonly Permission[] = ALL_PERMISSIONS,
): Promise<{ token: string; userId: bigint; email: string }> {
  const email = `${roles.join("-") || "none"}-${randomBytes(4).toString("hex")}@example.com`;
  const user = await db.prisma.consoleUser.create({ data: { email, roles } });
  const t = generateToken();
  await db.prisma.apiToken.create({ data: { userId: user.id, name: "records test", tokenPrefix: t.prefix, tokenHash: t.hash, scopes: [...scopes] } });
  return { token: t.token, userId: user.id, email };
}

export type RouteParams = Record<string, string | string[]>;
type Handler = (request: Request, routeContext: { params: Promise<RouteParams> }) => Promise<Response>;

/**
 * The one way the tests call a route handler, the way Next does: the URL (a path is on
 * http://console.test), the token as a Bearer Authorization header, and the dynamic
 * segments (`[id]` → { id }) as a params promise. A streamed body is sent half-duplex.
 */
export function call(handler: Handler, url: string, token: string | null, init: RequestInit = {}, params: RouteParams = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  if (token) headers.set("authorization", `Bearer ${token}`);
  const streamed = init.body instanceof ReadableStream ? { duplex: "half" } : {};
  return handler(new Request(new URL(url, "http://console.test"), { ...init, headers, ...streamed } as RequestInit), { params: Promise.resolve(params) });
}

export async function json<T = Record<string, any>>(res: Response): Promise<T> {
  return (await res.json()) as T;
}
