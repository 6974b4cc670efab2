"use client";

import { signIn } from "next-auth/react";
import { useEffect, useState, type FormEvent } from "react";
import { signInErrorMessage } from "@/lib/auth/callback-url";

/**
 * Email + password through next-auth's credentials endpoint (it fetches the
 * CSRF token itself), then a full navigation to the callback path so the
 * server renders the signed-in layout. The SSO button starts the OpenID
 * Connect redirect (fetch + location change, so `form-action 'self'` holds).
 */
export function LoginForm({ callbackPath, initialError, ssoLabel }: { callbackPath: string; initialError: string | null; ssoLabel: string | null }) {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<string | null>(initialError);
  // The buttons stay disabled until the form is hydrated: before that a click
  // would submit the form natively instead of through next-auth.
  const [ready, setReady] = useState(false);
  useEffect(() => setReady(true), []);

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (pending) return;
    setPending(true);
    setError(null);
    try {
      const result = await signIn("credentials", { redirect: false, email, password, callbackUrl: callbackPath });
      if (result?.ok && !result.error) {
        window.location.assign(callbackPath);
        return;
      }
      setError(signInErrorMessage(result?.error ?? "CredentialsSignin"));
      setPassword("");
    } catch {
      setError("The console did not answer. Check your connection and try again.");
    }
    setPending(false);
  }

  return (
    <div className="card login-card">
      {/* method="post": should the script not run, the password must not end up in a URL. */}
      <form onSubmit={submit} method="post" aria-label="Sign in" noValidate>
        <label>
          Email
          <input
            type="email"
            name="email"
            autoComplete="username"
            required
            maxLength={254}
            value={email}
            onChange={(e) => setEmail(e.target.value)}
            autoFocus
          />
        </label>
        <label>
          Password
          <input
            type="password"
            name="password"
            autoComplete="current-password"
            required
            maxLength={200}
            value={password}
            onChange={(e) => setPassword(e.target.value)}
          />
        </label>
        {error && (
          <p className="form-error" role="alert" data-testid="login-error">
            {error}
          </p>
        )}
        <button type="submit" className="primary" disabled={!ready || pending}>
          {pending ? "Signing in…" : "Sign in"}
        </button>
      </form>
      {ssoLabel && (
        <>
          <div className="login-or">or</div>
          <button type="button" disabled={!ready || pending} onClick={() => signIn("oidc", { callbackUrl: callbackPath })}>
            Sign in with {ssoLabel}
          </button>
        </>
      )}
    </div>
  );
}
