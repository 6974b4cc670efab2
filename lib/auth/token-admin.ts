import { z } from "zod";
import type { ApiToken, ConsoleUser, PrismaClient } from "../generated/prisma/client";
import { reasonSchema } from "../kernel/input";
import { appendAudit, type RequestMeta } from "../audit";
import { ALL_PERMISSIONS, can, permissionsOf, type Permission } from "./permissions";
import { generateToken } from "./tokens";
import { auditActor, auditRefusals, isSystemActor, requirePermission, type Actor } from "./users";
import { idSchema } from "../kernel/input";
import { InvalidInputError, NotFoundError, StateConflictError } from "../kernel/errors";
import { parseInput } from "../kernel/input";
import { ForbiddenError } from "../kernel/errors";

/**
 * Creating, revoking and listing API tokens. The plaintext token is returned
 * once, by createApiToken; only SHA-256 of its secret is stored, and neither the
 * token nor its hash is ever returned again, logged or audited (the public
 * prefix is, to tell tokens apart).
 *
 * Which scopes a new token may carry — at most:
 * - for yourself (tokens.own): your own current permissions. When the caller is
 *   itself an API token, the caller's permissions are that token's scopes, so a
 *   token can only mint narrower tokens — and none that outlives it.
 * - for another user (tokens.manage): that user's permissions ∩ yours. The
 *   target's, because a scope the user lacks would lie dormant and wake up the
 *   day they gain a role; yours, because the creator sees the plaintext: an admin
 *   (who may not resolve records) must not be able to mint a records.resolve
 *   credential for an operator and then use it. Such tokens are made by their
 *   owner.
 * - for the system actor (CLI, direct database access anyway): the user's permissions.
 * Asking for more is a 403 (audited), with nothing written. verifyApiToken
 * still intersects scopes with the user's *current* permissions at every use.
 *
 * Revoking an already revoked token is a no-op success, audited with
 * detail.noop = true (same rule as users.update).
 */

const TOKENS_TABLE = "api_tokens";
export const DEFAULT_TOKEN_DAYS = 90;
export const MAX_TOKEN_DAYS = 365;

/** One or more known permissions; deduplicated, in the permissions table's order. */
export const scopesSchema = z
  .array(z.enum(ALL_PERMISSIONS as [Permission, ...Permission[]]), { error: "must be an array of permissions" })
  .min(1, "must name at least one scope")
  .max(ALL_PERMISSIONS.length * 2)
  .transform((scopes): Permission[] => ALL_PERMISSIONS.filter((p) => scopes.includes(p)));

export const tokenNameSchema = z
  .string({ error: "must be a string" })
  .trim()
  .min(1, "is required")
  .max(100, "must be at most 100 characters")
  .regex(/^[^\p{Cc}]*$/u, "must not contain control characters");

export const createTokenInputSchema = z.strictObject({
  /** Whose token; omitted = the caller's own. */
  userId: idSchema.optional(),
  name: tokenNameSchema,
  scopes: scopesSchema,
  expiresInDays: z
    .number({ error: "must be a number of days" })
    .int("must be a whole number of days")
    .min(1, "must be at least 1 day")
    .max(MAX_TOKEN_DAYS, `must be at most ${MAX_TOKEN_DAYS} days`)
    .default(DEFAULT_TOKEN_DAYS),
  reason: reasonSchema,
});
export type CreateTokenInput = z.input<typeof createTokenInputSchema>;

export const revokeTokenBodySchema = z.strictObject({ reason: reasonSchema });

const revokeTokenInputSchema = z.strictObject({ tokenId: idSchema, reason: reasonSchema });
export type RevokeTokenInput = z.input<typeof revokeTokenInputSchema>;

/** GET /api/v1/tokens?owner=me|all|<userId> */
export const listTokensQuerySchema = z.strictObject({
  owner: z
    .string()
    .regex(/^(me|all|\d{1,19})$/, "must be me, all or a user id")
    .default("me"),
});

export type TokenStatus = "active" | "revoked" | "expired" | "user_disabled";

export interface TokenView {
  id: string;
  userId: string;
  userEmail: string;
  name: string;
  /** The public part, e.g. "ic_ab12cd34ef56_…": enough to recognise a token, useless to use it. */
  prefix: string;
  scopes: string[];
  status: TokenStatus;
  createdAt: string;
  expiresAt: string | null;
  lastUsedAt: string | null;
  revokedAt: string | null;
  createdById: string | null;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);
const displayPrefix = (prefix: string) => `ic_${prefix}_…`;

