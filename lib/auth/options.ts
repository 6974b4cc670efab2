import { AsyncLocalStorage } from "node:async_hooks";
import type { AuthOptions, User } from "next-auth";
import type { TokenSet } from "openid-client";
import { encode, type JWT } from "next-auth/jwt";
import CredentialsProvider from "next-auth/providers/credentials";
import type { OAuthConfig } from "next-auth/providers/oauth";
import type { RequestMeta } from "../audit";
import { db } from "../db";
import { authConfigProblems } from "./config";
import type { Role } from "./permissions";
import { groupsFromClaims, oidcConfigFromEnv, type OidcConfig } from "./oidc-config";
import { discover, requestedScopes } from "./oidc-discovery";
import { createSession, SESSION_MAX_AGE_S } from "./sessions";
import { passwordSignIn, signOutSession, ssoSignIn, type SignInRefusal } from "./sign-in";
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

export { SESSION_MAX_AGE_S };
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

/** The claims the console needs besides sub: an email, a name, the groups. */
function missingClaims(claims: Record<string, unknown>, config: OidcConfig): boolean {
  return (
    typeof claims.email !== "string" ||
    (typeof claims.name !== "string" && typeof claims.preferred_username !== "string") ||
    groupsFromClaims(claims, config.groupsClaims).length === 0
  );
}

function oidcProvider(config: OidcConfig, scope: string): OAuthConfig<Record<string, unknown>> {
  return {
    id: "oidc",
    name: config.name,
    type: "oauth",
    wellKnown: `${config.issuer}/.well-known/openid-configuration`,
    authorization: { params: { scope } },
    idToken: true,
    checks: ["pkce", "state"],
    clientId: config.clientId,
    clientSecret: config.clientSecret,
    // The ID token is validated first (signature, issuer, audience, expiry); a
    // conforming provider keeps email, name and groups out of a code-flow ID token
    // when an access token lets the client ask userinfo, so ask it for what is missing.
    // Userinfo must name the same subject (openid-client checks); ID-token claims win.
    userinfo: {
      async request({ tokens, client }) {
        // next-auth passes openid-client's TokenSet (its types say TokenSetParameters).
        const set = tokens as unknown as TokenSet;
        const claims = set.claims() as Record<string, unknown>;
        if (!missingClaims(claims, config) || !set.access_token || !client.issuer.metadata.userinfo_endpoint) return claims;
        const info = (await client.userinfo(set)) as Record<string, unknown>;
        return { ...info, ...Object.fromEntries(Object.entries(claims).filter(([, v]) => v !== undefined && v !== null)) };
      },
    },
    profile(claims): ConsoleAuthUser {
      const str = (k: string) => (typeof claims[k] === "string" ? (claims[k] as string) : null);
      return {
        id: String(claims.sub),
        email: str("email"),
        name: str("name") ?? str("preferred_username"),
        groups: groupsFromClaims(claims, config.groupsClaims),
        emailVerified: typeof claims.email_verified === "boolean" ? claims.email_verified : null,
      };
    },
  };
}

export { oidcConfigFromEnv, type OidcConfig };

// --- the options ------------------------------------------------------------

/** next-auth's logged errors during one request (its logger is process-wide; this keeps them per request). */
const authErrors = new AsyncLocalStorage<string[]>();

function errorMessage(metadata: unknown): string {
  const m = metadata as { error?: unknown; message?: unknown } | undefined;
  if (metadata instanceof Error) return metadata.message;
  if (m?.error instanceof Error) return m.error.message;
  if (typeof m?.message === "string") return m.message;
  return typeof metadata === "string" ? metadata : "";
}

/** The options for a request to /api/auth/*, with the scopes the provider's discovery document allows. */
export async function authOptionsForRequest(meta: RequestMeta): Promise<AuthOptions> {
  const oidc = oidcConfigFromEnv();
  const scope = oidc ? requestedScopes(oidc, await discover(oidc.issuer).catch(() => null)) : undefined;
  return authOptions(meta, scope);
}

/** Runs next-auth's handler for one request and returns what it logged as errors along with its answer. */
export async function withAuthErrors(run: () => Promise<Response>): Promise<{ response: Response; errors: string[] }> {
  const errors: string[] = [];
  const response = await authErrors.run(errors, run);
  return { response, errors };
}

/** Request metadata for the audit trail, from next-auth's plain header object. */
export function metaFromHeaders(headers: Record<string, string | string[] | undefined> | Headers | undefined): RequestMeta {
  const h = headers ?? {};
  const get = (n: string) => (h instanceof Headers ? h.get(n) : ([] as (string | undefined)[]).concat(h[n] ?? [])[0]) ?? null;
  return { ip: clientAddress(h), userAgent: get("user-agent"), requestId: get("x-request-id") };
}

/**
 * Builds the options for one request (`meta` is that request's IP and user
 * agent, for the audit trail of callbacks that do not see the request).
 * `oidcScope`: the scopes to ask the identity provider for (authOptionsForRequest
 * reads them from its discovery document). Throws when the production
 * configuration is incomplete.
 */
export function authOptions(meta: RequestMeta = {}, oidcScope?: string): AuthOptions {
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
    providers: oidc ? [credentials, oidcProvider(oidc, oidcScope ?? requestedScopes(oidc, null))] : [credentials],
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
      async jwt({ token, user, account }): Promise<JWT> {
        if (user) {
          // Sign-in: the server-side session starts here; the cookie carries only its secret.
          const u = user as ConsoleAuthUser;
          const sso = account?.provider === "oidc";
          const database = await db();
          const { secret } = await createSession(database.prisma, {
            userId: u.id,
            method: sso ? "sso" : "password",
            provider: sso ? "oidc" : null,
            idToken: sso && typeof account?.id_token === "string" ? account.id_token : null,
            request: meta,
          });
          return {
            sub: u.id,
            uid: u.id,
            sid: secret,
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
      // next-auth's own /api/auth/signout: the session ends in the database too (the console's button uses DELETE /api/v1/session).
      async signOut({ token }) {
        if (typeof token?.sid === "string") {
          const database = await db();
          await signOutSession(database.prisma, token.sid, meta).catch((err) => console.error("sign-out failed:", err));
        }
      },
    },
    logger: {
      error: (code, metadata) => {
        console.error(`[next-auth] ${code}`, metadata instanceof Error ? metadata.message : metadata);
        authErrors.getStore()?.push(`${code}: ${errorMessage(metadata)}`.slice(0, 300));
      },
      warn: (code) => {
        if (code !== "DEBUG_ENABLED") console.warn(`[next-auth] ${code}`);
      },
      debug: () => {},
    },
  };
}
