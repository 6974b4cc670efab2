import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parseProxyTrust } from "../http/client-address";
import { oidcConfigFromEnv } from "./oidc-config";

/**
 * What next-auth needs from the environment: NEXTAUTH_SECRET (signs and
 * encrypts the session cookie) and NEXTAUTH_URL (the console's public origin;
 * https there makes the cookies Secure and __Secure-/__Host- prefixed).
 *
 * Production (DATABASE_URL set): both are required and the server refuses to
 * start without them. Embedded demo mode: `npm start` (scripts/start.mjs)
 * generates a secret once into .data/nextauth-secret and sets NEXTAUTH_URL;
 * `loadEmbeddedSecret` does the same for a server started some other way
 * (next dev), so the demo never needs configuration.
 */
export const MIN_SECRET_LENGTH = 32;
export const EMBEDDED_SECRET_FILE = ".data/nextauth-secret";

type Env = Record<string, string | undefined>;

/** Problems that must stop the server (secret and URL: production only; SSO and trusted-proxy settings: always). */
export function authConfigProblems(env: Env = process.env): string[] {
  if (!env.DATABASE_URL) return [...oidcProblems(env), ...parseProxyTrust(env).problems];
  const problems: string[] = [];
  const secret = env.NEXTAUTH_SECRET ?? "";
  if (secret.length < MIN_SECRET_LENGTH) {
    problems.push(
      `NEXTAUTH_SECRET must be set to a random value of at least ${MIN_SECRET_LENGTH} characters (e.g. \`openssl rand -base64 48\`)` +
        (secret ? ` — it has ${secret.length}` : ""),
    );
  }
  const url = env.NEXTAUTH_URL ?? "";
  if (!/^https?:\/\/[^/\s]+/i.test(url)) {
    problems.push("NEXTAUTH_URL must be set to the console's public URL, e.g. https://console.example.com");
  }
  return [...problems, ...oidcProblems(env), ...parseProxyTrust(env).problems];
}

/** A half or malformed single sign-on configuration, in any mode. */
export function oidcProblems(env: Env = process.env): string[] {
  try {
    oidcConfigFromEnv(env);
    return [];
  } catch (err) {
    return [err instanceof Error ? err.message : String(err)];
  }
}

/** Reads the embedded demo secret, creating it (0600) on first use. */
export function loadOrCreateSecretFile(file: string): string {
  if (existsSync(file)) {
    const existing = readFileSync(file, "utf8").trim();
    if (existing.length >= MIN_SECRET_LENGTH) return existing;
  }
  mkdirSync(path.dirname(file), { recursive: true });
  const secret = randomBytes(48).toString("base64url");
  writeFileSync(file, `${secret}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return secret;
}

/**
 * For the server process: in embedded mode without NEXTAUTH_SECRET, use (or
 * create) .data/nextauth-secret, so sessions survive restarts.
 */
export function loadEmbeddedSecret(env: Env = process.env, cwd = process.cwd()): void {
  if (env.DATABASE_URL || env.NEXTAUTH_SECRET) return;
  env.NEXTAUTH_SECRET = loadOrCreateSecretFile(path.resolve(cwd, EMBEDDED_SECRET_FILE));
}

/**
 * Called once when the server starts (instrumentation.ts): exits the process
 * when production sign-in configuration is missing, else provides the embedded
 * demo secret if needed.
 */
export function enforceAuthConfig(env: Env = process.env): void {
  const problems = authConfigProblems(env);
  if (problems.length) {
    console.error(`Refusing to start: sign-in is not configured.\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    process.exit(1);
  }
  loadEmbeddedSecret(env);
}
