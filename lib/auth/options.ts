import type { AuthOptions, User } from "next-auth";
import { encode, type JWT } from "next-auth/jwt";
import CredentialsProvider from "next-auth/providers/credentials";
import type { OAuthConfig } from "next-auth/providers/oauth";
import type { RequestMeta } from "../audit";
import { db } from "../db";
import { authConfigProblems } from "./config";
import type { Role } from "./permissions";
import { oidcConfigFromEnv, type OidcConfig } from "./oidc-config";
import { auditSignOut, groupsFromClaim, passwordSignIn, ssoSignIn, type SignInRefusal } from "./sign-in";
import { clientAddress } from "../http/client-address";

/**
 * next-auth v4 configuration (the only next-auth-specific module besides the
 * route): password sign-in through lib/auth/sign-in.ts, optional OpenID
 * Connect single sign-on configured purely by environment, JWT sessions of at
 * most 8 hours carrying the user id as `uid`. lib/auth/session.ts reads that
 * cookie and loads the user fresh on every request.
 *
 * Cookies are next-auth's defaults: httpOnly, SameSite=Lax, path=/, and — when
 * NEXTAUTH_URL is https — Secure with __Secure-/__Host- name prefixes.
 */

/** Absolute session lifetime: 8 hours from sign-in, however often it is refreshed. */
export const SESSION_MAX_AGE_S = 8 * 60 * 60;
/**
 * Set as asked, but next-auth v4 only uses updateAge for database sessions: a
 * JWT session cookie is re-issued on every GET /api/auth/session (which the
 * console itself never calls; it has no SessionProvider). The jwt callback and
 * encode() below keep the 8-hour limit absolute anyway.
 */
export const SESSION_UPDATE_AGE_S = 15 * 60;

// --- errors the login page understands ------------------------------------

/**
 * The `error` value next-auth passes to the login page for a refusal.
 * "CredentialsSignin" is next-auth's own (authorize returned null).
 */
export function signInErrorCode(refusal: SignInRefusal): string {
  switch (refusal.code) {
    case "wrong_credentials":
      return "CredentialsSignin";
    case "throttled":
      return `TooManyAttempts:${refusal.waitMinutes}`;
    case "disabled":
      return "AccountDisabled";
    case "invalid_input":
      return "InvalidInput";
    case "sso_no_role":
      return "SsoNoRole";
    case "sso_conflict":
      return "SsoConflict";
    case "sso_no_email":
      return "SsoNoEmail";
  }
}

// --- single sign-on ---------------------------------------------------------

/** For the login page: the SSO button's label, or null when SSO is off or misconfigured. */
export function ssoButtonLabel(): string | null {
  try {
    return oidcConfigFromEnv()?.name ?? null;
  } catch {
    return null;
  }
}

function emailVerifiedClaim(profile: unknown): boolean | null {
  const v = (profile as { email_verified?: unknown } | undefined)?.email_verified;
  return typeof v === "boolean" ? v : null;
}

interface ConsoleAuthUser extends User {
  roles?: Role[];
  groups?: string[];
  emailVerified?: boolean | null;
}

function oidcProvider(config: OidcConfig): OAuthConfig<Record<string, unknown>> {
  return {
    id: "oidc",
    name: config.name,
    type: "oauth",
    wellKnown: `${config.issuer}/.well-known/openid-configuration`,
    authorization: { params: { scope: config.scopes } },
    idToken: true,
    checks: ["pkce", "state"],
    clientId: config.clientId,
    clientSecret: config.clientSecret,
    profile(claims): ConsoleAuthUser {
      const str = (k: string) => (typeof claims[k] === "string" ? (claims[k] as string) : null);
      return {
        id: String(claims.sub),
        email: str("email"),
        name: str("name") ?? str("preferred_username"),
        groups: groupsFromClaim(claims[config.groupsClaim]),
        emailVerified: typeof claims.email_verified === "boolean" ? claims.email_verified : null,
      };
    },
  };
}

export { oidcConfigFromEnv, type OidcConfig };

// --- the options ------------------------------------------------------------

/** Request metadata for the audit trail, from next-auth's plain header object. */
export function metaFromHeaders(headers: Record<string, string | string[] | undefined> | Headers | undefined): RequestMeta {
  const h = headers ?? {};
  const get = (n: string) => (h instanceof Headers ? h.get(n) : ([] as (string | undefined)[]).concat(h[n] ?? [])[0]) ?? null;
  return { ip: clientAddress(h), userAgent: get("user-agent"), requestId: get("x-request-id") };
}

