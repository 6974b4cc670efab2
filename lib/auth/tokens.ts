import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { ApiToken, PrismaClient } from "../generated/prisma/client";
import { isPermission, permissionsOf, type Permission, type Principal, type Role } from "./permissions";

/**
 * API tokens: "ic_<prefix>_<secret>". The prefix (public, indexed) finds the row;
 * only SHA-256(secret) is stored — the secret is 256 random bits, so a slow KDF
 * would add nothing. The full token is shown once, at creation.
 */
const TOKEN_RE = /^ic_([a-z0-9]{12})_([A-Za-z0-9_-]{43})$/;

export function generateToken(): { token: string; prefix: string; hash: string } {
  const prefix = randomBytes(9)
    .toString("base64url")
    .toLowerCase()
    .replace(/[^a-z0-9]/g, "0")
    .slice(0, 12);
  const secret = randomBytes(32).toString("base64url");
  return { token: `ic_${prefix}_${secret}`, prefix, hash: sha256(secret) };
}

function sha256(s: string): string {
  return createHash("sha256").update(s, "utf8").digest("hex");
}

export type TokenCheck =
  { ok: true; principal: Principal; token: ApiToken } | { ok: false; reason: "malformed" | "unknown" | "revoked" | "expired" | "user_disabled" };

/** Verifies a bearer token and builds its principal: scopes ∩ the owner's current permissions. */
export async function verifyApiToken(prisma: PrismaClient, raw: string, now = new Date()): Promise<TokenCheck> {
  const m = TOKEN_RE.exec(raw);
  if (!m) return { ok: false, reason: "malformed" };
  const token = await prisma.apiToken.findUnique({ where: { tokenPrefix: m[1] }, include: { user: true } });
  if (!token) return { ok: false, reason: "unknown" };
  const a = Buffer.from(sha256(m[2]), "hex");
  const b = Buffer.from(token.tokenHash, "hex");
  if (a.length !== b.length || !timingSafeEqual(a, b)) return { ok: false, reason: "unknown" };
  if (token.revokedAt) return { ok: false, reason: "revoked" };
  if (token.expiresAt && token.expiresAt <= now) return { ok: false, reason: "expired" };
  if (token.user.disabledAt) return { ok: false, reason: "user_disabled" };
  const userPermissions = permissionsOf(token.user.roles);
  const permissions = new Set(token.scopes.filter(isPermission).filter((p) => userPermissions.has(p))) as Set<Permission>;
  // last_used_at at most once a minute per token: no write on every request.
  if (!token.lastUsedAt || now.getTime() - token.lastUsedAt.getTime() > 60_000) {
    await prisma.apiToken.update({ where: { id: token.id }, data: { lastUsedAt: now } });
  }
  const { user, ...bare } = token;
  return {
    ok: true,
    token: bare,
    principal: {
      kind: "token",
      userId: user.id,
      email: user.email,
      roles: user.roles as Role[],
      permissions,
      tokenId: token.id,
      tokenName: token.name,
    },
  };
}
