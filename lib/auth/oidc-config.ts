import { isRole, ROLES, type Role } from "./permissions";

/**
 * Single sign-on (OpenID Connect) settings, purely from the environment. Kept
 * apart from lib/auth/options.ts (next-auth) so the server can check them at
 * start (lib/auth/config.ts) without loading next-auth.
 */
export interface OidcConfig {
  issuer: string;
  clientId: string;
  clientSecret: string;
  groupsClaim: string;
  roleMap: Map<string, Role[]>;
  name: string;
  scopes: string;
}

/**
 * OIDC_ISSUER, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET (all three, or SSO is off),
 * OIDC_GROUPS_CLAIM (default "groups"), OIDC_ROLE_MAP ("group=role,…"),
 * OIDC_NAME (button label), OIDC_SCOPES (default "openid email profile").
 * Throws on a half or malformed configuration.
 */
export function oidcConfigFromEnv(env: Record<string, string | undefined> = process.env): OidcConfig | null {
  const issuer = env.OIDC_ISSUER?.trim();
  const clientId = env.OIDC_CLIENT_ID?.trim();
  const clientSecret = env.OIDC_CLIENT_SECRET?.trim();
  if (!issuer && !clientId && !clientSecret) return null;
  if (!issuer || !clientId || !clientSecret) {
    throw new Error("Single sign-on needs OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET together");
  }
  if (!/^https?:\/\//.test(issuer)) throw new Error("OIDC_ISSUER must be the issuer URL, e.g. https://login.example.com/realms/payments");
  const roleMap = parseRoleMap(env.OIDC_ROLE_MAP);
  if (roleMap.size === 0) throw new Error('OIDC_ROLE_MAP must map at least one group, e.g. "payments-admins=admin,support=support"');
  return {
    issuer: issuer.replace(/\/+$/, ""),
    clientId,
    clientSecret,
    groupsClaim: env.OIDC_GROUPS_CLAIM?.trim() || "groups",
    roleMap,
    name: env.OIDC_NAME?.trim() || "Single sign-on",
    scopes: env.OIDC_SCOPES?.trim() || "openid email profile",
  };
}

/**
 * OIDC_ROLE_MAP: "group=role,group=role,…" (a group may appear several times to
 * grant several roles). Unknown roles and malformed pairs are configuration
 * errors: better to refuse to start SSO than to grant something unintended.
 */
export function parseRoleMap(raw: string | undefined): Map<string, Role[]> {
  const map = new Map<string, Role[]>();
  for (const pair of (raw ?? "").split(",").map((s) => s.trim()).filter(Boolean)) {
    const eq = pair.lastIndexOf("=");
    const group = eq > 0 ? pair.slice(0, eq).trim() : "";
    const role = eq > 0 ? pair.slice(eq + 1).trim() : "";
    if (!group || !isRole(role)) {
      throw new Error(`OIDC_ROLE_MAP: "${pair}" is not group=role with a role among ${ROLES.join(", ")}`);
    }
    map.set(group, [...new Set([...(map.get(group) ?? []), role])]);
  }
  return map;
}

/** The groups claim as a list: an array of strings, or one string (space or comma separated). */
export function groupsFromClaim(claim: unknown): string[] {
  if (Array.isArray(claim)) return claim.filter((g): g is string => typeof g === "string");
  if (typeof claim === "string") return claim.split(/[\s,]+/).filter(Boolean);
  return [];
}

export function rolesFromGroups(groups: readonly string[], roleMap: Map<string, Role[]>): Role[] {
  const granted = new Set(groups.flatMap((g) => roleMap.get(g) ?? []));
  return ROLES.filter((r) => granted.has(r));
}
