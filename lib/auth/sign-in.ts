import type { ConsoleSession, ConsoleUser, PrismaClient } from "../generated/prisma/client";
import { appendAudit, audit, type AuditActor, type RequestMeta } from "../audit";
import { isStorableText, storableText } from "../db/storable";
import { PASSWORD_MAX_LENGTH, hashPassword, passwordNeedsRehash, verifyPassword } from "./password";
import { groupsFromClaim, oidcConfigFromEnv, parseRoleMap, rolesFromGroups } from "./oidc-config";
import { discover, endSessionUrl } from "./oidc-discovery";
import { sessionSecretOf } from "./session";
import { isRole, type Role } from "./permissions";
import { revokeSessionBySecret } from "./sessions";
import { checkSignInThrottle, recordSignInAttempt, waitMinutes, type ThrottlePolicy, DEFAULT_THROTTLE } from "./throttle";

/**
 * Signing in, independent of next-auth (lib/auth/options.ts adapts it):
 * password sign-in with throttling, and single sign-on users mapped from their
 * identity provider's groups. Every outcome is audited ("auth.sign_in" done,
 * "auth.sign_in_failed" refused) with the client's IP and user agent; no
 * password ever reaches the audit trail or the logs.
 */

export const EMAIL_MAX_LENGTH = 254;

export interface SignedInUser {
  id: string;
  email: string;
  name: string | null;
  roles: Role[];
}

/** Why a sign-in was refused; `code` is what the login page turns into a message. */
export type SignInRefusal =
  | { code: "invalid_input" }
  | { code: "wrong_credentials" }
  | { code: "throttled"; waitMinutes: number; scope: "account" | "ip" }
  | { code: "disabled" }
  | { code: "sso_no_role" }
  | { code: "sso_conflict" }
  | { code: "sso_no_email" };

export type SignInResult = { ok: true; user: SignedInUser } | { ok: false; refusal: SignInRefusal };

export function normaliseEmail(raw: string): string {
  return raw.normalize("NFC").trim().toLowerCase();
}

function toSignedIn(u: ConsoleUser): SignedInUser {
  return { id: u.id.toString(), email: u.email, name: u.name, roles: u.roles.filter(isRole) };
}

function userActor(u: Pick<ConsoleUser, "id" | "email">): AuditActor {
  return { type: "user", userId: u.id, label: u.email };
}

export interface PasswordSignInOptions {
  now?: Date;
  policy?: ThrottlePolicy;
}

/**
 * Email + password. Order: refuse overlong or malformed input (no database, no
 * scrypt); refuse when throttled (no scrypt); verify the password — against a
 * dummy hash for unknown and SSO-only users, so every path costs one scrypt;
 * record the attempt; audit. A disabled account is only reported as disabled
 * to someone who knows its password; anyone else gets "wrong credentials".
 *
 * Text the database cannot store (lib/db/storable.ts: NUL, unpaired UTF-16
 * surrogates) is never accepted as a credential: the API's input boundary
 * refuses it in every request body, and scrypt would ignore trailing NULs (HMAC
 * zero-pads its key: "pw\0" would pass for "pw") and read every lone surrogate
 * as U+FFFD. Such an attempt is refused as wrong credentials, exactly like an
 * unknown email (throttle check, one dummy scrypt, attempt recorded, audited
 * with reason "unstorable_email" / "unstorable_password"), but the database only
 * ever sees the email with those characters replaced by U+FFFD (issue 11: NUL
 * made PostgreSQL fail with 22021, a 500).
 */
