import { mkdirSync, rmSync } from "node:fs";
import path from "node:path";
import AxeBuilder from "@axe-core/playwright";
import { expect, test, type Page, type TestInfo } from "@playwright/test";
import { signInAs, type Role } from "./support/auth";

/**
 * Every screen, for every role that may open it, on a phone and a laptop (1440×900): nothing
 * scrolls the page sideways, nothing is logged to the console as an
 * error (a failed request, a script error, a hydration warning), and axe-core finds no
 * serious or critical accessibility violation — on every screen for every role on the phone,
 * and at 1440 px once per screen (the first role that sees it: the wide layout is the same
 * markup, the narrow one is where the menu and stacked tables differ). One sign-in per
 * role, one tab reused for every screen; the screenshots stay in
 * test-results/screens/<project>/<role>/ (CI artifacts).
 *
 * Per role, one test: its screens at both sizes. Findings are collected (expect.soft)
 * so one run reports every screen that fails, not only the first.
 */

interface Screen {
  /** Short name for the screenshot file. */
  name: string;
  path: string;
  /** Roles that may open it (the others get "Not permitted", checked once below). */
  roles: readonly Role[];
  /** What must be on screen once it has loaded. */
  ready: (page: Page) => Promise<void>;
}

const ALL: Role[] = ["viewer", "support", "operator", "approver", "admin"];
const heading = (name: string | RegExp) => async (page: Page) => {
  await expect(page.getByRole("heading", { level: 1, name })).toBeVisible();
};

/** Record ids picked from the demo data through the read API (as the signed-in user). */
interface Picks {
  pending: string;
  duplicate: string;
  refund: string;
}

function screens(p: Picks): Screen[] {
  return [
    { name: "overview", path: "/", roles: ALL, ready: heading("Overview") },
    { name: "queue", path: "/queue", roles: ALL, ready: heading("Stuck & pending") },
    { name: "search", path: "/records", roles: ALL, ready: heading(/Search/) },
    { name: "record-pending", path: `/records/${p.pending}`, roles: ALL, ready: async (page) => expect(page.getByTestId("record-fields")).toBeVisible() },
    {
      name: "record-duplicate",
      path: `/records/${p.duplicate}`,
      roles: ALL,
      ready: async (page) => expect(page.getByTestId("duplicate-row").first()).toBeVisible(),
    },
    {
      name: "record-refund",
      path: `/records/${p.refund}`,
      roles: ["operator"],
      ready: async (page) => expect(page.getByTestId("record-fields")).toBeVisible(),
    },
    { name: "duplicates", path: "/duplicates", roles: ALL, ready: async (page) => expect(page.getByTestId("duplicate-cluster").first()).toBeVisible() },
    { name: "compensations", path: "/compensations", roles: ALL, ready: heading("Compensations") },
    {
      name: "compensation-new",
      path: `/compensations/new?recordId=${p.duplicate}`,
      roles: ["operator"],
      ready: async (page) => expect(page.getByTestId("compensation-new")).toBeVisible(),
    },
    { name: "conflicts", path: "/conflicts", roles: ALL, ready: heading(/Conflicts/) },
    { name: "expiry", path: "/expiry", roles: ALL, ready: heading(/Expiry/) },
    { name: "retention", path: "/retention", roles: ALL, ready: heading(/Retention/) },
    { name: "redis", path: "/redis", roles: ALL, ready: heading("Redis keys") },
    { name: "insights-alerts", path: "/insights/alerts", roles: ALL, ready: heading("Alerts") },
    { name: "insights-retention", path: "/insights/retention", roles: ALL, ready: heading("Retention advisor") },
    { name: "insights-key-quality", path: "/insights/key-quality", roles: ALL, ready: heading("Key quality") },
    { name: "audit", path: "/audit", roles: ["support", "admin"], ready: heading(/Audit/) },
    { name: "users", path: "/admin/users", roles: ["admin"], ready: heading(/Users/) },
    { name: "tokens", path: "/settings/tokens", roles: ALL, ready: heading(/API tokens/) },
    { name: "settings", path: "/settings", roles: ALL, ready: heading(/Settings/) },
    { name: "api-docs", path: "/api-docs", roles: ["viewer", "admin"], ready: heading(/API/) },
    { name: "not-found", path: "/no-such-page", roles: ["viewer", "admin"], ready: heading(/not found/i) },
  ];
}

/**
 * The phone is 390×844 on the postgres project and 360×740 (the narrowest common Android
 * width, the layout's floor) on the embedded and MariaDB servers: both widths every run, no
 * extra sweep.
 */
function sizesFor(testInfo: TestInfo) {
  const phone = testInfo.project.name === "postgres" ? { width: 390, height: 844 } : { width: 360, height: 740 };
  return [
    { name: "phone", ...phone },
    { name: "laptop", width: 1440, height: 900 },
  ] as const;
}

