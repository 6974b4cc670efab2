import NextAuth from "next-auth";
import type { NextRequest } from "next/server";
import type { Access } from "@/lib/auth/permissions";
import { authOptions, metaFromHeaders } from "@/lib/auth/options";

/**
 * next-auth's own endpoints (/api/auth/csrf, /session, /callback/credentials,
 * /signin/oidc, /signout, …): public by nature — signing in is how one stops
 * being anonymous. They protect themselves (CSRF token on every POST).
 * The options are built per request so callbacks can audit the caller's IP.
 */
async function handler(request: NextRequest, context: { params: Promise<{ nextauth: string[] }> }): Promise<Response> {
  let options;
  try {
    options = authOptions(metaFromHeaders(request.headers));
  } catch (err) {
    console.error(err instanceof Error ? err.message : err);
    return Response.json({ message: "Sign-in is not configured on this server; see its log." }, { status: 500 });
  }
  return NextAuth(request, context, options);
}

const route = Object.assign(handler, { access: "public" as Access });
export { route as GET, route as POST };
