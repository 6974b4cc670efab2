import { isUniqueViolation } from "../db/errors";
import { z } from "zod";
import { txExecutor } from "../db/sql";
import { idSchema } from "../kernel/input";
import type { ConsoleUser, PrismaClient } from "../generated/prisma/client";
import { reasonSchema } from "../kernel/input";
import { actorOf, appendAudit, audit, type AuditActor, type RequestMeta } from "../audit";
import { liveSessionCounts, revokeUserSessions } from "./sessions";
import { authStore } from "./store";
import { hashPassword, passwordSchema } from "./password";
import { can, ROLES, type Permission, type Principal, type Role } from "./permissions";
import { ProblemError } from "../kernel/problem";
import { ForbiddenError, InvalidInputError, NotFoundError, StateConflictError } from "../kernel/errors";
import { parseInput } from "../kernel/input";

/**
 * Console users: invite, change roles, disable/enable. Every change commits
 * together with its audit entry (one interactive transaction), and the entry
 * holds the user before and after — never the password hash.
 *
 * Decisions:
 * - users.manage is a trust root: whoever holds it may grant any role (an admin
 *   does not hold records.resolve yet must be able to make someone an operator).
 * - Nobody may remove their own admin role or disable themselves, and the last
 *   active admin can be neither demoted nor disabled, by anyone (the CLI too).
 *   Role/disable changes take one advisory lock, so two admins demoting each
 *   other at the same time cannot leave zero admins.
 * - A change that changes nothing (same roles, disabling a disabled user) is a
 *   success (idempotent retries) and is still audited, outcome "done" with
 *   detail.noop = true: the actor stated an intent with a reason, and the trail
 *   shows it without pretending anything changed.
 * - Refusals decided here (403, 404, 409) are audited with outcome "refused" in a
 *   transaction of their own, after the refused change rolled back. Malformed
 *   input (400) is not: it never reached a decision (the API wrapper audits its
 *   own body refusals).
 * - Disabling revokes nothing: sessions and API tokens of a disabled user fail at
 *   once (session.ts and verifyApiToken check disabled_at); enabling the user
 *   again makes their unrevoked, unexpired tokens work again.
 */

/** The console itself acting (CLI scripts, bootstrap), not a signed-in principal. */
export interface SystemActor {
  type: "system";
  label: string;
}
export type Actor = Principal | SystemActor;

export function isSystemActor(actor: Actor): actor is SystemActor {
  return (actor as SystemActor).type === "system";
}

export function auditActor(actor: Actor): AuditActor {
  return isSystemActor(actor) ? { type: "system", label: actor.label } : actorOf(actor);
}

/** The change would leave the console without an admin, or lock the actor out. */
export class AdminLockoutError extends ProblemError {
  constructor(detail: string) {
    super(409, "admin-lockout", "Would lock admins out", detail);
  }
}

/** Throws (403) unless the actor is the system or holds the permission. */
export function requirePermission(actor: Actor, permission: Permission): void {
  if (isSystemActor(actor) || can(actor, permission)) return;
  throw new ForbiddenError(`This needs the permission ${permission}, which your roles do not grant.`);
}

/**
 * Runs a change; a ProblemError it throws (the transaction has rolled back by
 * then) is recorded as a refusal before it propagates.
 */
export async function auditRefusals<T>(
  prisma: PrismaClient,
  actor: Actor,
  entry: { action: string; target?: { table: string; id: string | bigint } | null; reason?: string; request?: RequestMeta; detail?: Record<string, unknown> },
  run: () => Promise<T>,
): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof ProblemError) {
      await audit(prisma, {
        actor: auditActor(actor),
        action: entry.action,
        target: entry.target ?? null,
        reason: entry.reason ?? null,
        request: entry.request,
        outcome: "refused",
        detail: { ...entry.detail, status: err.status, problem: err.message },
      });
    }
    throw err;
  }
}

// ---------------------------------------------------------------------------
// Schemas (the API bodies and the CLI use these same ones)

export const emailSchema = z
  .string({ error: "must be a string" })
  .trim()
  .toLowerCase()
  .min(3, "must be at least 3 characters")
  .max(254, "must be at most 254 characters")
  .pipe(z.email("must be a valid email address"));

/** One or more roles from the permissions table; deduplicated, in the table's order. */
export const rolesSchema = z
  .array(z.enum(ROLES), { error: `must be an array of roles (${ROLES.join(", ")})` })
  .min(1, "must name at least one role")
  .max(ROLES.length * 2)
  .transform((roles): Role[] => ROLES.filter((r) => roles.includes(r)));