export async function passwordSignIn(
  prisma: PrismaClient,
  input: { email?: unknown; password?: unknown },
  meta: RequestMeta,
  opts: PasswordSignInOptions = {},
): Promise<SignInResult> {
  // lib/http/client-address.ts yields an address; storable whatever a caller passes.
  const ip = storableText(meta.ip || "unknown");
  const rawEmail = typeof input.email === "string" ? input.email : "";
  const password = typeof input.password === "string" ? input.password : "";
  // Cheap length checks first (a huge string is refused before anything scans it).
  const overlong =
    rawEmail.length > EMAIL_MAX_LENGTH * 2 ||
    password.length > PASSWORD_MAX_LENGTH * 2 ||
    [...password].length > PASSWORD_MAX_LENGTH ||
    normaliseEmail(rawEmail).length > EMAIL_MAX_LENGTH;
  // Checked only once the length is bounded (a regex scan, then).
  const unstorableEmail = !overlong && !isStorableText(rawEmail);
  const unstorablePassword = !overlong && !isStorableText(password);
  // What reaches the database (throttle, attempts, audit): storable, whatever was sent.
  const email = storableText(normaliseEmail(overlong ? rawEmail.slice(0, EMAIL_MAX_LENGTH) : rawEmail));
  const refuse = async (refusal: SignInRefusal, reason: string, user?: ConsoleUser | null, record = true): Promise<SignInResult> => {
    await prisma.$transaction(async (tx) => {
      if (record) await recordSignInAttempt(tx, email, ip, false, opts.now);
      await appendAudit(tx, {
        actor: { type: "anonymous", label: email || "(no email)" },
        action: "auth.sign_in_failed",
        target: user ? { table: "console_users", id: user.id } : null,
        outcome: "refused",
        request: meta,
        detail: { method: "password", reason, ...(refusal.code === "throttled" ? { scope: refusal.scope, waitMinutes: refusal.waitMinutes } : {}) },
      });
    });
    return { ok: false, refusal };
  };

  if (overlong) return refuse({ code: "invalid_input" }, "input_too_long", null, false);
  if (!email || !password) return refuse({ code: "invalid_input" }, "missing_email_or_password", null, false);

  const now = opts.now ?? new Date();
  const throttle = await checkSignInThrottle(prisma, email, ip, now, opts.policy ?? DEFAULT_THROTTLE);
  if (throttle.throttled) {
    return refuse({ code: "throttled", scope: throttle.scope, waitMinutes: waitMinutes(throttle.retryAfterMs) }, `throttled_${throttle.scope}`, null, false);
  }

  // An unstorable email names no account (its storable form might: do not look it up).
  const user = unstorableEmail ? null : await prisma.consoleUser.findUnique({ where: { email } });
  // verifyPassword runs a dummy scrypt when there is no usable hash (unknown or SSO-only user);
  // an unstorable credential costs that one dummy scrypt too, so it looks like any wrong password.
  const unstorable = unstorableEmail || unstorablePassword;
  const matches = await verifyPassword(password, unstorable ? null : (user?.passwordHash ?? null));
  if (unstorable) return refuse({ code: "wrong_credentials" }, unstorableEmail ? "unstorable_email" : "unstorable_password", user);
  if (!user) return refuse({ code: "wrong_credentials" }, "unknown_email");
  if (!matches) return refuse({ code: "wrong_credentials" }, user.passwordHash ? "wrong_password" : "no_password", user);
  if (user.disabledAt) return refuse({ code: "disabled" }, "account_disabled", user);

  const rehash = user.passwordHash && passwordNeedsRehash(user.passwordHash) ? await hashPassword(password).catch(() => null) : null;
  const updated = await prisma.$transaction(async (tx) => {
    await recordSignInAttempt(tx, email, ip, true, opts.now);
    const u = await tx.consoleUser.update({
      where: { id: user.id },
      data: { lastSignInAt: now, ...(rehash ? { passwordHash: rehash } : {}) },
    });
    await appendAudit(tx, {
      actor: userActor(u),
      action: "auth.sign_in",
      target: { table: "console_users", id: u.id },
      outcome: "done",
      request: meta,
      detail: { method: "password", roles: u.roles, ...(rehash ? { passwordRehashed: true } : {}) },
    });
    return u;
  });
  return { ok: true, user: toSignedIn(updated) };
}

// --- single sign-on (OpenID Connect) ------------------------------------------

export { groupsFromClaim, parseRoleMap, rolesFromGroups };

export interface SsoProfile {
  /** The identity provider's stable subject ("sub"). */
  subject: string;
  email?: string | null;
  emailVerified?: boolean | null;
  name?: string | null;
  groups: string[];
}

const sameRoles = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((r) => b.includes(r));

/**
 * Single sign-on: the console user is found by SSO subject, else by email
 * (linked on first SSO sign-in if it has no SSO subject yet and the provider
 * says the email is verified), else created. Roles follow the identity
 * provider's groups at every sign-in; a change is audited as
 * "users.roles_changed_by_sso". No matching group → refused (and an existing
 * user loses its roles, so an open session can do nothing any more).
 */
