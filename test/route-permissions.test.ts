import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { apiRoute, type RouteHandlerContext } from "@/lib/api/handler";
import { ALL_PERMISSIONS, isPermission, ROLE_PERMISSIONS, ROLES, type Access, type Permission, type Role } from "@/lib/auth/permissions";
import { generateToken } from "@/lib/auth/tokens";
import { provideDatabase } from "@/lib/db/client";
import { createTestToken, createTestUser, dropTestDatabase, sessionCookie, useTestAuthEnv } from "./helpers/auth-fixtures";
import { createTestDatabase, type TestDatabase } from "./helpers/db";
import { call as callRoute } from "./helpers/records-api";

/**
 * THE route enumeration test. Every route handler file under app/ is found at
 * test time (no hand-written list: a new route is covered the moment it exists),
 * imported, and every HTTP method it exports must declare its access (a
 * permission of lib/auth/permissions.ts, "signed_in" or "public"). Each
 * non-public handler is then called with no credentials, with bad credentials,
 * as every role (API token and session cookie), with a token whose scopes omit
 * the permission, and cookie-authenticated without same-origin headers: the
 * answers must match the permissions table exactly.
 */

useTestAuthEnv();

const ROOT = path.resolve(import.meta.dirname, "..");
const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"] as const;
const UNSAFE = new Set<string>(["POST", "PUT", "PATCH", "DELETE"]);
/** Ids in dynamic segments name nothing that exists: an allowed call must not change fixtures. */
const MISSING_ID = "999999999";
const PROBLEM = "application/problem+json";

type Handler = ((request: Request, ctx?: RouteHandlerContext) => Promise<Response>) & { access?: unknown; action?: unknown };

interface Route {
  file: string;
  urlPath: string;
  params: Record<string, string | string[]>;
}

function findFiles(dir: string, name: RegExp): string[] {
  const abs = path.join(ROOT, dir);
  if (!existsSync(abs)) return [];
  return (readdirSync(abs, { recursive: true }) as string[])
    .filter((f) => name.test(path.basename(f)) && !f.split(path.sep).includes("node_modules"))
    .map((f) => path.posix.join(dir, f.split(path.sep).join("/")))
    .sort();
}

/** app/api/v1/users/[id]/route.ts → /api/v1/users/999999999 with params { id: "999999999" }. */
function routeOf(file: string): Route {
  const segments = file.split("/").slice(1, -1);
  const params: Record<string, string | string[]> = {};
  const parts: string[] = [];
  for (const s of segments) {
    if (/^\(.*\)$/.test(s) || s.startsWith("@")) continue; // route groups, parallel slots
    const catchAll = /^\[\[?\.\.\.(\w+)\]\]?$/.exec(s);
    const dynamic = /^\[(\w+)\]$/.exec(s);
    if (catchAll) {
      params[catchAll[1]] = ["x"];
      parts.push("x");
    } else if (dynamic) {
      params[dynamic[1]] = MISSING_ID;
      parts.push(MISSING_ID);
    } else parts.push(s);
  }
  return { file, urlPath: "/" + parts.join("/"), params };
}

const routeFiles = findFiles("app", /^route\.(ts|tsx|js|jsx|mjs)$/);
const routes = await Promise.all(
  routeFiles.map(async (file) => ({ ...routeOf(file), module: (await import(/* @vite-ignore */ path.join(ROOT, file))) as Record<string, unknown> })),
);
const handlers = routes.flatMap((r) =>
  METHODS.filter((m) => typeof r.module[m] === "function").map((method) => ({ route: r as Route, method, handler: r.module[method] as Handler })),
);

// ---------------------------------------------------------------------------
// Fixtures: one user per role (token with all the role's permissions + session
// cookie), a user with every role, a disabled user, expired and revoked tokens.

let db: TestDatabase;
interface Principal {
  userId: bigint;
  token: string;
  cookie: string;
}
const byRole = {} as Record<Role, Principal>;
let everything: Principal;
const bad: { name: string; headers: Record<string, string> }[] = [];
const omitting = new Map<Permission, string>();