/** Display name; empty means none. */
export const userNameSchema = z
  .string()
  .trim()
  .max(200, "must be at most 200 characters")
  .transform((s) => s || null)
  .nullish();

export const createUserInputSchema = z.strictObject({
  email: emailSchema,
  name: userNameSchema,
  /** Omitted: an invitation — the user signs in with SSO, or a password is set later. */
  password: passwordSchema.optional(),
  roles: rolesSchema,
  reason: reasonSchema,
});
export type CreateUserInput = z.input<typeof createUserInputSchema>;

/** PATCH /api/v1/users/:id body. */
export const updateUserBodySchema = z
  .strictObject({
    roles: rolesSchema.optional(),
    disabled: z.boolean({ error: "must be true or false" }).optional(),
    reason: reasonSchema,
  })
  .refine((v) => v.roles !== undefined || v.disabled !== undefined, { message: "give roles and/or disabled", path: ["roles"] });

const updateUserInputSchema = z.strictObject({
  userId: idSchema,
  roles: rolesSchema.optional(),
  disabled: z.boolean().optional(),
  reason: reasonSchema,
});
export type UpdateUserInput = z.input<typeof updateUserInputSchema>;

// ---------------------------------------------------------------------------
// Views: what leaves the server (JSON-safe) and what goes into the audit trail

export interface UserView {
  id: string;
  email: string;
  name: string | null;
  roles: Role[];
  disabled: boolean;
  disabledAt: string | null;
  lastSignInAt: string | null;
  createdAt: string;
  updatedAt: string;
  /** Whether the user can sign in with a password (the hash itself never leaves the database). */
  hasPassword: boolean;
  /** Linked to a single-sign-on identity. */
  sso: boolean;
  /** Live browser sessions (in the users list only). */
  activeSessions?: number;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);
const canonicalRoles = (roles: readonly string[]): Role[] => ROLES.filter((r) => roles.includes(r));

export function userView(u: ConsoleUser): UserView {
  return {
    id: u.id.toString(),
    email: u.email,
    name: u.name,
    roles: canonicalRoles(u.roles),
    disabled: u.disabledAt !== null,
    disabledAt: iso(u.disabledAt),
    lastSignInAt: iso(u.lastSignInAt),
    createdAt: u.createdAt.toISOString(),
    updatedAt: u.updatedAt.toISOString(),
    hasPassword: u.passwordHash !== null,
    sso: u.ssoSubject !== null,
  };
}

/** The audited state of a user: no password hash, no timestamps that merely tick. */
function userSnapshot(u: ConsoleUser) {
  return {
    id: u.id.toString(),
    email: u.email,
    name: u.name,
    roles: canonicalRoles(u.roles),
    disabledAt: iso(u.disabledAt),
    hasPassword: u.passwordHash !== null,
  };
}

const USERS_TABLE = "console_users";

const duplicateEmail = (email: string) => new StateConflictError(`A user with the email ${email} already exists; change that user's roles instead.`);

// ---------------------------------------------------------------------------
// Operations

/** Invites a user. Without a password the user can only sign in with SSO until one is set. */
export async function createUser(prisma: PrismaClient, actor: Actor, raw: CreateUserInput, request: RequestMeta = {}): Promise<UserView> {
  const input = parseInput(createUserInputSchema, raw, "input");
  return auditRefusals(prisma, actor, { action: "users.create", reason: input.reason, request, detail: { email: input.email } }, async () => {
    requirePermission(actor, "users.manage");
    // Slow on purpose (scrypt): outside the transaction, holding no locks.
    const passwordHash = input.password === undefined ? null : await hashPassword(input.password);
    const user = await prisma.$transaction(async (tx) => {
      if (await tx.consoleUser.findUnique({ where: { email: input.email }, select: { id: true } })) throw duplicateEmail(input.email);
      let created: ConsoleUser;
      try {
        created = await tx.consoleUser.create({
          data: { email: input.email, name: input.name ?? null, passwordHash, roles: input.roles },
        });
      } catch (err) {
        if (isUniqueViolation(err)) throw duplicateEmail(input.email);
        throw err;
      }
      await appendAudit(tx, {
        actor: auditActor(actor),
        action: "users.create",
        target: { table: USERS_TABLE, id: created.id },
        before: null,
        after: userSnapshot(created),
        reason: input.reason,
        request,
        outcome: "done",
      });
      return created;
    });
    return userView(user);
  });
}

/**
 * Changes roles and/or the disabled flag in one transaction with one audit entry
 * (action users.update). Setting what is already set is a no-op success.
 */
