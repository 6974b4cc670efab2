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
  /** Claims whose values are the user's groups (dotted paths reach into objects: realm_access.roles). */
  groupsClaims: string[];
  /**
   * The scope that releases the groups claim: a name, "" for none, or undefined for
   * automatic ("groups" when the provider's discovery document lists it).
   */
  groupsScope: string | undefined;
  roleMap: Map<string, Role[]>;
  name: string;
  /** OIDC_SCOPES verbatim when set (then groupsScope is not added); else null (BASE_SCOPES + the groups scope). */
  scopes: string | null;
  /** RP-initiated logout at the provider's end_session_endpoint on sign-out (default on). */
  logout: boolean;
}

export const BASE_SCOPES = "openid email profile";

/**
 * OIDC_ISSUER, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET (all three, or SSO is off),
 * OIDC_ROLE_MAP ("group=role,…"), OIDC_GROUPS_CLAIM (default "groups"; several
 * comma-separated, dotted paths allowed), OIDC_GROUPS_SCOPE (default: "groups" if
 * the provider offers it; empty: none), OIDC_SCOPES (replaces the whole scope list),
 * OIDC_NAME (button label), OIDC_LOGOUT (0/off: no RP-initiated logout).
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
    groupsClaims: parseGroupsClaims(env.OIDC_GROUPS_CLAIM),
    groupsScope: env.OIDC_GROUPS_SCOPE === undefined ? undefined : env.OIDC_GROUPS_SCOPE.trim(),
    roleMap,
    name: env.OIDC_NAME?.trim() || "Single sign-on",
    scopes: env.OIDC_SCOPES?.trim() || null,
    logout: !/^(0|off|false|no)$/i.test(env.OIDC_LOGOUT?.trim() ?? ""),
  };
}

/**
 * OIDC_ROLE_MAP: "group=role,group=role,…" (a group may appear several times to
 * grant several roles). Unknown roles and malformed pairs are configuration
 * errors: better to refuse to start SSO than to grant something unintended.
 */
export function parseRoleMap(raw: string | undefined): Map<string, Role[]> {
  const map = new Map<string, Role[]>();
  for (const pair of (raw ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)) {
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

function parseGroupsClaims(raw: string | undefined): string[] {
  const claims = (raw ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  for (const c of claims) {
    if (!/^[A-Za-z0-9_:/.-]+$/.test(c)) throw new Error(`OIDC_GROUPS_CLAIM: "${c}" is not a claim name (letters, digits, _ : / - and dots for nested claims)`);
  }
  return claims.length ? claims : ["groups"];
}

/** A claim by name, or by dotted path into nested objects ("realm_access.roles"); a name with dots that exists as is wins. */
export function claimAt(claims: Record<string, unknown>, name: string): unknown {
  if (name in claims) return claims[name];
  let v: unknown = claims;
  for (const part of name.split(".")) {
    if (!v || typeof v !== "object") return undefined;
    v = (v as Record<string, unknown>)[part];
  }
  return v;
}

/** Every group named by the configured claims (deduplicated, in order). */
export function groupsFromClaims(claims: Record<string, unknown>, names: readonly string[]): string[] {
  return [...new Set(names.flatMap((n) => groupsFromClaim(claimAt(claims, n))))];
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
