import { randomBytes } from "node:crypto";
import { defineConfig, devices } from "@playwright/test";
import { credentialsFile, e2eDatabaseUrl, e2eRedisUrl } from "./e2e/support/env";

// Debian's Chromium (apt-get install chromium), never a downloaded browser build.
const chromium = {
  executablePath: process.env.CHROMIUM_PATH || "/usr/bin/chromium",
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
};

const pgUrl = e2eDatabaseUrl();
// E2E_PORT_BASE (default 3100): the embedded server listens there, the Postgres one on the next
// port (their demo providers on +1000), so two checkouts can run the suite at once.
const portBase = Number(process.env.E2E_PORT_BASE || 3100);
const embeddedPort = String(portBase);
const postgresPort = String(portBase + 1);
const oidcPort = String(portBase + 2);
const embeddedDir = `/tmp/ic-e2e-pglite-${process.pid}`;
// Only the Postgres server needs one given (production mode); the embedded one
// makes its own, as `npm start` does on a fresh machine.
const postgresSecret = randomBytes(48).toString("base64url");
const postgresAuditKey = randomBytes(48).toString("base64url");

// Single sign-on against a real OpenID provider run locally (e2e/support/oidc-provider.mjs), set up
// with only what the README asks: the issuer, the client and the groups → roles map.
const OIDC_ISSUER = `http://127.0.0.1:${oidcPort}`;
const OIDC_ENV = {
  OIDC_ISSUER,
  OIDC_CLIENT_ID: "idempotency-console",
  OIDC_CLIENT_SECRET: "e2e-client-secret-not-for-production",
  OIDC_ROLE_MAP: "payments-ops=operator,payments-admins=admin",
};

// No background reconciler in the browser tests: a tick could resolve the pending record a test is
// working on (the reconciler itself is tested in test/reconcile.test.ts). No live demo traffic
// either: the tests compare screens with the API (lib/demo/live.ts is tested in test/demo-live.test.ts).
const E2E_ENV = { RECONCILER_INTERVAL_SECONDS: "0", DEMO_LIVE_SECONDS: "0", ...OIDC_ENV };

export default defineConfig({
  testDir: "e2e",
  outputDir: "test-results/e2e",
  timeout: 60_000,
  workers: 1,
  retries: 0,
  reporter: [["list"]],
  use: { ...devices["Desktop Chrome"], launchOptions: chromium, screenshot: "only-on-failure", trace: "retain-on-failure" },
  projects: [
    { name: "embedded", use: { baseURL: `http://127.0.0.1:${embeddedPort}` }, testMatch: /.*\.spec\.ts/, metadata: { mode: "embedded" } },
    ...(pgUrl
      ? [{ name: "postgres", use: { baseURL: `http://127.0.0.1:${postgresPort}` }, testMatch: /.*\.spec\.ts/, metadata: { mode: "postgres" } }]
      : []),
  ],
  webServer: [
    {
      command: `node e2e/support/oidc-provider.mjs --port ${oidcPort} --console http://127.0.0.1:${embeddedPort} --console http://127.0.0.1:${postgresPort}`,
      url: `${OIDC_ISSUER}/.well-known/openid-configuration`,
      timeout: 60_000,
      reuseExistingServer: false,
      stdout: "pipe",
    },
    {
      // Exactly what `npm start` does on a fresh machine, on a throwaway embedded database.
      command: `rm -rf ${embeddedDir} && rm -f ${credentialsFile("embedded")} && node scripts/start.mjs`,
      env: { PORT: embeddedPort, PGLITE_DIR: embeddedDir, DATABASE_URL: "", DEMO_CREDENTIALS_FILE: credentialsFile("embedded"), REDIS_URL: e2eRedisUrl("embedded"), ...E2E_ENV },
      url: `http://127.0.0.1:${embeddedPort}/api/health`,
      timeout: 300_000,
      reuseExistingServer: false,
      stdout: "pipe",
    },
    ...(pgUrl
      ? [
          {
            command: "node_modules/.bin/tsx e2e/support/prepare-postgres.ts && node scripts/start.mjs",
            env: {
              PORT: postgresPort,
              DATABASE_URL: pgUrl,
              NEXTAUTH_SECRET: postgresSecret,
              NEXTAUTH_URL: `http://127.0.0.1:${postgresPort}`,
              REDIS_URL: e2eRedisUrl("postgres"),
              AUDIT_HMAC_KEY: postgresAuditKey,
              ...E2E_ENV,
            },
            url: `http://127.0.0.1:${postgresPort}/api/health`,
            timeout: 300_000,
            reuseExistingServer: false,
            stdout: "pipe" as const,
          },
        ]
      : []),
  ],
});