function tokenStatus(t: ApiToken, user: Pick<ConsoleUser, "disabledAt">, now: Date): TokenStatus {
  if (t.revokedAt) return "revoked";
  if (t.expiresAt && t.expiresAt <= now) return "expired";
  if (user.disabledAt) return "user_disabled";
  return "active";
}

export function tokenView(t: ApiToken, user: Pick<ConsoleUser, "email" | "disabledAt">, now = new Date()): TokenView {
  return {
    id: t.id.toString(),
    userId: t.userId.toString(),
    userEmail: user.email,
    name: t.name,
    prefix: displayPrefix(t.tokenPrefix),
    scopes: t.scopes,
    status: tokenStatus(t, user, now),
    createdAt: t.createdAt.toISOString(),
    expiresAt: iso(t.expiresAt),
    lastUsedAt: iso(t.lastUsedAt),
    revokedAt: iso(t.revokedAt),
    createdById: t.createdById?.toString() ?? null,
  };
}

/** The audited state of a token: never the hash (nor, of course, the secret). */
function tokenSnapshot(t: ApiToken) {
  return {
    id: t.id.toString(),
    userId: t.userId.toString(),
    name: t.name,
    prefix: displayPrefix(t.tokenPrefix),
    scopes: t.scopes,
    expiresAt: iso(t.expiresAt),
    revokedAt: iso(t.revokedAt),
    createdById: t.createdById?.toString() ?? null,
  };
}

/** The scopes `actor` may put on a token for `owner` (see the module comment). */
export function grantableScopes(actor: Actor, owner: Pick<ConsoleUser, "roles">): Set<Permission> {
  const ownerPermissions = permissionsOf(owner.roles);
  if (isSystemActor(actor)) return ownerPermissions;
  return new Set([...ownerPermissions].filter((p) => actor.permissions.has(p)));
}

/**
 * Creates a token and returns its plaintext — the only time it exists outside
 * the caller's hands. `expiryLimited`: the expiry was capped at the creating
 * token's own.
 */
export async function createApiToken(
  prisma: PrismaClient,
  actor: Actor,
  raw: CreateTokenInput,
  request: RequestMeta = {},
): Promise<{ token: string; apiToken: TokenView; expiryLimited: boolean }> {
  const input = parseInput(createTokenInputSchema, raw, "input");
  const ownerId = input.userId ?? (isSystemActor(actor) ? undefined : actor.userId);
  if (ownerId === undefined) throw new InvalidInputError("invalid input: userId is required (the system actor has no tokens of its own)");
  const detail = { name: input.name, scopes: input.scopes, expiresInDays: input.expiresInDays, userId: ownerId.toString() };
  return auditRefusals(prisma, actor, { action: "tokens.create", reason: input.reason, request, detail }, async () => {
    const forSelf = !isSystemActor(actor) && actor.userId === ownerId;
    if (!forSelf) requirePermission(actor, "tokens.manage");
    else if (!can(actor, "tokens.own") && !can(actor, "tokens.manage")) requirePermission(actor, "tokens.own");

    const now = new Date();
    const requestedExpiry = new Date(now.getTime() + input.expiresInDays * 86_400_000);
    const { created, owner, token, expiryLimited } = await prisma.$transaction(async (tx) => {
      const owner = await tx.consoleUser.findUnique({ where: { id: ownerId } });
      if (!owner) throw new NotFoundError(`No user with id ${ownerId}.`);
      if (owner.disabledAt) throw new StateConflictError(`${owner.email} is disabled; enable the user before creating tokens for them.`);

      const grantable = grantableScopes(actor, owner);
      const excess = input.scopes.filter((s) => !grantable.has(s));
      if (excess.length) {
        throw new ForbiddenError(
          `A token may not carry ${excess.join(", ")}: ` +
            (forSelf || isSystemActor(actor)
              ? `scopes are limited to ${forSelf ? "your" : `${owner.email}'s`} own permissions.`
              : `scopes are limited to permissions both ${owner.email} and you hold; ${owner.email} can create such a token themselves.`),
        );
      }
      // A token cannot extend its own life through a child: the child expires no later than it.
      let expiresAt = requestedExpiry;
      if (!isSystemActor(actor) && actor.kind === "token" && actor.tokenId !== undefined) {
        const parent = await tx.apiToken.findUnique({ where: { id: actor.tokenId }, select: { expiresAt: true } });
        if (parent?.expiresAt && parent.expiresAt < expiresAt) expiresAt = parent.expiresAt;
      }
      const expiryLimited = expiresAt !== requestedExpiry;

      const { token, prefix, hash } = generateToken();
      const created = await tx.apiToken.create({
        data: {
          userId: owner.id,
          name: input.name,
          tokenPrefix: prefix,
          tokenHash: hash,
          scopes: input.scopes,
          expiresAt,
          createdById: isSystemActor(actor) ? null : actor.userId,
        },
      });
      await appendAudit(tx, {
        actor: auditActor(actor),
        action: "tokens.create",
        target: { table: TOKENS_TABLE, id: created.id },
        before: null,
        after: { ...tokenSnapshot(created), userEmail: owner.email },
        reason: input.reason,
        request,
        outcome: "done",
        detail: expiryLimited ? { expiryLimitedToCreatingToken: true, requestedDays: input.expiresInDays } : null,
      });
      return { created, owner, token, expiryLimited };
    });
    return { token, apiToken: tokenView(created, owner, now), expiryLimited };
  });
}