/** Console errors and page errors since the last call (a failed request logs one too). */
function collectErrors(page: Page): () => string[] {
  let errors: string[] = [];
  page.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(`console: ${m.text()} (${m.location().url})`);
  });
  return () => {
    const out = errors;
    errors = [];
    return out;
  };
}

/** Waits until the screen's data arrived: loaded, no skeleton or busy region left. */
async function settle(page: Page): Promise<void> {
  await page.waitForLoadState("load");
  await expect(page.locator('[data-testid="loading"], [aria-busy="true"], .rs-skeleton, .skeleton')).toHaveCount(0, { timeout: 20_000 });
}

/** How far the page scrolls sideways, and the elements that stick out furthest. */
async function sideways(page: Page): Promise<{ overflow: number; culprits: string[] }> {
  return page.evaluate(() => {
    const doc = document.documentElement;
    const width = doc.clientWidth;
    const culprits: { right: number; what: string }[] = [];
    for (const el of document.body.querySelectorAll<HTMLElement>("*")) {
      const r = el.getBoundingClientRect();
      if (r.right > width + 1 && r.width > 0) {
        // Inside a box that scrolls on its own: not the page's problem.
        let p = el.parentElement;
        let clipped = false;
        while (p && p !== document.body) {
          const o = getComputedStyle(p).overflowX;
          if (o === "auto" || o === "scroll" || o === "hidden" || o === "clip") {
            clipped = true;
            break;
          }
          p = p.parentElement;
        }
        if (!clipped)
          culprits.push({
            right: Math.round(r.right),
            what: `${el.tagName.toLowerCase()}${el.className && typeof el.className === "string" ? `.${el.className.split(" ").join(".")}` : ""}`,
          });
      }
    }
    culprits.sort((a, b) => b.right - a.right);
    return { overflow: doc.scrollWidth - width, culprits: culprits.slice(0, 5).map((c) => `${c.what} → ${c.right}px`) };
  });
}

function screensDir(testInfo: TestInfo): string {
  return path.resolve(import.meta.dirname, "..", "test-results", "screens", testInfo.project.name);
}

async function pickRecords(page: Page): Promise<Picks> {
  const get = async <T>(url: string): Promise<T> => {
    const res = await page.request.get(url);
    expect(res.status(), url).toBe(200);
    return (await res.json()) as T;
  };
  const pending = await get<{ items: { id: string }[] }>("/api/v1/queue?kind=pending&limit=1");
  const dups = await get<{ clusters: { records: { id: string }[] }[] }>("/api/v1/duplicates");
  const refunds = await get<{ items: { id: string }[] }>("/api/v1/records?operation=refund_payment&status=completed&limit=1");
  expect(pending.items.length, "the demo has pending records").toBeGreaterThan(0);
  expect(dups.clusters.length, "the demo has duplicate charges").toBeGreaterThan(0);
  return { pending: pending.items[0].id, duplicate: dups.clusters[0].records[0].id, refund: refunds.items[0]?.id ?? pending.items[0].id };
}

/**
 * The roles swept on this project. On PostgreSQL, every role. On the embedded and MariaDB servers,
 * the fewest roles that between them open every screen (operator, admin): what a role may
 * see is the same code on every database, what a database changes is how each screen loads.
 */
function sweptRoles(project: string): Role[] {
  if (project === "postgres") return ALL;
  const covering: Role[] = ["operator", "admin"];
  for (const s of screens({ pending: "", duplicate: "", refund: "" })) {
    expect(
      s.roles.some((r) => covering.includes(r)),
      `${s.name} is opened by one of ${covering.join(", ")}`,
    ).toBe(true);
  }
  return covering;
}

