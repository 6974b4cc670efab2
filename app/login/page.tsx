import path from "node:path";
import type { Metadata } from "next";
import { redirect } from "next/navigation";
import { LoginForm } from "@/components/LoginForm";
import { currentPrincipal } from "@/components/server/page-auth";
import { safeCallbackPath, signInErrorMessage } from "@/lib/auth/callback-url";
import { demoCredentialsPath } from "@/lib/auth/demo-users";
import { ssoButtonLabel } from "@/lib/auth/options";
import { databaseConfigFromEnv } from "@/lib/db/config";

export const metadata: Metadata = { title: "Sign in · Idempotency Console" };

export default async function LoginPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const params = await searchParams;
  const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
  const callbackPath = safeCallbackPath(first(params.callbackUrl));
  const principal = await currentPrincipal().catch(() => null);
  if (principal) redirect(callbackPath);
  return (
    <div className="login">
      <h1>Sign in</h1>
      <p className="subtle">Idempotency records, duplicate charges and pending payments — for the people who resolve them.</p>
      <LoginForm callbackPath={callbackPath} initialError={signInErrorMessage(first(params.error))} ssoLabel={ssoButtonLabel()} />
      {databaseConfigFromEnv().mode === "embedded" ? (
        <p className="notice-muted login-hint" data-testid="demo-hint">
          Demo: one user per role — <code>viewer@demo.local</code>, <code>support@…</code>, <code>operator@…</code>, <code>approver@…</code>,{" "}
          <code>admin@…</code>. Their passwords were printed by <code>npm start</code> and are in{" "}
          <code>{path.relative(process.cwd(), demoCredentialsPath()) || demoCredentialsPath()}</code>.
        </p>
      ) : null}
    </div>
  );
}
