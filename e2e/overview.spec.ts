import { expect, test } from "@playwright/test";
import { signInAs } from "./support/auth";
import { serviceDatabase } from "./support/service-db";

const STATUSES = ["processing", "pending", "completed", "failed"] as const;

async function cardValue(page: import("@playwright/test").Page, testId: string): Promise<number> {
  const text = await page.getByTestId(testId).locator(".value").innerText();
  return Number(text.replace(/[^\d]/g, ""));
}

test("health reports the database mode and an up-to-date schema", async ({ request }, testInfo) => {
  const res = await request.get("/api/health");
  expect(res.status()).toBe(200);
  const body = await res.json();
  expect(body.status).toBe("ok");
  expect(body.database.mode).toBe(testInfo.project.metadata.mode);
  expect(body.migrations.state).toBe("up_to_date");
});

test("overview shows live counts by status from the database", async ({ page }, testInfo) => {
  await signInAs(page, testInfo, "viewer");
  await page.goto("/");
  await expect(page.getByRole("heading", { name: "Overview" })).toBeVisible();
  const counts = Object.fromEntries(await Promise.all(STATUSES.map(async (s) => [s, await cardValue(page, `count-${s}`)] as const)));
  const total = await cardValue(page, "count-total");
  expect(total).toBe(STATUSES.reduce((sum, s) => sum + counts[s], 0));
  expect(total).toBeGreaterThan(0); // demo traffic was generated on first start
  expect(counts.pending).toBeGreaterThan(0);
  expect(await cardValue(page, "count-open-reconciliation")).toBeGreaterThan(0);
  await page.screenshot({ path: testInfo.outputPath("overview.png"), fullPage: true });
});

test("a record written by a service appears after refresh", async ({ page }, testInfo) => {
  test.skip(testInfo.project.metadata.mode === "embedded", "only a database server can be written from outside its process");
  const client = await serviceDatabase(testInfo);
  try {
    const sqlCounts = async () => {
      const rows = await client.query<{ status: string; n: string | bigint }>(`SELECT status, count(*) AS n FROM idempotency_records GROUP BY status`);
      return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
    };
    await signInAs(page, testInfo, "viewer");
    await page.goto("/");
    const before = await sqlCounts();
    for (const s of STATUSES) expect(await cardValue(page, `count-${s}`)).toBe(before[s] ?? 0);

    await client.query(
      {
        postgres: `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, expires_at)
       VALUES ('tenant:e2e', 'capture_payment', $1, repeat('ab', 32), 'processing', now() + interval '1 day')`,
        mysql: `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, expires_at)
       VALUES ('tenant:e2e', 'capture_payment', ?, REPEAT('ab', 32), 'processing', UTC_TIMESTAMP(6) + INTERVAL 1 DAY)`,
      },
      [`e2e-${Date.now()}`],
    );
    await page.getByRole("button", { name: "Refresh now" }).click();
    await expect.poll(() => cardValue(page, "count-processing")).toBe((before.processing ?? 0) + 1);
  } finally {
    await client.close();
  }
});

