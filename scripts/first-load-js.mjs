#!/usr/bin/env node
// First-load JavaScript per page (issue 16: every page ≤ 200 KB): after `npm run build`, starts the
// built console on a throwaway embedded database (as `npm start` does on a fresh machine), signs in,
// fetches every page's HTML and sums the gzip -9 size of the scripts that HTML names (`<script src>`
// and `<link rel=preload|modulepreload as=script>`; inline scripts — the RSC payload — and `nomodule`
// polyfills are not counted). Prints a table (page, KB, limit) and exits 1 when a page is over the limit.
//
//   node scripts/first-load-js.mjs [--limit 200] [--json out.json] [--verbose] [--url http://127.0.0.1:3000 --email … --password …]
//   (--verbose lists each page's scripts with their sizes; --url measures a running console, signing
//   in as the given admin.)
//
// Pages are every App Router page of the build (.next/app-path-routes-manifest.json). Signed-in
// pages are fetched as a user holding every role (created through the API by the demo admin), so
// each page shows everything it can show; /login is fetched signed out. KB = 1024 bytes.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { gzipSync } from "node:zlib";

const root = path.resolve(import.meta.dirname, "..");
const args = process.argv.slice(2);
const arg = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const limitKb = Number(arg("limit", "200"));
const jsonOut = arg("json");
const verbose = args.includes("--verbose");
const ALL_ROLES = ["viewer", "support", "operator", "approver", "admin"];

const manifestFile = path.join(root, ".next", "app-path-routes-manifest.json");
if (!existsSync(manifestFile)) {
  console.error("No build: run `npm run build` first.");
  process.exit(2);
}
const pages = Object.entries(JSON.parse(readFileSync(manifestFile, "utf8")))
  .filter(([entry]) => entry.endsWith("/page"))
  .map(([, route]) => route)
  .filter((route) => !route.startsWith("/_"))
  .sort();

/** A port nothing listens on (the OS picks it). */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** Cookies, as a browser keeps them for one origin (name → value; expired ones dropped). */
class Jar {
  cookies = new Map();
  take(response) {
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(";");
      const eq = pair.indexOf("=");
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      const expired = attrs.some((a) => /^\s*max-age=0\s*$/i.test(a)) || value === "";
      if (expired) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }
  header() {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  }
}

async function request(base, jar, pathname, init = {}) {
  const headers = { ...(init.headers ?? {}), ...(jar.cookies.size ? { cookie: jar.header() } : {}) };
  const res = await fetch(new URL(pathname, base), { ...init, headers, redirect: "manual" });
  jar.take(res);
  return res;
}

async function signIn(base, email, password) {
  const jar = new Jar();
  const { csrfToken } = await (await request(base, jar, "/api/auth/csrf")).json();
  const form = new URLSearchParams({ csrfToken, email, password, callbackUrl: `${base}/`, json: "true" });
  const res = await request(base, jar, "/api/auth/callback/credentials", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", "x-auth-return-redirect": "1" },
    body: form,
  });
  await res.arrayBuffer();
  const who = await request(base, jar, "/api/v1/session");
  if (who.status !== 200) throw new Error(`sign-in as ${email} failed (${res.status}, session ${who.status})`);
  return jar;
}

/** The demo admin creates a user with every role, so every page renders everything it can. */
async function everyRoleUser(base, admin) {
  const email = `first-load-${randomBytes(4).toString("hex")}@demo.local`;
  const password = randomBytes(18).toString("base64url");
  const res = await request(base, admin, "/api/v1/users", {
    method: "POST",
    headers: { "content-type": "application/json", origin: new URL(base).origin },
    body: JSON.stringify({ email, name: "First-load measurement", password, roles: ALL_ROLES, reason: "scripts/first-load-js.mjs: measure every page" }),
  });
  if (res.status !== 201) throw new Error(`creating the measuring user failed: ${res.status} ${await res.text()}`);
  return signIn(base, email, password);
}

/** The attributes of every `<tag …>` in the HTML. */
function tags(html, tag) {
  const out = [];
  for (const m of html.matchAll(new RegExp(`<${tag}\\b([^>]*)>`, "gi"))) {
    const attrs = {};
    for (const a of m[1].matchAll(/([\w:-]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+)))?/g)) attrs[a[1].toLowerCase()] = a[2] ?? a[3] ?? a[4] ?? "";
    out.push(attrs);
  }
  return out;
}

/** The scripts a page's HTML names, as absolute URLs, once each; `nomodule` ones apart. */
function scriptsNamed(html, base) {
  const urls = new Set();
  const nomodule = new Set();
  // A nomodule script (Next's polyfills) is fetched only by browsers without ES modules.
  for (const s of tags(html, "script")) if (s.src) ("nomodule" in s ? nomodule : urls).add(new URL(s.src, base).href);
  for (const l of tags(html, "link")) {
    const rel = (l.rel ?? "").toLowerCase().split(/\s+/);
    if (l.href && (rel.includes("modulepreload") || (rel.includes("preload") && (l.as ?? "").toLowerCase() === "script"))) urls.add(new URL(l.href, base).href);
  }
  return { scripts: [...urls], nomodule: [...nomodule].filter((u) => !urls.has(u)) };
}

const gzipCache = new Map();
async function gzipSize(url) {
  if (!gzipCache.has(url)) {
    const res = await fetch(url);
    if (res.status !== 200) throw new Error(`${url}: ${res.status}`);
    gzipCache.set(url, gzipSync(Buffer.from(await res.arrayBuffer()), { level: 9 }).length);
  }
  return gzipCache.get(url);
}

