import { expect, test, type Page } from "@playwright/test";
import pg from "pg";
import { credentialFor, credentials, signInAs, submitLogin, type Role } from "./support/auth";
import { e2eDatabaseUrl } from "./support/env";

/** What each role sees in the top bar (the permissions table decides; see lib/auth/permissions.ts). */
const READ = [
  "Overview",
  "Stuck & pending",
  "Search",
  "Duplicates",
  "Compensations",
  "Alerts",
  "Retention advisor",
  "Key quality",
  "Conflicts",
  "Expiry",
  "Retention & purges",
  "Redis keys",
];
const NAV: Record<Role, string[]> = {
  viewer: [...READ, "API tokens", "API reference"],
  support: [...READ, "Audit", "API tokens", "API reference"],
  operator: [...READ, "API tokens", "API reference"],
  approver: [...READ, "API tokens", "API reference"],
  admin: [...READ, "Audit", "Users", "API tokens", "API reference"],
};

/** Fails the test on CSP violations and script errors (a page that does not hydrate). */
function watchConsole(page: Page): string[] {
  const problems: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error" && /Content Security Policy|Refused to/i.test(m.text())) problems.push(m.text());
  });
  page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
  return problems;
}

async function signOut(page: Page) {
  const button = page.getByRole("button", { name: "Sign out" });
  await expect(button).toBeEnabled(); // hydrated
  await button.click();
  await page.waitForURL("**/login");
  await expect(page.getByRole("navigation", { name: "Main" })).toHaveCount(0);
  await expect(page.getByTestId("signed-in-as")).toHaveCount(0);
}

async function createUser(page: Page, email: string, password: string): Promise<string> {
  const res = await page.evaluate(
    async ({ email, password }) => {
      const r = await fetch("/api/v1/users", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ email, password, roles: ["viewer"], reason: "e2e throwaway account" }),
      });
      return { status: r.status, body: await r.json() };
    },
    { email, password },
  );
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.user.id as string;
}

test("signed out: every page sends you to the login page, with no navigation", async ({ page }) => {
  const problems = watchConsole(page);
  const response = await page.goto("/");
  await expect(page).toHaveURL(/\/login\?callbackUrl=%2F$/);
  await expect(page.getByRole("heading", { name: "Sign in" })).toBeVisible();
  await expect(page.getByRole("navigation", { name: "Main" })).toHaveCount(0);
  const headers = response!.headers();
  expect(headers["content-security-policy"]).toContain("frame-ancestors 'none'");
  expect(headers["content-security-policy"]).toContain("default-src 'self'");
  expect(headers["x-frame-options"]).toBe("DENY");
  expect(headers["x-content-type-options"]).toBe("nosniff");
  expect(headers["referrer-policy"]).toBe("same-origin");
  expect(headers["permissions-policy"]).toContain("camera=()");
  expect(problems).toEqual([]);
});

for (const role of ["viewer", "support", "operator", "approver", "admin"] as const) {
  test(`${role} signs in through the form, sees their navigation, and signs out`, async ({ page, context }, testInfo) => {
    const problems = watchConsole(page);
    const me = await signInAs(page, testInfo, role);
    await expect(page).toHaveURL(/\/$/);
    await expect(page.getByRole("heading", { name: "Overview" })).toBeVisible();
    const who = page.getByTestId("signed-in-as");
    await expect(who).toContainText(me.email);
    await expect(who).toContainText(role);
    // Menus ("Insights", "Admin") hold the less frequent links: open them all, then every link is listed.
    const nav = page.getByRole("navigation", { name: "Main" });
    await expect(nav.locator("details > summary")).toHaveText(["Insights", "Admin"]);
    for (const summary of await nav.locator("details > summary").all()) await summary.evaluate((s) => s.parentElement!.setAttribute("open", ""));
    await expect(nav.getByRole("link")).toHaveText(NAV[role]);
    await page.keyboard.press("Escape");

    // The session cookie: httpOnly, SameSite=Lax (Secure only behind https NEXTAUTH_URL).
    const cookie = (await context.cookies()).find((c) => c.name.endsWith("next-auth.session-token"));
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: "Lax" });
    expect(cookie!.expires * 1000 - Date.now()).toBeLessThanOrEqual(8 * 3600 * 1000 + 60_000);

    await signOut(page);
    await page.goto("/");
    await expect(page).toHaveURL(/\/login\?callbackUrl=/);
    expect(problems).toEqual([]);
  });
}

test("a viewer is refused what the role lacks, in the UI and in the API", async ({ page }, testInfo) => {
  await signInAs(page, testInfo, "viewer");
  await page.goto("/admin/users");
  await expect(page.getByTestId("forbidden")).toContainText("Not permitted");
  await expect(page.getByTestId("forbidden")).toContainText("users.manage");
  await page.goto("/audit");
  await expect(page.getByTestId("forbidden")).toContainText("audit.read");

  const res = await page.evaluate(async () => {
    const r = await fetch("/api/v1/users", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "sneaky@example.test", roles: ["admin"], reason: "let me in" }),
    });
    return { status: r.status, type: r.headers.get("content-type"), body: await r.json() };
  });
  expect(res.status).toBe(403);
  expect(res.type).toContain("application/problem+json");
  expect(res.body.detail).toContain("users.manage");
});