test("range and filters live in the URL, and the numbers shown are the API's", async ({ page }, testInfo) => {
  await signInAs(page, testInfo, "viewer");
  await page.goto("/");
  await expect(page.getByTestId("count-total")).toBeVisible();
  const root = page.getByTestId("overview");

  // A preset range and an operation filter, with the keyboard-usable native controls.
  await page.getByRole("combobox", { name: "Range", exact: true }).selectOption("7d");
  await expect(page).toHaveURL(/[?&]range=7d(&|$)/);
  await page.getByRole("combobox", { name: "Operation", exact: true }).selectOption("capture_payment");
  await expect(page).toHaveURL(/[?&]operation=capture_payment(&|$)/);
  await expect(page.getByTestId("overview-range")).toContainText("capture_payment");
  await expect(root).toHaveAttribute("aria-busy", "false");
  await expect(page.locator(".ov-stale")).toHaveCount(0);

  // The data shown covers the range the UI asked for; the API answers the same numbers for it.
  const from = (await root.getAttribute("data-from"))!;
  const to = (await root.getAttribute("data-to"))!;
  expect(Date.parse(to) - Date.parse(from)).toBe(7 * 86_400_000);
  const res = await page.request.get(`/api/v1/stats/overview?${new URLSearchParams({ from, to, operation: "capture_payment" })}`);
  expect(res.status()).toBe(200);
  const api = await res.json();
  expect(api.filters).toEqual({ operation: "capture_payment", scope: null });
  for (const s of STATUSES) expect(await cardValue(page, `count-${s}`), s).toBe(api.records.byStatus[s]);
  expect(await cardValue(page, "count-total")).toBe(api.records.total);
  expect(await cardValue(page, "count-open-reconciliation")).toBe(api.reconciliation.open);
  expect(await cardValue(page, "count-requests")).toBe(api.events.total.requests);
  expect(api.events.total.requests).toBeGreaterThan(0);
  const row = page.getByTestId("op-row-capture_payment");
  expect(Number((await row.locator('[data-col="requests"]').innerText()).replace(/[^\d]/g, ""))).toBe(api.events.byOperation[0].requests);
  await expect(page.getByTestId("operations-table").locator("tbody tr")).toHaveCount(1);
  const shownRate = Number((await page.getByTestId("rate-conflict").locator(".value").innerText()).replace(/[^\d.]/g, ""));
  expect(shownRate).toBeCloseTo((api.events.total.conflictRate ?? 0) * 100, 1);
  // Unfiltered records outnumber capture_payment's.
  const all = await (await page.request.get("/api/v1/stats/overview")).json();
  expect(all.records.total).toBeGreaterThan(api.records.total);

  // Back undoes the filter; the URL is the view: opening it anew shows the same selection.
  const shared = page.url();
  await page.goBack();
  await expect(page).toHaveURL(/[?&]range=7d/);
  await expect(page).not.toHaveURL(/operation=/);
  await expect(page.getByRole("combobox", { name: "Operation", exact: true })).toHaveValue("");
  await expect.poll(() => cardValue(page, "count-total")).toBe(all.records.total);
  await page.goto(shared);
  await expect(page.getByRole("combobox", { name: "Range", exact: true })).toHaveValue("7d");
  await expect(page.getByRole("combobox", { name: "Operation", exact: true })).toHaveValue("capture_payment");
  await expect.poll(() => cardValue(page, "count-total")).toBe(api.records.total);

  // A custom range the API refuses shows its problem detail.
  await page.goto("/?from=2026-11-02T00:00:00Z&to=2026-11-01T00:00:00Z");
  await expect(page.getByTestId("load-error")).toContainText("from must be before to");
});

test("overview screenshot with charts (light and dark)", async ({ page }, testInfo) => {
  await signInAs(page, testInfo, "viewer");
  await page.goto("/?range=30d");
  for (const id of ["chart-transitions", "chart-conflict-rate", "chart-pending-ages", "chart-expiry-forecast"]) {
    await expect(page.getByTestId(id)).toBeVisible();
  }
  await expect(page.getByTestId("chart-transitions").getByRole("application")).toBeVisible();
  await expect(page.getByTestId("as-of")).toContainText("Data as of");
  await page.screenshot({ path: testInfo.outputPath("overview.png"), fullPage: true });
  await page.emulateMedia({ colorScheme: "dark" });
  await page.screenshot({ path: testInfo.outputPath("overview-dark.png"), fullPage: true });
  await testInfo.attach("overview", { path: testInfo.outputPath("overview.png"), contentType: "image/png" });
});

test("health refuses bad input with problem+json", async ({ request }) => {
  const unknown = await request.get("/api/health?verbose=1");
  expect(unknown.status()).toBe(400);
  expect(unknown.headers()["content-type"]).toContain("application/problem+json");
  expect((await unknown.json()).detail).toContain("verbose");
  const post = await request.post("/api/health", { data: {} });
  expect(post.status()).toBe(405);
  expect(post.headers()["allow"]).toBe("GET");
});