beforeAll(async () => {
  db = await createTestDatabase();
  provideDatabase(db);
  for (const role of ROLES) {
    const user = await createTestUser(db.prisma, { roles: [role], email: `${role}@perm.test` });
    byRole[role] = {
      userId: user.id,
      token: await createTestToken(db.prisma, user.id, { scopes: ROLE_PERMISSIONS[role] }),
      cookie: await sessionCookie(user.id),
    };
  }
  const all = await createTestUser(db.prisma, { roles: [...ROLES], email: "all-roles@perm.test" });
  everything = { userId: all.id, token: await createTestToken(db.prisma, all.id, { scopes: ALL_PERMISSIONS }), cookie: await sessionCookie(all.id) };
  for (const p of ALL_PERMISSIONS) {
    omitting.set(p, await createTestToken(db.prisma, all.id, { scopes: ALL_PERMISSIONS.filter((x) => x !== p), name: `without ${p}` }));
  }
  const disabled = await createTestUser(db.prisma, { roles: [...ROLES], email: "disabled@perm.test" });
  const disabledToken = await createTestToken(db.prisma, disabled.id, { scopes: ALL_PERMISSIONS });
  await db.prisma.consoleUser.update({ where: { id: disabled.id }, data: { disabledAt: new Date() } });
  const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
  bad.push(
    { name: "a malformed token", headers: bearer("not-a-token") },
    { name: "a well-formed token that does not exist", headers: bearer(generateToken().token) },
    { name: "a token with a wrong secret", headers: bearer(everything.token.slice(0, -4) + "AAAA") },
    {
      name: "an expired token",
      headers: bearer(await createTestToken(db.prisma, all.id, { scopes: ALL_PERMISSIONS, expiresAt: new Date(Date.now() - 1000) })),
    },
    { name: "a revoked token", headers: bearer(await createTestToken(db.prisma, all.id, { scopes: ALL_PERMISSIONS, revoked: true })) },
    { name: "a token of a disabled user", headers: bearer(disabledToken) },
    { name: "a Basic authorization header", headers: { authorization: "Basic YWRtaW46YWRtaW4=" } },
    { name: "a session cookie of a disabled user", headers: { cookie: await sessionCookie(disabled.id), "sec-fetch-site": "same-origin" } },
    {
      name: "a forged session cookie",
      headers: { cookie: "next-auth.session-token=eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2R0NNIn0..forged", "sec-fetch-site": "same-origin" },
    },
    { name: "a session cookie of a user that does not exist", headers: { cookie: await sessionCookie(987654321n), "sec-fetch-site": "same-origin" } },
  );
});

afterAll(() => dropTestDatabase(db));

// ---------------------------------------------------------------------------
// The checker: every way a handler can disagree with the permissions table.

function call(route: Route, method: string, handler: Handler, headers: Record<string, string>): Promise<Response> {
  const h = new Headers(headers);
  const init: RequestInit = { method, headers: h };
  if (UNSAFE.has(method)) {
    h.set("content-type", "application/json");
    init.body = JSON.stringify({ reason: "route permission test" });
  }
  return callRoute(handler, `http://localhost${route.urlPath}`, null, init, route.params);
}

function isAccess(v: unknown): v is Access {
  return typeof v === "string" && (v === "public" || v === "signed_in" || isPermission(v));
}

