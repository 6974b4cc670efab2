import { expect, test, type Page } from "@playwright/test";
import { signInAs } from "./support/auth";
import { oidcIssuer } from "./support/env";

/**
 * Single sign-on through a real OpenID provider running locally (panva's
 * oidc-provider, e2e/support/oidc-provider.mjs) configured with only the README's
 * steps: register the console's redirect URI, release email, profile and a groups
 * scope, set OIDC_ISSUER / OIDC_CLIENT_ID / OIDC_CLIENT_SECRET / OIDC_ROLE_MAP.
 * The provider keeps email, name and groups out of the ID token (its default):
 * the console reads them from userinfo, and asks for the groups scope because the
 * provider's discovery document offers it.
 */

const ISSUER = oidcIssuer();

/** From the console's login page through the provider's own login (and first-time consent) pages. */
async function ssoSignIn(page: Page, login: string): Promise<void> {
  await page.goto("/login");
  const sso = page.getByRole("button", { name: "Sign in with Single sign-on" });
  await expect(sso).toBeEnabled();
  await sso.click();
  await page.waitForURL((u) => u.origin === ISSUER);
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill("any password: the development login page accepts it");
  await page.getByRole("button", { name: "Sign-in" }).click();
  // A new browser session: the provider asks for consent to release the claims, then returns.
  const consent = page.getByRole("button", { name: "Continue" });
  await Promise.race([consent.waitFor({ state: "visible" }).catch(() => {}), page.waitForURL((u) => u.origin !== ISSUER).catch(() => {})]);
  if (new URL(page.url()).origin === ISSUER) await consent.click();
  await page.waitForURL((u) => u.origin !== ISSUER);
}

/**
 * An SSO sign-in whose authorization request (the browser's way to the provider,
 * carrying the state the console will expect back) is altered first.
 */
async function ssoSignInTampered(page: Page, login: string, tamper: (url: URL) => Promise<void>): Promise<void> {
  await page.route(
    `${ISSUER}/auth?*`,
    async (route) => {
      const url = new URL(route.request().url());
      await tamper(url);
      await route.continue({ url: url.toString() });
    },
    { times: 1 },
  );
  await ssoSignIn(page, login);
}

async function auditAs(page: Page, query: string): Promise<Record<string, any>[]> {
  const res = await page.request.get(`/api/v1/audit?${query}`);
  expect(res.status()).toBe(200);
  return (await res.json()).entries;
}

test.describe.configure({ mode: "serial" });

test("signs in through the local OpenID provider left at its defaults: claims from userinfo, role from the groups scope", async ({ page }) => {
  await ssoSignIn(page, "alice");
  await expect(page.getByTestId("signed-in-as")).toContainText("alice@sso.example.test");
  await expect(page.getByTestId("signed-in-as")).toContainText("operator");
  const me = await (await page.request.get("/api/v1/session")).json();
  expect(me).toMatchObject({ email: "alice@sso.example.test", roles: ["operator"], via: { session: expect.any(String) } });
});

test("signing out ends the provider's session too (RP-initiated logout): the next SSO sign-in asks for the login again", async ({ page }) => {
  await ssoSignIn(page, "alice");
  await expect(page.getByTestId("signed-in-as")).toContainText("alice@sso.example.test");
  const signOut = page.getByRole("button", { name: "Sign out" });
  await expect(signOut).toBeEnabled();
  await signOut.click();
  // The provider's end-session page, then back to the console's login page.
  await page.waitForURL((u) => u.origin === ISSUER);
  await page.getByRole("button", { name: "Yes, sign me out" }).click();
  await page.waitForURL("**/login**");
  await expect(page.getByTestId("signed-in-as")).toHaveCount(0);
  // Without RP-initiated logout the provider would sign the next person straight back in as alice.
  await page.getByRole("button", { name: "Sign in with Single sign-on" }).click();
  await page.waitForURL((u) => u.origin === ISSUER);
  await expect(page.locator('input[name="login"]')).toBeVisible();
});

test("a user whose groups map to no role is refused, and the refusal is audited", async ({ page, browser }, testInfo) => {
  await ssoSignIn(page, "mallory");
  await expect(page).toHaveURL(/\/login\?error=SsoNoRole/);
  await expect(page.getByTestId("login-error")).toContainText(/single sign-on groups/i);
  await expect(page.getByTestId("signed-in-as")).toHaveCount(0);
  const admin = await browser.newPage();
  await signInAs(admin, testInfo, "admin");
  const entries = await auditAs(admin, "action=auth.sign_in_failed&actor=mallory");
  expect(entries[0]).toMatchObject({ outcome: "refused", detail: { method: "sso", reason: "no_role_for_groups", groups: ["marketing"] } });
  await admin.close();
});

test("a tampered callback (state changed) and a replayed one (state cookie missing) are refused and audited", async ({ page, browser }, testInfo) => {
  const admin = await browser.newPage();
  await signInAs(admin, testInfo, "admin");
  const before = (await auditAs(admin, "action=auth.sign_in_failed&limit=200")).length;

  // Tampered: the state the provider returns is not the one this browser's cookie expects.
  await ssoSignInTampered(page, "alice", async (url) => url.searchParams.set("state", "forged-state"));
  await expect(page).toHaveURL(/\/login\?(.*&)?error=OAuthCallback/);
  await expect(page.getByTestId("signed-in-as")).toHaveCount(0);

  // Replayed elsewhere: the callback arrives without the state and PKCE cookies of the browser that started it.
  const other = await browser.newPage();
  await ssoSignInTampered(other, "alice", async () => other.context().clearCookies({ name: /^next-auth\.(state|pkce\.code_verifier)$/ }));
  await expect(other).toHaveURL(/\/login\?(.*&)?error=OAuthCallback/);
  await expect(other.getByTestId("signed-in-as")).toHaveCount(0);
  await other.close();

  const entries = await auditAs(admin, "action=auth.sign_in_failed&limit=200");
  expect(entries.length).toBe(before + 2);
  for (const e of entries.slice(0, 2)) {
    expect(e).toMatchObject({ outcome: "refused", actorLabel: "single sign-on (oidc)", detail: { method: "sso", stage: "callback", reason: "OAuthCallback" } });
    expect(e.ip).toBe("127.0.0.1");
  }
  expect(JSON.stringify(entries.slice(0, 2).map((e) => e.detail.errors))).toMatch(/state/);
  await admin.close();
});
