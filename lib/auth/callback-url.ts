/**
 * Where to go after signing in: only a path on this console. Anything else —
 * absolute URLs, protocol-relative "//host", backslash tricks, control
 * characters, the login page itself, next-auth's endpoints — becomes "/".
 */
export function safeCallbackPath(raw: unknown): string {
  if (typeof raw !== "string" || raw.length === 0 || raw.length > 2000) return "/";
  if (!raw.startsWith("/") || raw.startsWith("//") || raw.includes("\\") || /[\u0000-\u001f\u007f]/.test(raw)) return "/";
  let url: URL;
  try {
    url = new URL(raw, "http://console.invalid");
  } catch {
    return "/";
  }
  if (url.origin !== "http://console.invalid") return "/";
  if (url.pathname === "/login" || url.pathname.startsWith("/api/")) return "/";
  return `${url.pathname}${url.search}${url.hash}`;
}

/** What the login page says for an `error` value from next-auth or lib/auth/options.ts. */
export function signInErrorMessage(code: string | null | undefined): string | null {
  if (!code) return null;
  const throttled = /^TooManyAttempts:(\d{1,4})$/.exec(code);
  if (throttled) {
    const n = Number(throttled[1]);
    return `Too many sign-in attempts. Wait ${n} minute${n === 1 ? "" : "s"} and try again.`;
  }
  switch (code) {
    case "CredentialsSignin":
      return "Wrong email or password.";
    case "AccountDisabled":
      return "This account is disabled. Ask an admin to enable it.";
    case "InvalidInput":
      return "Enter your email and password (email at most 254, password at most 200 characters).";
    case "SsoNoRole":
      return "Your single sign-on groups do not grant any console role. Ask an admin to add you to a console group.";
    case "SsoConflict":
      return "This email belongs to a console account that cannot be linked to your single sign-on identity. Ask an admin.";
    case "SsoNoEmail":
      return "Your identity provider did not share an email address, which the console needs.";
    case "SessionRequired":
      return "Sign in to continue.";
    case "OAuthSignin":
    case "OAuthCallback":
    case "Callback":
    case "OAuthAccountNotLinked":
    case "AccessDenied":
      return "Single sign-on did not complete. Try again, or sign in with your password.";
    case "Configuration":
      return "Sign-in is not configured correctly on the server. Its log says why.";
    default:
      return "Sign-in failed. Try again.";
  }
}
