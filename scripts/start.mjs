#!/usr/bin/env node
// `npm start`: build if the build is missing or older than the sources, start the
// server, wait until it answers /api/health, then print the URL. Without
// DATABASE_URL the server creates an embedded database with demo data in .data/,
// and this script provides what sign-in needs (a secret kept in
// .data/nextauth-secret, NEXTAUTH_URL) and prints the demo users' passwords.
// With DATABASE_URL (production) NEXTAUTH_SECRET, NEXTAUTH_URL and AUDIT_HMAC_KEY are required.
// The server is scripts/server.mjs: Next's production server behind a listener that
// passes the client's socket address on (sign-in throttling, audit) and sets HSTS.
// Without PROVIDERS and PROVIDER_URL it also runs the local demo payment provider
// (scripts/provider.ts) on PROVIDER_PORT (default PORT + 1000), points the server
// at it (PROVIDER_URL, DEMO_PROVIDER=1: the server seeds it from the demo data)
// and stops it with the server.
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..");
const env = { ...process.env, NEXT_TELEMETRY_DISABLED: "1" };
const port = env.PORT || "3000";
const host = env.HOSTNAME_BIND || "127.0.0.1";
const bin = (name) => path.join(root, "node_modules", ".bin", name);
const embedded = !env.DATABASE_URL;
const publicUrl = `http://${host === "0.0.0.0" ? "localhost" : host}:${port}`;

// --- sign-in configuration (lib/auth/config.ts checks the same in the server) ---
const MIN_SECRET = 32;
if (embedded) {
  if (!env.NEXTAUTH_SECRET) {
    const file = path.join(root, ".data", "nextauth-secret");
    let secret = existsSync(file) ? readFileSync(file, "utf8").trim() : "";
    if (secret.length < MIN_SECRET) {
      secret = randomBytes(48).toString("base64url");
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, `${secret}\n`, { mode: 0o600 });
      chmodSync(file, 0o600);
    }
    env.NEXTAUTH_SECRET = secret;
  }
  env.NEXTAUTH_URL ||= publicUrl;
} else {
  const problems = [];
  if ((env.NEXTAUTH_SECRET ?? "").length < MIN_SECRET) {
    problems.push(`NEXTAUTH_SECRET must be a random value of at least ${MIN_SECRET} characters (e.g. \`openssl rand -base64 48\`).`);
  }
  if (!/^https?:\/\/[^/\s]+/i.test(env.NEXTAUTH_URL ?? "")) {
    problems.push("NEXTAUTH_URL must be the console's public URL, e.g. https://console.example.com (https makes the session cookie Secure).");
  }
  if (!env.AUDIT_HMAC_KEY?.trim() && !env.AUDIT_HMAC_KEY_FILE?.trim()) {
    problems.push(
      `AUDIT_HMAC_KEY (or AUDIT_HMAC_KEY_FILE) must be set to a random value of at least ${MIN_SECRET} characters: it keys the audit chain (README, "Audit").`,
    );
  }
  if (problems.length) {
    console.error(`Refusing to start with DATABASE_URL set: sign-in is not configured.\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    process.exit(1);
  }
}
const credentialsFile = path.resolve(root, env.DEMO_CREDENTIALS_FILE || path.join(".data", "demo-credentials.json"));

function printDemoCredentials() {
  if (!embedded) return;
  try {
    const { users } = JSON.parse(readFileSync(credentialsFile, "utf8"));
    const width = Math.max(...users.map((u) => u.email.length));
    console.log(`Demo users (embedded database only; passwords in ${path.relative(root, credentialsFile) || credentialsFile}):`);
    for (const u of users) console.log(`  ${u.role.padEnd(9)} ${u.email.padEnd(width)}  ${u.password}`);
    console.log("");
  } catch {
    console.log(`No demo credentials at ${credentialsFile}: delete .data/ to recreate the demo database and its users.\n`);
  }
}

function newestMtime(p) {
  if (!existsSync(p)) return 0;
  const st = statSync(p);
  if (!st.isDirectory()) return st.mtimeMs;
  let newest = 0;
  for (const entry of readdirSync(p)) newest = Math.max(newest, newestMtime(path.join(p, entry)));
  return newest;
}

const buildId = path.join(root, ".next", "BUILD_ID");
const sources = ["app", "lib", "components", "prisma", "instrumentation.ts", "next.config.js", "package-lock.json"];
const sourcesMtime = Math.max(...sources.map((s) => newestMtime(path.join(root, s))));
if (!existsSync(buildId) || statSync(buildId).mtimeMs < sourcesMtime) {
  console.log("Building the console (next build)…");
  const build = spawnSync(bin("next"), ["build"], { cwd: root, env, stdio: "inherit" });
  if (build.status !== 0) process.exit(build.status ?? 1);
}

// --- the demo payment provider (only when no real provider is configured) ---
let provider = null;
if (!env.PROVIDERS?.trim() && !env.PROVIDER_URL?.trim()) {
  const providerPort = env.PROVIDER_PORT || String(Number(port) + 1000);
  provider = spawn(bin("tsx"), ["scripts/provider.ts", "--port", providerPort], { cwd: root, env, stdio: ["ignore", "pipe", "inherit"] });
  const providerUrl = await new Promise((resolve) => {
    let out = "";
    const giveUp = (why) => {
      console.error(
        `The demo payment provider did not start on port ${providerPort} (${why}). Set PROVIDER_PORT to a free port, or PROVIDER_URL/PROVIDERS to use another provider.`,
      );
      if (provider.exitCode === null) provider.kill("SIGTERM");
      process.exit(1);
    };
    const timer = setTimeout(() => giveUp("no answer within 60 s"), 60_000);
    provider.once("exit", (code, signal) => giveUp(`it exited with ${code ?? signal}`));
    provider.stdout.setEncoding("utf8");
    provider.stdout.on("data", (chunk) => {
      out += chunk;
      const m = /provider listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        provider.removeAllListeners("exit");
        resolve(m[1]);
      }
    });
  });
  provider.stdout.resume();
  provider.on("exit", (code, signal) => {
    provider = null;
    console.error(`The demo payment provider stopped (${code ?? signal}); reconciliation and compensations will find it unavailable.`);
  });
  env.PROVIDER_URL = providerUrl;
  env.DEMO_PROVIDER = "1";
  console.log(`Demo payment provider: ${providerUrl}`);
}

/** Stops the demo provider (by its PID) and waits for it, at most 10 s. */
function stopProvider() {
  const child = provider;
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  child.removeAllListeners("exit");
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      resolve();
    }, 10_000);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill("SIGTERM");
  });
}

if (embedded) console.log(`No DATABASE_URL: using the embedded database in ${env.PGLITE_DIR || ".data/pglite"}.`);
// Next's production server behind the console's listener (the client's socket address, HSTS): scripts/server.mjs.
const server = spawn(process.execPath, [path.join(root, "scripts", "server.mjs")], {
  cwd: root,
  env: { ...env, PORT: port, HOSTNAME_BIND: host },
  stdio: "inherit",
});
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => server.kill(signal));
server.on("exit", (code, signal) => stopProvider().then(() => process.exit(code ?? (signal ? 1 : 0))));

const url = publicUrl;
const deadline = Date.now() + 300_000;
for (;;) {
  try {
    const res = await fetch(`${url}/api/health`);
    const health = await res.json();
    console.log(`\nIdempotency Console is ready at ${url}  (database: ${health.database?.mode}, ${health.status})\n`);
    printDemoCredentials();
    break;
  } catch {
    if (Date.now() > deadline) {
      console.error(`The server did not answer at ${url} within 5 minutes.`);
      break;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}
