import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { provideDatabase } from "@/lib/db/client";
import { createView, MAX_VIEWS_PER_PAGE, normalizeViewQuery, type SavedViewJson } from "@/lib/views/saved-views";
import { sessionCookie, useTestAuthEnv } from "./helpers/auth-fixtures";
import { createTestDatabase, type TestDatabase } from "./helpers/db";
import { call, json, tokenFor } from "./helpers/records-api";

/**
 * Saved views (lib/views/saved-views.ts, /api/v1/views): create, list, replace and
 * delete one's own views; another user's views are invisible and untouchable; input
 * is validated (no open redirects through `page`); no audit entries for successes.
 */

useTestAuthEnv();

let db: TestDatabase;
let viewsRoute: typeof import("@/app/api/v1/views/route");
let viewRoute: typeof import("@/app/api/v1/views/[id]/route");
let alice: { token: string; userId: bigint };
let bob: { token: string; userId: bigint };

beforeAll(async () => {
  db = await createTestDatabase();
  provideDatabase(db);
  viewsRoute = await import("@/app/api/v1/views/route");
  viewRoute = await import("@/app/api/v1/views/[id]/route");
  alice = await tokenFor(db, ["support"]);
  bob = await tokenFor(db, ["viewer"]);
});
afterAll(() => db?.drop());