async function measure(base, jar, route) {
  const res = await request(base, jar, route);
  const html = await res.text();
  if (res.status !== 200) throw new Error(`${route}: HTTP ${res.status}${res.headers.get("location") ? ` → ${res.headers.get("location")}` : ""}`);
  const { scripts, nomodule } = scriptsNamed(html, base);
  let nomoduleBytes = 0;
  for (const s of nomodule) nomoduleBytes += await gzipSize(s);
  let bytes = 0;
  for (const s of scripts) {
    const size = await gzipSize(s);
    bytes += size;
    if (verbose) console.log(`  ${route} ${(size / 1024).toFixed(1).padStart(6)} KB  ${new URL(s).pathname}`);
  }
  return { bytes, scripts: scripts.length, nomoduleBytes };
}

/** The built console on a throwaway embedded database; resolves once /api/health answers. */
async function startServer() {
  const port = await freePort();
  const providerPort = await freePort();
  const dir = mkdtempSync(path.join(os.tmpdir(), "ic-first-load-"));
  const credentials = path.join(dir, "credentials.json");
  const child = spawn(process.execPath, [path.join(root, "scripts", "start.mjs")], {
    cwd: root,
    env: {
      ...process.env,
      DATABASE_URL: "",
      DATABASE_READ_URL: "",
      PORT: String(port),
      PROVIDER_PORT: String(providerPort),
      PGLITE_DIR: path.join(dir, "pglite"),
      DEMO_CREDENTIALS_FILE: credentials,
      DEMO_LIVE_SECONDS: "0",
      RECONCILER_INTERVAL_SECONDS: "0",
      NEXTAUTH_SECRET: randomBytes(48).toString("base64url"),
      NEXTAUTH_URL: `http://127.0.0.1:${port}`,
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let exited = false;
  child.on("exit", () => (exited = true));
  child.stdout.resume();
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 300_000;
  for (;;) {
    if (exited) throw new Error("the server exited before it answered");
    try {
      const res = await fetch(`${base}/api/health`);
      if (res.status === 200 && existsSync(credentials)) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error("the server did not answer within 5 minutes");
    await new Promise((r) => setTimeout(r, 500));
  }
  const { users } = JSON.parse(readFileSync(credentials, "utf8"));
  const admin = users.find((u) => u.role === "admin");
  const stop = async () => {
    if (!exited) {
      const done = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await Promise.race([done, new Promise((r) => setTimeout(r, 15_000))]);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  return { base, admin, stop };
}

async function main() {
  let server = null;
  let base = arg("url");
  let adminEmail = arg("email");
  let adminPassword = arg("password");
  if (!base) {
    server = await startServer();
    ({ base } = server);
    adminEmail = server.admin.email;
    adminPassword = server.admin.password;
  }
  try {
    const admin = await signIn(base, adminEmail, adminPassword);
    const user = await everyRoleUser(base, admin);
    const anonymous = new Jar();
    // A record to open (/records/[id]) and to request a compensation for (/compensations/new).
    const hits = await (await request(base, user, "/api/v1/records?limit=1")).json();
    const recordId = hits.records?.[0]?.id ?? hits.items?.[0]?.id ?? hits.hits?.[0]?.id;
    const rows = [];
    for (const route of pages) {
      let url = route;
      if (route === "/records/[id]") {
        if (!recordId) throw new Error("no record to open for /records/[id]");
        url = `/records/${recordId}`;
      } else if (route === "/compensations/new" && recordId) url = `/compensations/new?recordId=${recordId}`;
      else if (route.includes("[")) throw new Error(`no example path for ${route}: add one to scripts/first-load-js.mjs`);
      const m = await measure(base, route === "/login" ? anonymous : user, url);
      rows.push({
        page: route,
        kb: Math.round((m.bytes / 1024) * 10) / 10,
        bytes: m.bytes,
        scripts: m.scripts,
        nomoduleBytes: m.nomoduleBytes,
        limitKb,
        ok: m.bytes <= limitKb * 1024,
      });
    }
    const width = Math.max(...rows.map((r) => r.page.length), 4);
    console.log(`First-load JavaScript per page (gzip -9 of the scripts its HTML names; KB = 1024 bytes)\n`);
    console.log(`${"page".padEnd(width)}  ${"KB".padStart(7)}  ${"limit".padStart(5)}  scripts`);
    for (const r of rows)
      console.log(
        `${r.page.padEnd(width)}  ${r.kb.toFixed(1).padStart(7)}  ${String(r.limitKb).padStart(5)}  ${String(r.scripts).padStart(7)}${r.ok ? "" : "  OVER"}`,
      );
    const polyfills = Math.max(...rows.map((r) => r.nomoduleBytes));
    if (polyfills) console.log(`\nnot counted: nomodule polyfills, ${(polyfills / 1024).toFixed(1)} KB (fetched only by browsers without ES modules)`);
    if (jsonOut) writeFileSync(jsonOut, JSON.stringify({ limitKb, pages: rows }, null, 2) + "\n");
    const over = rows.filter((r) => !r.ok);
    if (over.length) {
      console.log(`\n${over.length} page(s) over ${limitKb} KB: ${over.map((r) => r.page).join(", ")}`);
      process.exitCode = 1;
    } else console.log(`\nevery page ≤ ${limitKb} KB`);
  } finally {
    await server?.stop();
  }
}

await main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 2;
});