/** Returns what is wrong (empty: the handler agrees with the permissions table). */
async function violations(route: Route, method: string, handler: Handler): Promise<string[]> {
  const out: string[] = [];
  const access = handler.access;
  if (access === undefined) return [`declares no .access (wrap it in apiRoute({ access }) or methodNotAllowed)`];
  if (!isAccess(access)) return [`declares .access ${JSON.stringify(access)}, which is neither a permission from PERMISSIONS nor "signed_in"/"public"`];
  if (access === "public") return [];
  if (UNSAFE.has(method) && typeof handler.action !== "string") out.push(`is a mutation without an audit .action (apiRoute({ action }))`);

  const expect401 = async (what: string, headers: Record<string, string>) => {
    const res = await call(route, method, handler, headers);
    if (res.status !== 401) out.push(`with ${what}: ${res.status}, expected 401`);
    else if (!res.headers.get("content-type")?.startsWith(PROBLEM)) out.push(`with ${what}: 401 without ${PROBLEM}`);
  };
  const expectVerdict = async (what: string, headers: Record<string, string>, allowed: boolean, refusedBy?: bigint) => {
    const res = await call(route, method, handler, headers);
    if (allowed) {
      if (res.status === 401 || res.status === 403) out.push(`as ${what}: ${res.status} (${await detail(res)}), but ${what} holds ${access}`);
      else if (res.status >= 500) out.push(`as ${what}: ${res.status} (${await detail(res)}): the handler failed`);
      return;
    }
    if (res.status !== 403) {
      out.push(`as ${what}: ${res.status}, expected 403 (lacks ${access})`);
      return;
    }
    if (!res.headers.get("content-type")?.startsWith(PROBLEM)) out.push(`as ${what}: 403 without ${PROBLEM}`);
    if (refusedBy !== undefined) {
      const last = await db.prisma.auditEntry.findFirst({ orderBy: { id: "desc" } });
      if (!last || last.outcome !== "refused" || last.actorId !== String(refusedBy)) out.push(`as ${what}: the 403 was not audited as a refusal`);
    }
  };

  await expect401("no credentials", {});
  for (const b of bad) await expect401(b.name, b.headers);

  const sameOrigin: Record<string, string> = UNSAFE.has(method) ? { "sec-fetch-site": "same-origin" } : {};
  for (const role of ROLES) {
    const allowed = access === "signed_in" || ROLE_PERMISSIONS[role].includes(access);
    await expectVerdict(`a ${role} (API token)`, { authorization: `Bearer ${byRole[role].token}` }, allowed, byRole[role].userId);
    // A fresh session per call: DELETE /api/v1/session (sign-out) ends the one it is called with.
    await expectVerdict(`a ${role} (session cookie)`, { cookie: await sessionCookie(byRole[role].userId), ...sameOrigin }, allowed, byRole[role].userId);
  }
  if (isPermission(access)) {
    await expectVerdict(
      `a token whose scopes omit ${access} (its user holds every role)`,
      { authorization: `Bearer ${omitting.get(access)}` },
      false,
      everything.userId,
    );
  }
  await expectVerdict(`a user with every role (API token)`, { authorization: `Bearer ${everything.token}` }, true);

  if (UNSAFE.has(method)) {
    // CSRF: a cookie alone must not be enough for a mutation coming from elsewhere.
    for (const [what, headers] of [
      ["no Sec-Fetch-Site/Origin", {}],
      ["Sec-Fetch-Site: cross-site", { "sec-fetch-site": "cross-site" }],
      ["Origin: https://evil.example", { origin: "https://evil.example" }],
    ] as const) {
      const res = await call(route, method, handler, { cookie: await sessionCookie(everything.userId), ...headers });
      if (res.status !== 403) out.push(`cookie-authenticated with ${what}: ${res.status}, expected 403 (CSRF)`);
    }
  }
  return out;
}

async function detail(res: Response): Promise<string> {
  try {
    return String((await res.clone().json()).detail);
  } catch {
    return "no problem detail";
  }
}

// ---------------------------------------------------------------------------