/** Revokes one's own token, or anyone's with tokens.manage. Revoking a revoked token is a no-op success. */
export async function revokeApiToken(
  prisma: PrismaClient,
  actor: Actor,
  raw: RevokeTokenInput,
  request: RequestMeta = {},
): Promise<{ apiToken: TokenView; noop: boolean }> {
  const input = parseInput(revokeTokenInputSchema, raw, "input");
  const target = { table: TOKENS_TABLE, id: input.tokenId };
  return auditRefusals(prisma, actor, { action: "tokens.revoke", target, reason: input.reason, request }, () =>
    prisma.$transaction(async (tx) => {
      const before = await tx.apiToken.findUnique({ where: { id: input.tokenId }, include: { user: true } });
      if (!before) throw new NotFoundError(`No API token with id ${input.tokenId}.`);
      const own = !isSystemActor(actor) && actor.userId === before.userId;
      if (!own) requirePermission(actor, "tokens.manage");
      const { user, ...bare } = before;
      if (bare.revokedAt) {
        await appendAudit(tx, {
          actor: auditActor(actor),
          action: "tokens.revoke",
          target,
          before: tokenSnapshot(bare),
          after: tokenSnapshot(bare),
          reason: input.reason,
          request,
          outcome: "done",
          detail: { noop: true },
        });
        return { apiToken: tokenView(bare, user), noop: true };
      }
      // Conditional: of two concurrent revocations exactly one changes the row.
      const { count } = await tx.apiToken.updateMany({ where: { id: bare.id, revokedAt: null }, data: { revokedAt: new Date() } });
      const after = await tx.apiToken.findUniqueOrThrow({ where: { id: bare.id } });
      await appendAudit(tx, {
        actor: auditActor(actor),
        action: "tokens.revoke",
        target,
        before: tokenSnapshot(bare),
        after: tokenSnapshot(after),
        reason: input.reason,
        request,
        outcome: "done",
        detail: { noop: count === 0 },
      });
      return { apiToken: tokenView(after, user), noop: count === 0 };
    }),
  );
}

/**
 * Tokens of one owner: "me" (default), a user id, or "all" — anything but one's
 * own needs tokens.manage. Never the hash. Reading is not audited; refusals are.
 */
export async function listApiTokens(
  prisma: PrismaClient,
  actor: Actor,
  opts: { owner?: "me" | "all" | bigint | string } = {},
  request: RequestMeta = {},
): Promise<TokenView[]> {
  const owner = opts.owner ?? "me";
  let userId: bigint | undefined;
  if (owner === "me") {
    if (isSystemActor(actor)) throw new InvalidInputError("invalid input: the system actor has no tokens of its own; list by user id or all");
    userId = actor.userId;
  } else if (owner !== "all") {
    const parsed = idSchema.safeParse(owner);
    if (!parsed.success) throw new InvalidInputError("invalid query: owner must be me, all or a user id");
    userId = parsed.data;
  }
  const ownOnly = !isSystemActor(actor) && userId === actor.userId;
  if (!ownOnly) {
    await auditRefusals(prisma, actor, { action: "tokens.list", request, detail: { owner: String(owner) } }, async () =>
      requirePermission(actor, "tokens.manage"),
    );
  }
  const now = new Date();
  const rows = await prisma.apiToken.findMany({
    where: userId === undefined ? {} : { userId },
    include: { user: { select: { email: true, disabledAt: true } } },
    orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    take: 1000,
  });
  return rows.map(({ user, ...t }) => tokenView(t, user, now));
}
