import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { claimAt, groupsFromClaims, oidcConfigFromEnv, rolesFromGroups, type OidcConfig } from "@/lib/auth/oidc-config";
import { endSessionUrl, groupsScopeFor, requestedScopes, type OidcDiscovery } from "@/lib/auth/oidc-discovery";
import { auditSsoFailure } from "@/lib/auth/sign-in";
import { createTestDatabase, type TestDatabase } from "./helpers/db";

/**
 * Single sign-on settings per common provider (the README's set-ups): what the
 * console asks for and reads, given each provider's discovery document and claim
 * shapes as they publish them. (A real provider runs in the e2e suite:
 * e2e/sso.spec.ts against panva's oidc-provider.)
 */

const base = { OIDC_CLIENT_ID: "console", OIDC_CLIENT_SECRET: "secret" };
const config = (env: Record<string, string>): OidcConfig => oidcConfigFromEnv({ ...base, ...env })!;

/** The scopes_supported and end_session_endpoint of each provider's discovery document (abridged). */
const DISCOVERY: Record<string, OidcDiscovery> = {
  keycloak: {
    issuer: "https://kc.example.com/realms/payments",
    scopes_supported: [
      "openid",
      "profile",
      "email",
      "roles",
      "web-origins",
      "acr",
      "basic",
      "microprofile-jwt",
      "offline_access",
      "phone",
      "address",
      "organization",
    ],
    end_session_endpoint: "https://kc.example.com/realms/payments/protocol/openid-connect/logout",
  },
  okta: {
    issuer: "https://example.okta.com",
    scopes_supported: ["openid", "email", "profile", "address", "phone", "offline_access", "groups"],
    end_session_endpoint: "https://example.okta.com/oauth2/v1/logout",
  },
  entra: {
    issuer: "https://login.microsoftonline.com/11111111-2222-3333-4444-555555555555/v2.0",
    scopes_supported: ["openid", "profile", "email", "offline_access"],
    end_session_endpoint: "https://login.microsoftonline.com/11111111-2222-3333-4444-555555555555/oauth2/v2.0/logout",
  },
  google: { issuer: "https://accounts.google.com", scopes_supported: ["openid", "email", "profile"] },
  "oidc-provider": {
    issuer: "http://127.0.0.1:3102",
    scopes_supported: ["openid", "offline_access", "email", "profile", "groups"],
    end_session_endpoint: "http://127.0.0.1:3102/session/end",
  },
};

describe("scopes: the groups scope only where the provider offers one (Okta, Entra and Google refuse unknown scopes)", () => {
  it.each([
    ["keycloak", "openid email profile"],
    ["okta", "openid email profile groups"],
    ["entra", "openid email profile"],
    ["google", "openid email profile"],
    ["oidc-provider", "openid email profile groups"],
  ])("%s → %s", (provider, scopes) => {
    expect(requestedScopes(config({ OIDC_ISSUER: DISCOVERY[provider].issuer, OIDC_ROLE_MAP: "g=viewer" }), DISCOVERY[provider])).toBe(scopes);
  });

  it("OIDC_GROUPS_SCOPE names another scope (a Keycloak client scope), or none; OIDC_SCOPES replaces the list", () => {
    const kc = config({ OIDC_ISSUER: DISCOVERY.keycloak.issuer, OIDC_ROLE_MAP: "g=viewer", OIDC_GROUPS_SCOPE: "console-groups" });
    expect(requestedScopes(kc, DISCOVERY.keycloak)).toBe("openid email profile console-groups");
    expect(groupsScopeFor(config({ OIDC_ISSUER: "https://x", OIDC_ROLE_MAP: "g=viewer", OIDC_GROUPS_SCOPE: "" }), DISCOVERY.okta)).toBeNull();
    expect(requestedScopes(config({ OIDC_ISSUER: "https://x", OIDC_ROLE_MAP: "g=viewer", OIDC_SCOPES: "openid email" }), DISCOVERY.okta)).toBe("openid email");
    // Discovery unreachable: the base scopes.
    expect(requestedScopes(config({ OIDC_ISSUER: "https://x", OIDC_ROLE_MAP: "g=viewer" }), null)).toBe("openid email profile");
  });
});