describe("route discovery", () => {
  it("finds every route handler file under app/ (including the known ones)", () => {
    expect(routeFiles).toEqual(
      expect.arrayContaining(["app/api/health/route.ts", "app/api/v1/audit/route.ts", "app/api/v1/audit/export/route.ts", "app/api/v1/audit/verify/route.ts"]),
    );
    expect(handlers.length).toBeGreaterThanOrEqual(routeFiles.length);
    // No Pages Router API routes escaping this test.
    expect(findFiles("pages", /\.(ts|tsx|js|jsx)$/)).toEqual([]);
  });

  it('finds no server actions ("use server") in app/, components/ or lib/ — none exist; any added must be covered here first', () => {
    const directive = /^\s*(["'])use server\1;?\s*$/m;
    const found = ["app", "components", "lib"]
      .flatMap((d) => findFiles(d, /\.(ts|tsx|js|jsx|mjs)$/))
      .filter((f) => !f.startsWith("lib/generated/") && directive.test(readFileSync(path.join(ROOT, f), "utf8")));
    expect(
      found,
      `Server actions found but not covered by test/route-permissions.test.ts: ${found.join(", ")}. ` +
        "Each must check can() from lib/auth/permissions.ts and CSRF like apiRoute does; extend this test to call them before adding them.",
    ).toEqual([]);
  });
});

describe("every route handler agrees with the permissions table", () => {
  const label = (a: unknown) => (a === undefined ? "no access declared" : String(a));
  it.each(handlers.map((h) => [`${h.method} ${h.route.urlPath} [${label(h.handler.access)}] (${h.route.file})`, h] as const))(
    "%s",
    async (_name, { route, method, handler }) => {
      expect(await violations(route, method, handler)).toEqual([]);
    },
  );
});

describe("the checker itself can fail", () => {
  const route: Route = { file: "(in test)", urlPath: "/api/self-check", params: {} };
  const ok = async () => Response.json({ ok: true });

  it("flags a handler without .access, and one with an access that is not in the table", async () => {
    expect(await violations(route, "GET", ok as Handler)).toEqual([expect.stringMatching(/declares no \.access/)]);
    expect(await violations(route, "GET", Object.assign(async () => Response.json({}), { access: "audit.write" }) as Handler)).toEqual([
      expect.stringMatching(/neither a permission/),
    ]);
  });

  it("flags a handler that declares a permission but never checks it", async () => {
    const unchecked = Object.assign(async () => Response.json({ ok: true }), { access: "audit.read" as Access });
    const v = await violations(route, "GET", unchecked);
    expect(v).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^with no credentials: 200, expected 401/),
        expect.stringMatching(/^as a viewer \(API token\): 200, expected 403/),
      ]),
    );
  });

  it("flags a handler whose declared permission is not the one it checks", async () => {
    const checksStats = apiRoute({ access: "stats.read" }, ok);
    const relabelled = Object.assign((req: Request, ctx?: RouteHandlerContext) => checksStats(req, ctx), { access: "audit.export" as Access });
    const v = await violations(route, "GET", relabelled);
    expect(v).toEqual(expect.arrayContaining([expect.stringMatching(/^as a viewer \(API token\): 200, expected 403 \(lacks audit.export\)/)]));
    expect(v).toEqual(expect.arrayContaining([expect.stringMatching(/scopes omit audit.export.*: 200, expected 403/)]));
    // …and the reverse: checking more than it declares refuses someone the table allows.
    const checksExport = apiRoute({ access: "audit.export" }, ok);
    const under = Object.assign((req: Request, ctx?: RouteHandlerContext) => checksExport(req, ctx), { access: "stats.read" as Access });
    expect(await violations(route, "GET", under)).toEqual(
      expect.arrayContaining([expect.stringMatching(/^as a viewer \(API token\): 403 .*holds stats.read/)]),
    );
  });

  it("flags a mutation wrapped so that it skips the CSRF check, and one without an audit action", async () => {
    const body = z.object({ reason: z.string() });
    const real = apiRoute({ access: "records.read", action: "test.mutate", body }, ok);
    expect(await violations(route, "POST", real)).toEqual([]);
    const forgesSameOrigin = Object.assign(
      (req: Request) => {
        const headers = new Headers(req.headers);
        headers.set("sec-fetch-site", "same-origin");
        return real(new Request(req, { headers }));
      },
      { access: "records.read" as Access, action: "test.mutate" },
    );
    expect(await violations(route, "POST", forgesSameOrigin)).toEqual(expect.arrayContaining([expect.stringMatching(/CSRF/)]));
    const noAction = apiRoute({ access: "records.read", body }, ok);
    expect(await violations(route, "POST", noAction)).toEqual([expect.stringMatching(/without an audit \.action/)]);
  });

  it("flags a handler that lets a revoked token or a disabled user in", async () => {
    // Accepts any Bearer header at all: every bad token gets through.
    const lax = Object.assign(
      async (req: Request) =>
        req.headers.get("authorization") || req.headers.get("cookie")
          ? Response.json({})
          : new Response(null, { status: 401, headers: { "content-type": PROBLEM } }),
      { access: "signed_in" as Access },
    );
    const v = await violations(route, "GET", lax);
    expect(v).toEqual(
      expect.arrayContaining([expect.stringMatching(/^with a revoked token: 200/), expect.stringMatching(/^with a token of a disabled user: 200/)]),
    );
  });
});