export async function ssoSignIn(
  prisma: PrismaClient,
  provider: string,
  profile: SsoProfile,
  roleMap: Map<string, Role[]>,
  meta: RequestMeta,
  now = new Date(),
): Promise<SignInResult> {
  const email = profile.email ? normaliseEmail(profile.email) : "";
  const roles = rolesFromGroups(profile.groups, roleMap);
  const subject = `${provider}:${profile.subject}`.slice(0, 300);
  const system: AuditActor = { type: "system", label: `single sign-on (${provider})` };

  return prisma.$transaction(async (tx) => {
    const refuse = async (refusal: SignInRefusal, reason: string, user?: ConsoleUser | null): Promise<SignInResult> => {
      await appendAudit(tx, {
        actor: { type: "anonymous", label: email || subject },
        action: "auth.sign_in_failed",
        target: user ? { table: "console_users", id: user.id } : null,
        outcome: "refused",
        request: meta,
        detail: { method: "sso", provider, subject, reason, groups: profile.groups.slice(0, 50) },
      });
      return { ok: false, refusal };
    };

    let user = await tx.consoleUser.findUnique({ where: { ssoSubject: subject } });
    if (!user) {
      if (!email || email.length > EMAIL_MAX_LENGTH) return refuse({ code: "sso_no_email" }, "no_usable_email");
      const byEmail = await tx.consoleUser.findUnique({ where: { email } });
      if (byEmail && (byEmail.ssoSubject || profile.emailVerified === false)) {
        return refuse({ code: "sso_conflict" }, byEmail.ssoSubject ? "email_linked_to_other_subject" : "email_not_verified", byEmail);
      }
      user = byEmail;
    }

    if (roles.length === 0) {
      if (user && user.roles.length > 0 && user.ssoSubject) {
        const stripped = await tx.consoleUser.update({ where: { id: user.id }, data: { roles: [], updatedAt: now } });
        await appendAudit(tx, {
          actor: system,
          action: "users.roles_changed_by_sso",
          target: { table: "console_users", id: user.id },
          before: { roles: user.roles },
          after: { roles: stripped.roles },
          reason: "no identity-provider group maps to a console role any more",
          request: meta,
          outcome: "done",
          detail: { provider, subject, groups: profile.groups.slice(0, 50) },
        });
      }
      return refuse({ code: "sso_no_role" }, "no_role_for_groups", user);
    }
    if (user?.disabledAt) return refuse({ code: "disabled" }, "account_disabled", user);

    if (!user) {
      user = await tx.consoleUser.create({
        data: { email, name: profile.name?.slice(0, 200) || null, roles, ssoSubject: subject, lastSignInAt: now },
      });
      await appendAudit(tx, {
        actor: system,
        action: "users.create",
        target: { table: "console_users", id: user.id },
        after: { email: user.email, name: user.name, roles: user.roles, ssoSubject: subject },
        reason: "first single sign-on",
        request: meta,
        outcome: "done",
        detail: { provider, groups: profile.groups.slice(0, 50) },
      });
    } else {
      const before = user;
      const emailChanged = !!email && email !== user.email && !(await tx.consoleUser.findUnique({ where: { email } }));
      user = await tx.consoleUser.update({
        where: { id: user.id },
        data: {
          roles,
          ssoSubject: subject,
          lastSignInAt: now,
          ...(emailChanged ? { email } : {}),
          ...(profile.name && !user.name ? { name: profile.name.slice(0, 200) } : {}),
          ...(!sameRoles(before.roles, roles) || !before.ssoSubject || emailChanged ? { updatedAt: now } : {}),
        },
      });
      if (!before.ssoSubject) {
        await appendAudit(tx, {
          actor: system,
          action: "users.sso_linked",
          target: { table: "console_users", id: user.id },
          before: { ssoSubject: null },
          after: { ssoSubject: subject },
          reason: "first single sign-on with this verified email",
          request: meta,
          outcome: "done",
          detail: { provider },
        });
      }
      if (!sameRoles(before.roles, roles)) {
        await appendAudit(tx, {
          actor: system,
          action: "users.roles_changed_by_sso",
          target: { table: "console_users", id: user.id },
          before: { roles: before.roles },
          after: { roles: user.roles },
          reason: "identity-provider groups changed",
          request: meta,
          outcome: "done",
          detail: { provider, groups: profile.groups.slice(0, 50) },
        });
      }
      if (emailChanged) {
        await appendAudit(tx, {
          actor: system,
          action: "users.email_changed_by_sso",
          target: { table: "console_users", id: user.id },
          before: { email: before.email },
          after: { email: user.email },
          reason: "the identity provider reports a new email",
          request: meta,
          outcome: "done",
          detail: { provider },
        });
      }
    }
    await appendAudit(tx, {
      actor: userActor(user),
      action: "auth.sign_in",
      target: { table: "console_users", id: user.id },
      outcome: "done",
      request: meta,
      detail: { method: "sso", provider, roles: user.roles },
    });
    return { ok: true, user: toSignedIn(user) };
  });
}

