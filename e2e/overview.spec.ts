import { expect, test } from "@playwright/test";
import pg from "pg";
import { signInAs } from "./support/auth";
import { e2eDatabaseUrl } from "./support/env";

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
  test.skip(testInfo.project.metadata.mode !== "postgres", "only the Postgres server can be written from outside its process");
  const client = new pg.Client({ connectionString: e2eDatabaseUrl() });
  await client.connect();
  try {
    const sqlCounts = async () => {
      const { rows } = await client.query<{ status: string; n: string }>(`SELECT status, count(*) AS n FROM idempotency_records GROUP BY status`);
      return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
    };
    await signInAs(page, testInfo, "viewer");
    await page.goto("/");
    const before = await sqlCounts();
    for (const s of STATUSES) expect(await cardValue(page, `count-${s}`)).toBe(before[s] ?? 0);

    await client.query(
      `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, expires_at)
       VALUES ('tenant:e2e', 'capture_payment', $1, repeat('ab', 32), 'processing', now() + interval '1 day')`,
      [`e2e-${Date.now()}`],
    );
    await page.getByRole("button", { name: "Refresh now" }).click();
    await expect.poll(() => cardValue(page, "count-processing")).toBe((before.processing ?? 0) + 1);
  } finally {
    await client.end();
  }
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
