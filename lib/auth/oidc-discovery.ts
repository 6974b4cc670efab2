import { BASE_SCOPES, type OidcConfig } from "./oidc-config";

/**
 * What the console reads from the identity provider's discovery document
 * (/.well-known/openid-configuration), cached for ten minutes: which scopes it
 * offers (to ask for its groups scope only when there is one — Okta, Entra ID and
 * Google refuse unknown scopes) and its end_session_endpoint (RP-initiated logout).
 */
export interface OidcDiscovery {
  issuer: string;
  scopes_supported?: string[];
  claims_supported?: string[];
  userinfo_endpoint?: string;
  end_session_endpoint?: string;
}

const TTL_MS = 10 * 60_000;
const cache = new Map<string, { at: number; doc: Promise<OidcDiscovery> }>();

export async function discover(issuer: string, fetchImpl: typeof fetch = fetch): Promise<OidcDiscovery> {
  const hit = cache.get(issuer);
  if (hit && Date.now() - hit.at < TTL_MS) return hit.doc;
  const doc = (async () => {
    const res = await fetchImpl(`${issuer}/.well-known/openid-configuration`, { headers: { accept: "application/json" }, signal: AbortSignal.timeout(10_000) });
    if (!res.ok) throw new Error(`OIDC discovery at ${issuer} answered ${res.status}`);
    const d = (await res.json()) as OidcDiscovery;
    if (typeof d?.issuer !== "string") throw new Error(`OIDC discovery at ${issuer}: not a discovery document`);
    return d;
  })();
  cache.set(issuer, { at: Date.now(), doc });
  doc.catch(() => cache.delete(issuer));
  return doc;
}

/** The scope that releases the groups claim: configured, or "groups" when the provider lists it. */
export function groupsScopeFor(config: OidcConfig, discovery: Pick<OidcDiscovery, "scopes_supported"> | null): string | null {
  if (config.groupsScope !== undefined) return config.groupsScope || null;
  return discovery?.scopes_supported?.includes("groups") ? "groups" : null;
}

/** The scopes to ask for: OIDC_SCOPES verbatim, else openid email profile + the groups scope. */
export function requestedScopes(config: OidcConfig, discovery: Pick<OidcDiscovery, "scopes_supported"> | null): string {
  if (config.scopes) return config.scopes;
  const groups = groupsScopeFor(config, discovery);
  return groups && !BASE_SCOPES.split(" ").includes(groups) ? `${BASE_SCOPES} ${groups}` : BASE_SCOPES;
}

/**
 * Where to send the browser after signing out of the console so the provider's
 * session ends too (OpenID Connect RP-Initiated Logout 1.0); null when the
 * provider has no end_session_endpoint (Google) or OIDC_LOGOUT is off.
 */
export function endSessionUrl(
  config: OidcConfig,
  discovery: Pick<OidcDiscovery, "end_session_endpoint"> | null,
  opts: { idToken: string | null; postLogoutRedirectUri: string },
): string | null {
  if (!config.logout || !discovery?.end_session_endpoint) return null;
  const url = new URL(discovery.end_session_endpoint);
  if (opts.idToken) url.searchParams.set("id_token_hint", opts.idToken);
  url.searchParams.set("client_id", config.clientId);
  url.searchParams.set("post_logout_redirect_uri", opts.postLogoutRedirectUri);
  return url.toString();
}