/**
 * Builds the options for one request (`meta` is that request's IP and user
 * agent, for the audit trail of callbacks that do not see the request).
 * Throws when the production configuration is incomplete.
 */
export function authOptions(meta: RequestMeta = {}): AuthOptions {
  const problems = authConfigProblems();
  if (problems.length) throw new Error(`Sign-in is not configured: ${problems.join("; ")}`);
  const oidc = oidcConfigFromEnv();

  const credentials = CredentialsProvider({
    id: "credentials",
    name: "Email and password",
    credentials: {
      email: { label: "Email", type: "email" },
      password: { label: "Password", type: "password" },
    },
    async authorize(input, req) {
      const database = await db();
      const requestMeta = req?.headers ? metaFromHeaders(req.headers) : meta;
      const result = await passwordSignIn(database.prisma, { email: input?.email, password: input?.password }, requestMeta);
      if (!result.ok) {
        if (result.refusal.code === "wrong_credentials") return null;
        throw new Error(signInErrorCode(result.refusal));
      }
      const user: ConsoleAuthUser = { id: result.user.id, email: result.user.email, name: result.user.name, roles: result.user.roles };
      return user;
    },
  });

  return {
    secret: process.env.NEXTAUTH_SECRET,
    providers: oidc ? [credentials, oidcProvider(oidc)] : [credentials],
    session: { strategy: "jwt", maxAge: SESSION_MAX_AGE_S, updateAge: SESSION_UPDATE_AGE_S },
    jwt: {
      maxAge: SESSION_MAX_AGE_S,
      // Never beyond 8 hours after sign-in: next-auth re-issues a JWT session
      // cookie on every /api/auth/session call, which would otherwise slide forever.
      async encode(params) {
        const signedInAt = typeof params.token?.signedInAt === "number" ? params.token.signedInAt : Math.floor(Date.now() / 1000);
        const left = signedInAt + SESSION_MAX_AGE_S - Math.floor(Date.now() / 1000);
        return encode({ ...params, maxAge: Math.max(1, Math.min(params.maxAge ?? SESSION_MAX_AGE_S, left)) });
      },
    },
    pages: { signIn: "/login", error: "/login" },
    callbacks: {
      async signIn({ user, account, profile }) {
        if (account?.provider !== "oidc" || !oidc) return account?.provider === "credentials";
        const u = user as ConsoleAuthUser;
        const database = await db();
        const result = await ssoSignIn(
          database.prisma,
          "oidc",
          {
            subject: account.providerAccountId,
            email: u.email,
            emailVerified: u.emailVerified ?? emailVerifiedClaim(profile),
            name: u.name,
            groups: u.groups ?? [],
          },
          oidc.roleMap,
          meta,
        );
        if (!result.ok) return `/login?error=${encodeURIComponent(signInErrorCode(result.refusal))}`;
        // No adapter: this object is what the jwt callback receives as `user`.
        u.id = result.user.id;
        u.email = result.user.email;
        u.roles = result.user.roles;
        return true;
      },
      async jwt({ token, user }): Promise<JWT> {
        if (user) {
          const u = user as ConsoleAuthUser;
          return {
            sub: u.id,
            uid: u.id,
            email: u.email,
            name: u.name,
            roles: u.roles ?? [],
            signedInAt: Math.floor(Date.now() / 1000),
          };
        }
        const signedInAt = typeof token.signedInAt === "number" ? token.signedInAt : 0;
        if (Date.now() / 1000 - signedInAt > SESSION_MAX_AGE_S) throw new Error("session expired");
        return token;
      },
      async session({ session, token }) {
        return {
          ...session,
          user: { email: token.email, name: token.name, uid: token.uid, roles: token.roles },
        } as typeof session;
      },
      async redirect({ url, baseUrl }) {
        if (url.startsWith("/") && !url.startsWith("//") && !url.startsWith("/\\")) return `${baseUrl}${url}`;
        try {
          if (new URL(url).origin === new URL(baseUrl).origin) return url;
        } catch {
          /* not a URL */
        }
        return baseUrl;
      },
    },
    events: {
      async signOut({ token }) {
        if (typeof token?.uid === "string") {
          const database = await db();
          await auditSignOut(database.prisma, token.uid, meta).catch((err) => console.error("audit of sign-out failed:", err));
        }
      },
    },
    logger: {
      error: (code, metadata) => console.error(`[next-auth] ${code}`, metadata instanceof Error ? metadata.message : metadata),
      warn: (code) => {
        if (code !== "DEBUG_ENABLED") console.warn(`[next-auth] ${code}`);
      },
      debug: () => {},
    },
  };
}
