import { randomBytes } from "node:crypto";
import { defineConfig, devices } from "@playwright/test";
import { credentialsFile, e2eDatabaseUrl, e2eRedisUrl, type E2eServerMode } from "./e2e/support/env";

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

const pgUrl = e2eDatabaseUrl("postgres");
const mysqlUrl = e2eDatabaseUrl("mysql");
// E2E_PORT_BASE (default 3100): the embedded server listens there, the Postgres one on the next
// port, the OpenID provider on +2, the MySQL/MariaDB server on +3 (their demo providers on +1000),
// so two checkouts can run the suite at once.
const portBase = Number(process.env.E2E_PORT_BASE || 3100);
const embeddedPort = String(portBase);
const postgresPort = String(portBase + 1);
const oidcPort = String(portBase + 2);
const mysqlPort = String(portBase + 3);
const embeddedDir = `/tmp/ic-e2e-pglite-${process.pid}`;

/**
 * The projects named by --project on this command line (every one when none is named): only
 * their servers start. The workers load this file again without those arguments; they need the
 * projects, never the servers.
 */
const selectedProjects = (() => {
  const names: string[] = [];
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    if (argv[i].startsWith("--project=")) names.push(argv[i].slice("--project=".length));
    // Like Playwright's own parser: every value up to the next option.
    else if (argv[i] === "--project") while (i + 1 < argv.length && !argv[i + 1].startsWith("-")) names.push(argv[++i]);
  }
  return names.length ? names.map((n) => n.toLowerCase()) : null;
})();
const starts = (project: string) => !selectedProjects || selectedProjects.some((n) => n === project || n.includes("*"));

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
// The planted conflict spike (lib/demo/insight-cases.ts) lies 10-50 minutes before the server starts;
// with the default 1 h window it would stop firing before the last project reaches insights.spec.ts
// (the suite runs the three projects one after another), so the window here outlasts the run.
const E2E_ENV = { RECONCILER_INTERVAL_SECONDS: "0", DEMO_LIVE_SECONDS: "0", INSIGHTS_CONFLICT_WINDOW: "4h", ...OIDC_ENV };

/** Specs the postgres project leaves to the embedded one: what they test is the same whatever database server is behind. */
const SERVER_INDEPENDENT_SPECS = ["sso.spec.ts", "api-docs.spec.ts", "redis.spec.ts"];

/** The specs the mysql project runs. */
const MYSQL_SPECS = [
  "every-screen.spec.ts",
  "operator-resolve.spec.ts",
  "compensation.spec.ts",
  "retention.spec.ts",
  "records.spec.ts",
  "overview.spec.ts",
  "read-screens.spec.ts",
  "insights.spec.ts",
];

/** The consoles the OpenID provider accepts as clients: every server this run may start. */
const consoles = [embeddedPort, ...(pgUrl ? [postgresPort] : []), ...(mysqlUrl ? [mysqlPort] : [])].map((port) => `http://127.0.0.1:${port}`);

/**
 * A console on a database server, in production mode: its database recreated, migrated with
 * `npm run db:migrate` and filled by e2e/support/prepare-database.ts, then `npm start`.
 */
function databaseServer(mode: E2eServerMode, url: string, port: string) {
  return {
    command: "node_modules/.bin/tsx e2e/support/prepare-database.ts && node scripts/start.mjs",
    env: {
      PORT: port,
      DATABASE_URL: url,
      NEXTAUTH_SECRET: randomBytes(48).toString("base64url"),
      NEXTAUTH_URL: `http://127.0.0.1:${port}`,
      REDIS_URL: e2eRedisUrl(mode),
      AUDIT_HMAC_KEY: randomBytes(48).toString("base64url"),
      ...E2E_ENV,
    },
    url: `http://127.0.0.1:${port}/api/health`,
    timeout: 300_000,
    reuseExistingServer: false,
    stdout: "pipe" as const,
  };
}

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
    // PostgreSQL: every spec but those no database server changes (the embedded server, also
    // PostgreSQL, runs them): single sign-on, the API docs, the Redis keys screen.
    ...(pgUrl
      ? [
          {
            name: "postgres",
            use: { baseURL: `http://127.0.0.1:${postgresPort}` },
            testMatch: /.*\.spec\.ts/,
            testIgnore: SERVER_INDEPENDENT_SPECS,
            metadata: { mode: "postgres" },
          },
        ]
      : []),
    // MySQL/MariaDB (issue 14): the specs that open every screen and take every operator action,
    // not those that re-test what no database changes (SSO, the API docs, Redis, the HTTP hardening).
    ...(mysqlUrl ? [{ name: "mysql", use: { baseURL: `http://127.0.0.1:${mysqlPort}` }, testMatch: MYSQL_SPECS, metadata: { mode: "mysql" } }] : []),
  ],
  webServer: [
    {
      command: `node e2e/support/oidc-provider.mjs --port ${oidcPort} ${consoles.map((c) => `--console ${c}`).join(" ")}`,
      url: `${OIDC_ISSUER}/.well-known/openid-configuration`,
      timeout: 60_000,
      reuseExistingServer: false,
      stdout: "pipe",
    },
    ...(starts("embedded")
      ? [
          {
            // Exactly what `npm start` does on a fresh machine, on a throwaway embedded database.
            command: `rm -rf ${embeddedDir} && rm -f ${credentialsFile("embedded")} && node scripts/start.mjs`,
            env: {
              PORT: embeddedPort,
              PGLITE_DIR: embeddedDir,
              DATABASE_URL: "",
              DEMO_CREDENTIALS_FILE: credentialsFile("embedded"),
              REDIS_URL: e2eRedisUrl("embedded"),
              ...E2E_ENV,
            },
            url: `http://127.0.0.1:${embeddedPort}/api/health`,
            timeout: 300_000,
            reuseExistingServer: false,
            stdout: "pipe" as const,
          },
        ]
      : []),
    ...(pgUrl && starts("postgres") ? [databaseServer("postgres", pgUrl, postgresPort)] : []),
    ...(mysqlUrl && starts("mysql") ? [databaseServer("mysql", mysqlUrl, mysqlPort)] : []),
  ],
});