/**
 * Sign-out: ends the server-side session the cookie names (a copy of the cookie
 * is refused from now on) and audits it, in one transaction. The session as it
 * was (its provider and ID token serve RP-initiated logout), or null when it was
 * not live.
 */
export async function signOutSession(prisma: PrismaClient, secret: string, meta: RequestMeta = {}): Promise<ConsoleSession | null> {
  return prisma.$transaction(async (tx) => {
    const session = await revokeSessionBySecret(tx, secret, "signed out");
    if (!session) return null;
    const user = await tx.consoleUser.findUnique({ where: { id: session.userId }, select: { id: true, email: true } });
    if (user) {
      await appendAudit(tx, {
        actor: userActor(user),
        action: "auth.sign_out",
        target: { table: "console_users", id: user.id },
        outcome: "done",
        request: meta,
        detail: { session: session.id.toString(), method: session.method },
      });
    }
    return session;
  });
}

/** The refusals ssoSignIn audits itself (the signIn callback sends the browser to /login?error=<code>). */
const SSO_REFUSALS_AUDITED = new Set(["SsoNoRole", "SsoConflict", "SsoNoEmail", "AccountDisabled"]);

/**
 * A single sign-on request next-auth turned away before our sign-in logic ran —
 * a tampered or replayed callback (state mismatch, missing state or PKCE
 * cookie), an error the provider sent back (?error=access_denied), a failed code
 * exchange or ID token check, an unreachable provider — audited as
 * auth.sign_in_failed with next-auth's error code and what it logged. Returns
 * whether it wrote an entry. `path` is the request's path, `location` where
 * next-auth sent the browser.
 */
export async function auditSsoFailure(
  prisma: PrismaClient,
  input: { path: string; location: string | null; providerError?: string | null; errors: string[] },
  meta: RequestMeta,
): Promise<boolean> {
  const m = /^\/api\/auth\/(callback|signin)\/([^/]+)$/.exec(input.path);
  if (!m || m[2] === "credentials" || !input.location) return false;
  let error: string | null;
  try {
    error = new URL(input.location, "http://console.invalid").searchParams.get("error");
  } catch {
    return false;
  }
  if (!error || SSO_REFUSALS_AUDITED.has(error)) return false;
  await audit(prisma, {
    actor: { type: "anonymous", label: `single sign-on (${m[2]})` },
    action: "auth.sign_in_failed",
    outcome: "refused",
    request: meta,
    detail: {
      method: "sso",
      provider: m[2],
      stage: m[1],
      reason: error,
      ...(input.providerError ? { providerError: input.providerError.slice(0, 200) } : {}),
      errors: input.errors.slice(0, 5),
    },
  });
  return true;
}

/**
 * DELETE /api/v1/session: ends the request's browser session (server-side, audited)
 * and says where the browser goes next — the identity provider's end_session_endpoint
 * for a single sign-on session when it has one (RP-initiated logout, back to
 * /login afterwards), else /login.
 */
export async function endBrowserSession(prisma: PrismaClient, request: Request, meta: RequestMeta): Promise<{ signedOut: boolean; redirectTo: string }> {
  const secret = await sessionSecretOf(request);
  const session = secret ? await signOutSession(prisma, secret, meta) : null;
  const base = (process.env.NEXTAUTH_URL || new URL(request.url).origin).replace(/\/+$/, "");
  let redirectTo = "/login";
  const oidc = session?.method === "sso" ? oidcConfigFromEnvSafe() : null;
  if (oidc && session) {
    const discovery = await discover(oidc.issuer).catch(() => null);
    redirectTo = endSessionUrl(oidc, discovery, { idToken: session.idToken, postLogoutRedirectUri: `${base}/login` }) ?? "/login";
  }
  return { signedOut: session !== null, redirectTo };
}

function oidcConfigFromEnvSafe() {
  try {
    return oidcConfigFromEnv();
  } catch {
    return null;
  }
}
