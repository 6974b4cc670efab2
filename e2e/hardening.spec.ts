import { request as httpRequest } from "node:http";
import { expect, request, test } from "@playwright/test";
import { credentialFor, signInAs } from "./support/auth";

/**
 * Issue 11 against the real server (`npm start`: scripts/server.mjs in front of
 * Next): an old session cookie is refused after sign-out; the per-address sign-in
 * limit holds whatever X-Forwarded-For says; an admin signs someone out
 * everywhere; a page a role may not open answers 403.
 */

test("a session cookie copied before sign-out is refused afterwards", async ({ page, context, baseURL }, testInfo) => {
  await signInAs(page, testInfo, "support");
  const cookie = (await context.cookies()).find((c) => c.name.endsWith("next-auth.session-token"))!;
  const copy = await request.newContext({ baseURL, extraHTTPHeaders: { cookie: `${cookie.name}=${cookie.value}` } });
  expect((await copy.get("/api/v1/records")).status()).toBe(200);
  const signOut = page.getByRole("button", { name: "Sign out" });
  await expect(signOut).toBeEnabled();
  await signOut.click();
  await page.waitForURL("**/login");
  const after = await copy.get("/api/v1/records");
  expect(after.status()).toBe(401);
  expect(after.headers()["content-type"]).toContain("application/problem+json");
  await copy.dispose();
});

/** A raw sign-in through next-auth's credentials callback, from a chosen loopback source address. */
async function rawSignIn(baseURL: string, from: string, email: string, password: string, headers: Record<string, string> = {}): Promise<string> {
  const { hostname, port } = new URL(baseURL);
  const send = (method: string, path: string, body: string | null, extra: Record<string, string>) =>
    new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }>((resolve, reject) => {
      const req = httpRequest({ host: hostname, port, path, method, localAddress: from, headers: extra }, (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (text += c));
        res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
      });
      req.on("error", reject);
      req.end(body ?? undefined);
    });
  const csrf = await send("GET", "/api/auth/csrf", null, headers);
  const cookies = ([] as string[])
    .concat(csrf.headers["set-cookie"] ?? [])
    .map((c) => c.split(";")[0])
    .join("; ");
  const form = new URLSearchParams({ csrfToken: JSON.parse(csrf.body).csrfToken, email, password, json: "true", callbackUrl: "/" }).toString();
  const answer = await send("POST", "/api/auth/callback/credentials", form, {
    ...headers,
    cookie: cookies,
    "content-type": "application/x-www-form-urlencoded",
    "content-length": String(Buffer.byteLength(form)),
  });
  // json=true: next-auth answers { url } (401 for a refusal) instead of redirecting.
  let location = String(answer.headers.location ?? "");
  try {
    location = JSON.parse(answer.body).url ?? location;
  } catch {
    // a redirect
  }
  return new URL(location, baseURL).searchParams.get("error") ?? "ok";
}

test("the per-address sign-in limit holds with a spoofed X-Forwarded-For; the audit trail has the real address", async ({ page, baseURL }, testInfo) => {
  test.setTimeout(120_000);
  // A loopback address of this run's own (the whole 127/8 reaches the server), so other tests keep theirs.
  const from = `127.0.${Math.floor(Math.random() * 200) + 20}.${Math.floor(Math.random() * 200) + 20}`;
  const viewer = credentialFor(testInfo, "viewer");
  for (let i = 0; i < 20; i++) {
    expect(await rawSignIn(baseURL!, from, `spray-${i}-${Date.now()}@example.test`, "wrong password, wrong account")).toBe("CredentialsSignin");
  }
  // The right password, claiming to come from elsewhere: still this address, still throttled.
  expect(await rawSignIn(baseURL!, from, viewer.email, viewer.password, { "x-forwarded-for": "9.9.9.9", "x-real-ip": "9.9.9.9" })).toMatch(
    /^TooManyAttempts:\d+$/,
  );
  expect(await rawSignIn(baseURL!, from, viewer.email, viewer.password, { "x-console-peer-address": "9.9.9.9" })).toMatch(/^TooManyAttempts:/);
  // Another address is not throttled.
  const elsewhere = from.replace(/\d+$/, (n) => String(Number(n) + 1));
  expect(await rawSignIn(baseURL!, elsewhere, viewer.email, viewer.password)).toBe("ok");

  await signInAs(page, testInfo, "admin");
  const res = await page.request.get(`/api/v1/audit?action=auth.sign_in_failed&actor=${encodeURIComponent(viewer.email)}&limit=5`);
  const entries = (await res.json()).entries as { ip: string; detail: { reason: string } }[];
  expect(entries[0]).toMatchObject({ ip: from, detail: { reason: "throttled_ip" } });
  const all = await (await page.request.get(`/api/v1/audit?action=auth.*&limit=200`)).json();
  expect((all.entries as { ip: string }[]).some((e) => e.ip === "9.9.9.9")).toBe(false);
});

test("an admin sees a user's sessions and signs them out everywhere", async ({ browser }, testInfo) => {
  const userPage = await browser.newPage();
  const operator = await signInAs(userPage, testInfo, "operator");
  const admin = await browser.newPage();
  await signInAs(admin, testInfo, "admin", "/admin/users");
  const row = admin.getByTestId(`user-row-${operator.email}`);
  await expect(row.getByTestId("user-sessions")).toContainText("active session");
  await row.getByRole("button", { name: "Sessions" }).click();
  const form = admin.getByTestId("sessions-form");
  await expect(form.getByTestId("sessions-table")).toContainText("password");
  await form.getByLabel(/Reason/).fill("lost laptop");
  await form.getByRole("button", { name: "Sign out everywhere" }).click();
  await expect(admin.getByTestId("users-message")).toContainText(`Signed ${operator.email} out everywhere`);
  // The operator's next request finds no session.
  await userPage.goto("/queue");
  await expect(userPage).toHaveURL(/\/login\?callbackUrl=/);
  await userPage.close();
  await admin.close();
});

test("a page the role may not open answers 403 with the refusal; no HSTS over http", async ({ page }, testInfo) => {
  await signInAs(page, testInfo, "viewer");
  for (const [path, permission] of [
    ["/admin/users", "users.manage"],
    ["/audit", "audit.read"],
    ["/compensations/new", "compensations.request"],
  ] as const) {
    const res = await page.goto(path);
    expect(res!.status(), path).toBe(403);
    await expect(page.getByTestId("forbidden")).toContainText("Not permitted");
    await expect(page.getByTestId("forbidden")).toContainText(permission);
    await expect(page.getByTestId("signed-in-as")).toBeVisible();
  }
  const ok = await page.goto("/records");
  expect(ok!.status()).toBe(200);
  expect(ok!.headers()["strict-transport-security"]).toBeUndefined();
});
