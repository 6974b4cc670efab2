#!/usr/bin/env node
// `npm start`: build if the build is missing or older than the sources, start the
// server, wait until it answers /api/health, then print the URL. Without
// DATABASE_URL the server creates an embedded database with demo data in .data/.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..");
const env = { ...process.env, NEXT_TELEMETRY_DISABLED: "1" };
const port = env.PORT || "3000";
const host = env.HOSTNAME_BIND || "127.0.0.1";
const bin = (name) => path.join(root, "node_modules", ".bin", name);

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

if (!env.DATABASE_URL) console.log(`No DATABASE_URL: using the embedded database in ${env.PGLITE_DIR || ".data/pglite"}.`);
const server = spawn(bin("next"), ["start", "-p", port, "-H", host], { cwd: root, env, stdio: "inherit" });
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => server.kill(signal));
server.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));

const url = `http://${host === "0.0.0.0" ? "localhost" : host}:${port}`;
const deadline = Date.now() + 300_000;
for (;;) {
  try {
    const res = await fetch(`${url}/api/health`);
    const health = await res.json();
    console.log(`\nIdempotency Console is ready at ${url}  (database: ${health.database?.mode}, ${health.status})\n`);
    break;
  } catch {
    if (Date.now() > deadline) {
      console.error(`The server did not answer at ${url} within 5 minutes.`);
      break;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}