for (const role of ALL) {
  test(`${role}: every screen on a phone and at 1440 px — no sideways scroll, no console error, no serious axe violation`, async ({ page }, testInfo) => {
    test.skip(!sweptRoles(testInfo.project.name).includes(role), "swept on the postgres project; the other roles open every screen here");
    test.setTimeout(240_000);
    const dir = path.join(screensDir(testInfo), role);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const errors = collectErrors(page);
    const SIZES = sizesFor(testInfo);
    await page.setViewportSize(SIZES[0]);
    await signInAs(page, testInfo, role);
    errors(); // sign-in noise is the auth tests' business
    const picks = await pickRecords(page);
    const mine = screens(picks).filter((s) => s.roles.includes(role));
    for (const size of SIZES) {
      await page.setViewportSize(size);
      for (const s of mine) {
        const where = `${role} ${s.path} at ${size.width}px`;
        const t0 = Date.now();
        await page.goto(s.path);
        await s.ready(page);
        const t1 = Date.now();
        await settle(page);
        const t2 = Date.now();
        const { overflow, culprits } = await sideways(page);
        expect.soft(overflow, `${where} scrolls sideways by ${overflow}px: ${culprits.join(", ")}`).toBeLessThanOrEqual(0);
        if (size.width < 1000 || s.roles[0] === role) {
          const axe = await new AxeBuilder({ page }).withTags(["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]).analyze();
          const bad = axe.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
          expect
            .soft(
              bad.map(
                (v) =>
                  `${v.id} (${v.impact}): ${v.help} — ${v.nodes
                    .slice(0, 3)
                    .map((n) => n.target.join(" "))
                    .join(" | ")}`,
              ),
              `${where}: axe violations`,
            )
            .toEqual([]);
        }
        const t3 = Date.now();
        await page.screenshot({ path: path.join(dir, `${s.name}-${size.name}.png`), fullPage: true });
        if (process.env.SWEEP_TIMING) console.log(`${where}: load ${t1 - t0} ms, settle ${t2 - t1} ms, checks ${t3 - t2} ms, screenshot ${Date.now() - t3} ms`);
        // The 404 page's own document answers 404 on purpose (Chromium logs that); nothing else may.
        const own = new RegExp(`status of 404 .*\\(${page.url().replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\)$`);
        expect
          .soft(
            errors().filter((e) => !(s.name === "not-found" && own.test(e))),
            `${where}: console errors`,
          )
          .toEqual([]);
      }
    }
  });
}

test("the sign-in page on a phone and at 1440 px — no sideways scroll, no console error, no serious axe violation", async ({ page }, testInfo) => {
  const errors = collectErrors(page);
  const SIZES = sizesFor(testInfo);
  const dir = screensDir(testInfo);
  mkdirSync(dir, { recursive: true });
  for (const size of SIZES) {
    await page.setViewportSize(size);
    await page.goto("/login");
    await expect(page.getByRole("heading", { level: 1 })).toBeVisible();
    await settle(page);
    expect((await sideways(page)).overflow, `/login at ${size.width}px`).toBeLessThanOrEqual(0);
    const axe = await new AxeBuilder({ page }).withTags(["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]).analyze();
    expect(
      axe.violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => v.id),
      `/login at ${size.width}px`,
    ).toEqual([]);
    await page.screenshot({ path: path.join(dir, `login-${size.name}.png`), fullPage: true });
  }
  expect(errors()).toEqual([]);
});

test("a page a role may not open names the role that can", async ({ page }, testInfo) => {
  const errors = collectErrors(page);
  await page.setViewportSize(sizesFor(testInfo)[0]);
  await signInAs(page, testInfo, "viewer", "/audit");
  await expect(page.getByTestId("forbidden")).toContainText(/support|admin/);
  const { overflow } = await sideways(page);
  expect(overflow).toBeLessThanOrEqual(0);
  const axe = await new AxeBuilder({ page }).analyze();
  expect(axe.violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => v.id)).toEqual([]);
  expect(errors().filter((e) => !/403/.test(e))).toEqual([]);
});

test("the duplicates screen's first view lists every planted double charge, however old; /favicon.ico answers", async ({ page }, testInfo) => {
  const favicon = await page.request.get("/favicon.ico");
  expect(favicon.status()).toBe(200);
  expect(favicon.headers()["content-type"]).toMatch(/image\//);
  await page.setViewportSize(sizesFor(testInfo)[0]);
  await signInAs(page, testInfo, "support", "/duplicates");
  const api = (await (await page.request.get("/api/v1/duplicates")).json()) as { lifetime: boolean; clusters: { firstAt: string; completed: number }[] };
  expect(api.lifetime).toBe(true);
  // The demo plants double charges up to a month back: some older than a week (a 7-day default would say "none").
  expect(api.clusters.some((c) => Date.parse(c.firstAt) < Date.now() - 7 * 86_400_000)).toBe(true);
  await expect(page.getByTestId("duplicate-cluster")).toHaveCount(api.clusters.length);
  await expect(page.getByTestId("duplicates-range")).toContainText("every record still held");
  await expect(page.getByTestId("duplicates-summary")).toContainText(`${api.clusters.length} suspected double charge`);
});

test("keyboard: ? lists the shortcuts, g d opens the duplicates, the menu folds on a phone", async ({ page }, testInfo) => {
  await page.setViewportSize(sizesFor(testInfo)[0]);
  await signInAs(page, testInfo, "viewer");
  await expect(page.getByRole("navigation", { name: "Main" })).toBeHidden();
  await page.getByTestId("menu-toggle").click();
  await expect(page.getByRole("navigation", { name: "Main" })).toBeVisible();
  await page.keyboard.press("Escape");
  await expect(page.getByRole("navigation", { name: "Main" })).toBeHidden();
  await expect(page.getByTestId("menu-toggle")).toBeFocused();
  await page.keyboard.press("?");
  await expect(page.getByTestId("shortcuts")).toBeVisible();
  await expect(page.getByTestId("shortcuts")).toContainText("Duplicates");
  await page.keyboard.press("Escape");
  await expect(page.getByTestId("shortcuts")).toBeHidden();
  await page.keyboard.press("g");
  await page.keyboard.press("d");
  await expect(page).toHaveURL(/\/duplicates$/);
});
