import { readFileSync } from "node:fs";
import { expect, type Page, type TestInfo } from "@playwright/test";
import { credentialsFile, type E2eMode } from "./env";

export type Role = "viewer" | "support" | "operator" | "approver" | "admin";
export interface Credential {
  role: Role;
  email: string;
  password: string;
}

/** The demo users of the server this project runs against (written when its database was created). */
export function credentials(testInfo: TestInfo): Credential[] {
  const mode = testInfo.project.metadata.mode as E2eMode;
  return JSON.parse(readFileSync(credentialsFile(mode), "utf8")).users;
}

export function credentialFor(testInfo: TestInfo, role: Role): Credential {
  const c = credentials(testInfo).find((u) => u.role === role);
  if (!c) throw new Error(`no demo user for role ${role}`);
  return c;
}

/** Fills the real login form (optionally already open) and submits it. */
export async function submitLogin(page: Page, email: string, password: string): Promise<void> {
  if (!new URL(page.url()).pathname.startsWith("/login")) await page.goto("/login");
  const submit = page.getByRole("button", { name: "Sign in", exact: true });
  await expect(submit).toBeEnabled(); // hydrated
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(password);
  const answered = page.waitForResponse((r) => r.url().includes("/api/auth/callback/credentials") && r.request().method() === "POST");
  await submit.click();
  await answered;
}

/** Signs in through the form as a demo role and waits for the signed-in top bar. */
export async function signInAs(page: Page, testInfo: TestInfo, role: Role, path = "/"): Promise<Credential> {
  const c = credentialFor(testInfo, role);
  await page.goto(path === "/" ? "/login" : `/login?callbackUrl=${encodeURIComponent(path)}`);
  await submitLogin(page, c.email, c.password);
  await expect(page.getByTestId("signed-in-as")).toContainText(c.email);
  return c;
}