const post = (token: string, body: unknown) =>
  call(viewsRoute.POST, "/api/v1/views", token, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
const list = async (token: string, page?: string) => {
  const res = await call(viewsRoute.GET, `/api/v1/views${page ? `?page=${encodeURIComponent(page)}` : ""}`, token);
  expect(res.status).toBe(200);
  return (await json<{ views: SavedViewJson[] }>(res)).views;
};
const del = (token: string | null, id: string, init: RequestInit = {}) =>
  call(viewRoute.DELETE, `/api/v1/views/${id}`, token, { method: "DELETE", ...init }, { id });
const auditCount = () => db.prisma.auditEntry.count();

describe("saved views API", () => {
  it("creates, lists (own, per page), replaces on request, and deletes a view", async () => {
    const before = await auditCount();
    const res = await post(alice.token, { page: "/records", name: "Acme keys", query: "?q=abc&field=key&match=prefix&cursor=WyJ4Il0&status=" });
    expect(res.status).toBe(201);
    const { view } = await json<{ view: SavedViewJson; replaced: boolean }>(res);
    // Stored without "?", empty values and the cursor (a position, not a filter).
    expect(view).toMatchObject({ page: "/records", name: "Acme keys", query: "q=abc&field=key&match=prefix" });
    expect(view.id).toMatch(/^\d+$/);

    expect(await list(alice.token, "/records")).toEqual([view]);
    expect(await list(alice.token, "/queue")).toEqual([]);
    expect(await list(alice.token)).toEqual([view]);

    // The same name on the same page: 409 unless replace; on another page: a separate view.
    const dup = await post(alice.token, { page: "/records", name: "Acme keys", query: "q=other" });
    expect(dup.status).toBe(409);
    expect((await json(dup)).detail).toMatch(/already have a view named "Acme keys"/);
    const replaced = await post(alice.token, { page: "/records", name: "Acme keys", query: "q=other", replace: true });
    expect(replaced.status).toBe(200);
    expect(await json(replaced)).toMatchObject({ replaced: true, view: { id: view.id, query: "q=other" } });
    const other = await post(alice.token, { page: "/queue", name: "Acme keys", query: "kind=stuck" });
    expect(other.status).toBe(201);
    const queueView = (await json<{ view: SavedViewJson }>(other)).view;
    expect((await list(alice.token)).map((v) => [v.page, v.name, v.query])).toEqual([
      ["/queue", "Acme keys", "kind=stuck"],
      ["/records", "Acme keys", "q=other"],
    ]);

    const gone = await del(alice.token, view.id);
    expect(gone.status).toBe(200);
    expect(await json(gone)).toEqual({ deleted: true, id: view.id });
    expect((await del(alice.token, view.id)).status).toBe(404);
    expect(await list(alice.token)).toEqual([queueView]);

    // A personal preference: successes leave no audit entries (ADR 0004).
    expect(await auditCount()).toBe(before);
  });

  it("isolates users: nobody lists, replaces or deletes another user's views", async () => {
    const mine = (await json<{ view: SavedViewJson }>(await post(alice.token, { page: "/duplicates", name: "Shared name", query: "window=5m" }))).view;
    expect(await list(bob.token, "/duplicates")).toEqual([]);
    // Bob may use the same name for his own view; replace touches only his.
    const his = await post(bob.token, { page: "/duplicates", name: "Shared name", query: "window=1h", replace: true });
    expect(his.status).toBe(201);
    const bobs = (await json<{ view: SavedViewJson }>(his)).view;
    expect(bobs.id).not.toBe(mine.id);
    expect(await list(alice.token, "/duplicates")).toEqual([mine]);
    expect(await list(bob.token, "/duplicates")).toEqual([bobs]);

    // Deleting someone else's view answers as if it did not exist, and leaves it alone.
    const res = await del(bob.token, mine.id);
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toMatch(/problem\+json/);
    expect(await list(alice.token, "/duplicates")).toEqual([mine]);
    expect(await db.prisma.savedView.count({ where: { id: BigInt(mine.id) } })).toBe(1);
  });

  it("validates page, name and query: console paths only (no open redirect), bounded sizes", async () => {
    for (const page of ["//evil.example", "https://evil.example/x", "records", "/Records", "/records?x=1", "/a//b", "/" + "a".repeat(120)]) {
      const res = await post(alice.token, { page, name: "x", query: "" });
      expect(res.status, page).toBe(400);
      expect((await json(res)).detail).toMatch(/page/);
    }
    for (const name of ["", "   ", "a".repeat(101), "tab\there"]) {
      expect((await post(alice.token, { page: "/records", name, query: "" })).status, JSON.stringify(name)).toBe(400);
    }
    expect((await post(alice.token, { page: "/records", name: "long", query: `q=${"x".repeat(2100)}` })).status).toBe(400);
    expect((await post(alice.token, { page: "/records", name: "extra", query: "", reason: "not a field" })).status).toBe(400);
    expect((await call(viewsRoute.GET, "/api/v1/views?page=//evil", alice.token)).status).toBe(400);
    // The root page and an empty query are fine.
    expect((await post(alice.token, { page: "/", name: "Default overview", query: "" })).status).toBe(201);
  });

  it("normalises query strings canonically", () => {
    expect(normalizeViewQuery("?q=a%20b&field=key")).toBe("q=a+b&field=key");
    expect(normalizeViewQuery("cursor=abc")).toBe("");
    expect(normalizeViewQuery("q=%3D1%2B2&q=x&blank=")).toBe("q=%3D1%2B2&q=x");
  });

  it("needs a signed-in principal; any role may keep views; cookie writes need same-origin", async () => {
    expect((await call(viewsRoute.GET, "/api/v1/views", null)).status).toBe(401);
    expect((await del(null, "1")).status).toBe(401);
    const cookie = await sessionCookie(bob.userId);
    const viaCookie = (extra: Record<string, string>) =>
      viewsRoute.POST(
        new Request("http://console.test/api/v1/views", {
          method: "POST",
          headers: { cookie, "content-type": "application/json", ...extra },
          body: JSON.stringify({ page: "/records", name: "From the browser", query: "q=1" }),
        }),
      );
    expect((await viaCookie({ "sec-fetch-site": "cross-site" })).status).toBe(403);
    expect((await viaCookie({ "sec-fetch-site": "same-origin" })).status).toBe(201);
  });

  it("caps views per user and page", async () => {
    const carol = await tokenFor(db, ["viewer"]);
    for (let i = 0; i < MAX_VIEWS_PER_PAGE; i++) {
      await createView(db.prisma, { userId: carol.userId }, { page: "/queue", name: `v${i}`, query: "", replace: false });
    }
    const res = await post(carol.token, { page: "/queue", name: "one too many", query: "" });
    expect(res.status).toBe(409);
    expect((await json(res)).detail).toMatch(/delete one first/);
    // Replacing an existing one is still possible; other pages are unaffected.
    expect((await post(carol.token, { page: "/queue", name: "v3", query: "kind=pending", replace: true })).status).toBe(200);
    expect((await post(carol.token, { page: "/records", name: "v0", query: "" })).status).toBe(201);
  });

  it("goes with its user (ON DELETE CASCADE)", async () => {
    const dave = await tokenFor(db, ["viewer"]);
    await createView(db.prisma, { userId: dave.userId }, { page: "/records", name: "mine", query: "q=1", replace: false });
    expect(await db.prisma.savedView.count({ where: { userId: dave.userId } })).toBe(1);
    await db.prisma.consoleUser.delete({ where: { id: dave.userId } });
    expect(await db.prisma.savedView.count({ where: { userId: dave.userId } })).toBe(0);
  });
});