test("after sign-in you land where you were going, and only on this console", async ({ page }, testInfo) => {
  const admin = credentialFor(testInfo, "admin");
  await page.goto("/admin/users");
  await expect(page).toHaveURL(/\/login\?callbackUrl=%2Fadmin%2Fusers$/);
  await submitLogin(page, admin.email, admin.password);
  await expect(page).toHaveURL(/\/admin\/users$/);
  await expect(page.getByRole("heading", { name: "Users", level: 1 })).toBeVisible();
  await signOut(page);

  await page.goto(`/login?callbackUrl=${encodeURIComponent("https://evil.example/phish")}`);
  await submitLogin(page, admin.email, admin.password);
  await expect(page.getByTestId("signed-in-as")).toContainText(admin.email);
  expect(new URL(page.url()).origin).toBe(new URL(testInfo.project.use.baseURL!).origin);
  await expect(page).toHaveURL(/\/$/);
});

test("wrong credentials and unknown emails get the same message", async ({ page }, testInfo) => {
  const viewer = credentialFor(testInfo, "viewer");
  await page.goto("/login");
  await submitLogin(page, viewer.email, "definitely not it");
  await expect(page.getByTestId("login-error")).toHaveText("Wrong email or password.");
  await expect(page.getByLabel("Password")).toHaveValue("");
  await submitLogin(page, "nobody@demo.local", "definitely not it");
  await expect(page.getByTestId("login-error")).toHaveText("Wrong email or password.");
  await expect(page).toHaveURL(/\/login$/);
});

test("a disabled account is told so (only with the right password)", async ({ page }, testInfo) => {
  const email = `disabled-${testInfo.project.name}-${Date.now()}@demo.local`;
  const password = "a long throwaway password";
  await signInAs(page, testInfo, "admin");
  const id = await createUser(page, email, password);
  const res = await page.evaluate(async (id) => {
    const r = await fetch(`/api/v1/users/${id}`, {
      method: "PATCH",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ disabled: true, reason: "e2e: disabled account message" }),
    });
    return r.status;
  }, id);
  expect(res).toBe(200);
  await signOut(page);
  await submitLogin(page, email, password);
  await expect(page.getByTestId("login-error")).toContainText("This account is disabled");
});

test("sign-in is throttled after 5 failures: then even the right password is refused", async ({ page }, testInfo) => {
  // A throwaway account, so the demo users are never locked out.
  const email = `throttle-${testInfo.project.name}-${Date.now()}@demo.local`;
  const password = "the right password, eventually";
  await signInAs(page, testInfo, "admin");
  await createUser(page, email, password);
  await signOut(page);

  for (let i = 1; i <= 5; i++) {
    await submitLogin(page, email, `wrong password ${i}`);
    await expect(page.getByTestId("login-error")).toHaveText("Wrong email or password.");
  }
  await submitLogin(page, email, "wrong password 6");
  await expect(page.getByTestId("login-error")).toHaveText(/^Too many sign-in attempts\. Wait 1[45] minutes and try again\.$/);
  await submitLogin(page, email, password);
  await expect(page.getByTestId("login-error")).toHaveText(/^Too many sign-in attempts\. Wait 1[45] minutes/);
  await expect(page.getByTestId("signed-in-as")).toHaveCount(0);
});

test("sign-ins and sign-outs are in the audit trail, with the client address and never a password", async ({ page }, testInfo) => {
  test.skip(testInfo.project.metadata.mode !== "postgres", "reads the database directly, which only the Postgres server allows");
  const me = await signInAs(page, testInfo, "operator");
  await signOut(page);
  const client = new pg.Client({ connectionString: e2eDatabaseUrl("postgres") });
  await client.connect();
  try {
    const { rows } = await client.query<{ action: string; outcome: string; ip: string | null; user_agent: string | null }>(
      `SELECT action, outcome, ip, user_agent FROM audit_log WHERE actor_label = $1 AND action IN ('auth.sign_in', 'auth.sign_out') ORDER BY id DESC LIMIT 2`,
      [me.email],
    );
    expect(rows.map((r) => [r.action, r.outcome])).toEqual([
      ["auth.sign_out", "done"],
      ["auth.sign_in", "done"],
    ]);
    expect(rows[1].ip).toMatch(/127\.0\.0\.1|::1/);
    expect(rows[1].user_agent).toContain("Chrome");
    const all = await client.query<{ t: string }>(`SELECT string_agg(audit_log::text, '\n') AS t FROM audit_log`);
    for (const c of credentials(testInfo)) expect(all.rows[0].t).not.toContain(c.password);
  } finally {
    await client.end();
  }
});