describe("groups from each provider's claims", () => {
  it("Keycloak: the Group Membership mapper (names, or full paths), or realm roles by dotted path", () => {
    const claims = { sub: "s", groups: ["/payments/ops", "support"], realm_access: { roles: ["payments-admin", "offline_access"] } };
    const map = config({
      OIDC_ISSUER: DISCOVERY.keycloak.issuer,
      OIDC_ROLE_MAP: "/payments/ops=operator,payments-admin=admin",
      OIDC_GROUPS_CLAIM: "groups,realm_access.roles",
    });
    const groups = groupsFromClaims(claims, map.groupsClaims);
    expect(groups).toEqual(["/payments/ops", "support", "payments-admin", "offline_access"]);
    expect(rolesFromGroups(groups, map.roleMap)).toEqual(["operator", "admin"]);
  });

  it("Entra ID: group object ids in `groups`", () => {
    const id = "8f1c6a0e-0a3b-4b0e-9c1a-2d3e4f5a6b7c";
    const map = config({ OIDC_ISSUER: DISCOVERY.entra.issuer, OIDC_ROLE_MAP: `${id}=approver` });
    expect(rolesFromGroups(groupsFromClaims({ groups: [id, "another"] }, map.groupsClaims), map.roleMap)).toEqual(["approver"]);
  });

  it("Google Workspace (no groups claim): the hosted domain and named people", () => {
    const map = config({ OIDC_ISSUER: DISCOVERY.google.issuer, OIDC_ROLE_MAP: "example.com=viewer,lead@example.com=admin", OIDC_GROUPS_CLAIM: "hd,email" });
    expect(rolesFromGroups(groupsFromClaims({ hd: "example.com", email: "lead@example.com" }, map.groupsClaims), map.roleMap)).toEqual(["viewer", "admin"]);
    expect(rolesFromGroups(groupsFromClaims({ email: "someone@gmail.com" }, map.groupsClaims), map.roleMap)).toEqual([]);
  });

  it("a claim named with a dot wins over the path; a bad claim name is a configuration error", () => {
    expect(claimAt({ "a.b": ["x"], a: { b: ["y"] } }, "a.b")).toEqual(["x"]);
    expect(claimAt({ a: { b: ["y"] } }, "a.b")).toEqual(["y"]);
    expect(() => config({ OIDC_ISSUER: "https://x", OIDC_ROLE_MAP: "g=viewer", OIDC_GROUPS_CLAIM: "gro ups" })).toThrow(/OIDC_GROUPS_CLAIM/);
  });
});

describe("RP-initiated logout", () => {
  it("to the provider's end_session_endpoint with id_token_hint, client_id and the way back; none without one or with OIDC_LOGOUT=off", () => {
    const c = config({ OIDC_ISSUER: DISCOVERY.okta.issuer, OIDC_ROLE_MAP: "g=viewer" });
    const url = new URL(endSessionUrl(c, DISCOVERY.okta, { idToken: "eyJ.id.token", postLogoutRedirectUri: "https://console.example.com/login" })!);
    expect(url.origin + url.pathname).toBe("https://example.okta.com/oauth2/v1/logout");
    expect(Object.fromEntries(url.searchParams)).toEqual({
      id_token_hint: "eyJ.id.token",
      client_id: "console",
      post_logout_redirect_uri: "https://console.example.com/login",
    });
    expect(endSessionUrl(c, DISCOVERY.google, { idToken: "t", postLogoutRedirectUri: "x" })).toBeNull();
    expect(
      endSessionUrl(config({ OIDC_ISSUER: "https://x", OIDC_ROLE_MAP: "g=viewer", OIDC_LOGOUT: "off" }), DISCOVERY.okta, {
        idToken: "t",
        postLogoutRedirectUri: "x",
      }),
    ).toBeNull();
  });
});

describe("failed callbacks are audited", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db?.drop());

  it("next-auth's refusals of a callback (tampered state, provider error) are written; our own refusals and other routes are not written twice", async () => {
    const meta = { ip: "203.0.113.5", userAgent: "Browser/9", requestId: "r1" };
    const write = (path: string, location: string | null, errors: string[] = [], providerError: string | null = null) =>
      auditSsoFailure(db.prisma, { path, location, errors, providerError }, meta);
    expect(
      await write("/api/auth/callback/oidc", "http://c.test/login?callbackUrl=%2F&error=OAuthCallback", [
        "OAUTH_CALLBACK_ERROR: state mismatch, expected x, got: y",
      ]),
    ).toBe(true);
    expect(await write("/api/auth/callback/oidc", "/login?error=OAuthCallback", [], "access_denied")).toBe(true);
    expect(await write("/api/auth/callback/oidc", "/login?error=SsoNoRole")).toBe(false);
    expect(await write("/api/auth/callback/oidc", "/")).toBe(false);
    expect(await write("/api/auth/callback/credentials", "/login?error=CredentialsSignin")).toBe(false);
    expect(await write("/api/auth/session", "/login?error=x")).toBe(false);
    const entries = await db.prisma.auditEntry.findMany({ where: { action: "auth.sign_in_failed" }, orderBy: { id: "asc" } });
    expect(entries).toHaveLength(2);
    expect(entries[0]).toMatchObject({
      outcome: "refused",
      ip: "203.0.113.5",
      detail: { method: "sso", provider: "oidc", stage: "callback", reason: "OAuthCallback", errors: [expect.stringContaining("state mismatch")] },
    });
    expect(entries[1].detail).toMatchObject({ providerError: "access_denied" });
  });
});