export async function updateUser(
  prisma: PrismaClient,
  actor: Actor,
  raw: UpdateUserInput,
  request: RequestMeta = {},
): Promise<{ user: UserView; noop: boolean }> {
  const input = parseInput(updateUserInputSchema, raw, "input");
  if (input.roles === undefined && input.disabled === undefined) throw new InvalidInputError("invalid input: give roles and/or disabled");
  const target = { table: USERS_TABLE, id: input.userId };
  return auditRefusals(prisma, actor, { action: "users.update", target, reason: input.reason, request }, async () => {
    requirePermission(actor, "users.manage");
    return prisma.$transaction(async (tx) => {
      const store = authStore(txExecutor(tx));
      await store.lockUserAdmin();
      const before = await tx.consoleUser.findUnique({ where: { id: input.userId } });
      if (!before) throw new NotFoundError(`No user with id ${input.userId}.`);
      const wasDisabled = before.disabledAt !== null;
      const roles = input.roles ?? canonicalRoles(before.roles);
      const disabled = input.disabled ?? wasDisabled;
      const changes = [...(roles.join(",") !== canonicalRoles(before.roles).join(",") ? ["roles"] : []), ...(disabled !== wasDisabled ? ["disabled"] : [])];

      const self = !isSystemActor(actor) && actor.userId === before.id;
      if (self && disabled && !wasDisabled) {
        throw new AdminLockoutError("You cannot disable yourself; ask another admin.");
      }
      const wasActiveAdmin = before.roles.includes("admin") && !wasDisabled;
      if (wasActiveAdmin && (!roles.includes("admin") || disabled)) {
        if (self) throw new AdminLockoutError("You cannot remove your own admin role; ask another admin.");
        if ((await store.otherActiveAdmins(before.id)) === 0) {
          throw new AdminLockoutError(`${before.email} is the last active admin; make another user admin first.`);
        }
      }

      if (changes.length === 0) {
        await appendAudit(tx, {
          actor: auditActor(actor),
          action: "users.update",
          target,
          before: userSnapshot(before),
          after: userSnapshot(before),
          reason: input.reason,
          request,
          outcome: "done",
          detail: { noop: true, changes },
        });
        return { user: userView(before), noop: true };
      }
      const after = await tx.consoleUser.update({
        where: { id: before.id },
        data: {
          roles,
          ...(changes.includes("disabled") ? { disabledAt: disabled ? new Date() : null } : {}),
          updatedAt: new Date(),
        },
      });
      // Disabled: every session ends now (re-enabling does not bring them back).
      const sessionsEnded = disabled && !wasDisabled ? await revokeUserSessions(tx, before.id, "user disabled") : 0;
      await appendAudit(tx, {
        actor: auditActor(actor),
        action: "users.update",
        target,
        before: userSnapshot(before),
        after: userSnapshot(after),
        reason: input.reason,
        request,
        outcome: "done",
        detail: { noop: false, changes, ...(sessionsEnded ? { sessionsEnded } : {}) },
      });
      return { user: userView(after), noop: false };
    });
  });
}

export function setRoles(
  prisma: PrismaClient,
  actor: Actor,
  input: { userId: bigint | string | number; roles: string[]; reason: string },
  request: RequestMeta = {},
) {
  return updateUser(prisma, actor, { userId: input.userId, roles: input.roles as Role[], reason: input.reason }, request);
}

export function disableUser(prisma: PrismaClient, actor: Actor, input: { userId: bigint | string | number; reason: string }, request: RequestMeta = {}) {
  return updateUser(prisma, actor, { userId: input.userId, disabled: true, reason: input.reason }, request);
}

export function enableUser(prisma: PrismaClient, actor: Actor, input: { userId: bigint | string | number; reason: string }, request: RequestMeta = {}) {
  return updateUser(prisma, actor, { userId: input.userId, disabled: false, reason: input.reason }, request);
}

/** Every user, by email. Reading is not audited. */
export async function listUsers(prisma: PrismaClient, actor: Actor): Promise<UserView[]> {
  requirePermission(actor, "users.manage");
  const [users, sessions] = await Promise.all([prisma.consoleUser.findMany({ orderBy: { email: "asc" } }), liveSessionCounts(prisma)]);
  return users.map((u) => ({ ...userView(u), activeSessions: sessions.get(u.id.toString()) ?? 0 }));
}

/** For scripts: the user with this email (normalised), or null. */
export async function findUserByEmail(prisma: PrismaClient, email: string): Promise<ConsoleUser | null> {
  const parsed = emailSchema.safeParse(email);
  if (!parsed.success) return null;
  return prisma.consoleUser.findUnique({ where: { email: parsed.data } });
}
