import NextAuth from "next-auth";
import type { NextRequest } from "next/server";
import type { Access } from "@/lib/auth/permissions";
import { authOptionsForRequest, metaFromHeaders, withAuthErrors } from "@/lib/auth/options";
import { auditSsoFailure } from "@/lib/auth/sign-in";
import { db } from "@/lib/db";

/**
 * next-auth's own endpoints (/api/auth/csrf, /session, /callback/credentials,
 * /signin/oidc, /signout, …): public by nature — signing in is how one stops
 * being anonymous. They protect themselves (CSRF token on every POST; state and
 * PKCE on the SSO callback). The options are built per request so callbacks can
 * audit the caller's address; a single sign-on request next-auth turns away
 * (tampered callback, provider error…) is audited here.
 */
async function handler(request: NextRequest, context: { params: Promise<{ nextauth: string[] }> }): Promise<Response> {
  const meta = metaFromHeaders(request.headers);
  let options;
  try {
    options = await authOptionsForRequest(meta);
  } catch (err) {
    console.error(err instanceof Error ? err.message : err);
    return Response.json({ message: "Sign-in is not configured on this server; see its log." }, { status: 500 });
  }
  const { response, errors } = await withAuthErrors(() => NextAuth(request, context, options) as Promise<Response>);
  const path = new URL(request.url).pathname;
  if (path.startsWith("/api/auth/callback/") || path.startsWith("/api/auth/signin/")) {
    const database = await db();
    await auditSsoFailure(
      database.prisma,
      { path, location: response.headers.get("location"), providerError: new URL(request.url).searchParams.get("error"), errors },
      meta,
    ).catch((err) => console.error("audit of a failed sign-in failed:", err));
  }
  return response;
}

const route = Object.assign(handler, { access: "public" as Access });
export { route as GET, route as POST };
