import { expect, test, type Page } from "@playwright/test";
import { signInAs } from "./support/auth";

/**
 * Retention: an admin sets the default policy; an operator dry-runs, puts one of the
 * candidates under a legal hold from its record page (the dry run then counts one
 * fewer), starts the purge with the typed confirmation, watches its progress until it
 * completes, and finds it in the run history — the held record is still there.
 */

const numberIn = async (page: Page, testId: string) => Number((await page.getByTestId(testId).innerText()).replace(/[^\d]/g, ""));

test("admin sets the policy; operator dry-runs, holds a record, purges with a typed confirmation and watches it complete", async ({
  page,
  browser,
}, testInfo) => {
  test.setTimeout(180_000);
  const testStarted = Date.now();

  // --- The admin: the default policy keeps records 2 days after expiry, events 28 days.
  await signInAs(page, testInfo, "admin", "/retention");
  await expect(page.getByRole("heading", { name: "Retention", level: 1 })).toBeVisible();
  await expect(page.getByTestId("purges-not-permitted")).toBeVisible(); // admins manage policies; operators purge
  const panel = page.getByTestId("policies-panel");
  await expect(panel.getByTestId("policies-table").or(panel.getByTestId("policies-empty"))).toBeVisible();
  const defaultRow = panel.locator('[data-testid="policy-row"][data-operation=""]');
  if (await defaultRow.count()) {
    await defaultRow.getByTestId("policy-edit").click();
    await defaultRow.getByTestId("policy-records-days").fill("2");
    await defaultRow.getByTestId("policy-events-days").fill("28");
    await defaultRow.getByTestId("policy-reason").fill("e2e: shorter retention for the demo");
    await defaultRow.getByTestId("policy-save").click();
  } else {
    const form = panel.getByTestId("policy-add-form");
    await form.getByTestId("policy-add-records-days").fill("2");
    await form.getByTestId("policy-add-events-days").fill("28");
    await form.getByTestId("policy-add-reason").fill("e2e: a default retention policy");
    await form.getByTestId("policy-add").click();
  }
  await expect(page.getByTestId("policies-message")).toContainText(/keeps records 2 d, events 28 d/);
  await expect(defaultRow.getByTestId("policy-keep-records")).toHaveText("2");

  // --- The operator.
  const context = await browser.newContext();
  const op = await context.newPage();
  await signInAs(op, testInfo, "operator", "/retention");
  await expect(op.getByTestId("policies-table")).toBeVisible();
  await expect(op.getByTestId("policy-edit")).toHaveCount(0); // no retention.manage

  await op.getByTestId("dry-run-button").click();
  const result = op.getByTestId("dry-run-result");
  await expect(result).toBeVisible();
  const before = await numberIn(op, "dry-run-total-records");
  expect(before, "the demo data has records past the default policy's window").toBeGreaterThan(1);
  const defaultDry = op.locator('[data-testid="dry-run-policy-row"][data-operation=""]');
  const sample = defaultDry.getByRole("link").first();
  const sampleId = (await sample.innerText()).replace("#", "");

  // Hold one candidate from its record page.
  await op.goto(`/records/${sampleId}`);
  const hold = op.getByTestId("legal-hold-panel");
  await expect(hold.getByTestId("legal-hold-state")).toContainText("No legal hold");
  await hold.getByTestId("legal-hold-reason").fill("e2e: litigation on this order");
  await hold.getByTestId("legal-hold-toggle").click();
  await expect(hold.getByTestId("legal-hold-message")).toContainText("Legal hold set");
  await expect(hold).toHaveAttribute("data-held", "true");

  await op.goto("/retention");
  await op.getByTestId("dry-run-button").click();
  await expect(op.getByTestId("dry-run-result")).toBeVisible();
  const total = await numberIn(op, "dry-run-total-records");
  expect(total).toBe(before - 1);
  await expect(op.locator('[data-testid="dry-run-policy-row"][data-operation=""]').getByRole("link", { name: `#${sampleId}`, exact: true })).toHaveCount(0);

  // Start: small batches and a pause, so the progress is visible; the button waits for the typed count.
  const form = op.getByTestId("purge-form");
  await form.getByTestId("purge-batch-size").fill("40");
  await form.getByTestId("purge-pause-ms").fill("300");
  await form.getByTestId("purge-reason").fill("e2e: monthly retention purge");
  await form.getByTestId("purge-confirm").fill(String(total + 1));
  await expect(form.getByTestId("purge-start")).toBeDisabled();
  await form.getByTestId("purge-confirm").fill(String(total));
  await expect(form.getByTestId("purge-start")).toBeEnabled();
  const started = op.waitForResponse((r) => new URL(r.url()).pathname === "/api/v1/purges" && r.request().method() === "POST");
  await form.getByTestId("purge-start").click();
  const response = await started;
  expect(response.status()).toBe(202);
  expect(response.request().headers()["idempotency-key"]).toBeTruthy();
  const { run } = (await response.json()) as { run: { id: string; estimatedRecords: string } };
  expect(Number(run.estimatedRecords)).toBe(total);

  // Live progress: polled every second until it completes.
  const active = op.getByTestId("active-run");
  await expect(active).toHaveAttribute("data-id", run.id);
  const seen = new Set<string>();
  // Until 15 s before the test's own timeout, so a purge that ends otherwise or never says how it stands.
  const deadline = Date.now() + Math.max(10_000, testInfo.timeout - (Date.now() - testStarted) - 15_000);
  const howItStands = async () => JSON.stringify(((await (await op.request.get("/api/v1/purges?limit=1")).json()) as { items: unknown[] }).items[0]);
  for (;;) {
    const state = await active.getAttribute("data-state", { timeout: 10_000 });
    if (state === "completed") break;
    if (state === "failed" || state === "cancelled") throw new Error(`the purge ended ${state}: ${await howItStands()}`);
    if (Date.now() > deadline) throw new Error(`the purge did not complete in time: ${await howItStands()}`);
    // The progress line is gone the moment the run ends (the panel then shows its summary): a read
    // that waited for it would wait for the test's timeout (last CI), so each read waits 1 s at most.
    const records = active.getByTestId("run-records");
    if (await records.count()) {
      const text = await records.innerText({ timeout: 1000 }).catch(() => "");
      if (text && seen.size === 1 && !seen.has(text)) await op.screenshot({ path: testInfo.outputPath("retention-progress.png"), fullPage: true });
      if (text) seen.add(text);
    }
    await op.waitForTimeout(300);
  }
  expect(seen.size, `progress seen: ${[...seen].join(" | ")}`).toBeGreaterThan(1);
  await expect(active.getByTestId("run-summary")).toContainText(`${total.toLocaleString("en-US")} records`);
  await op.screenshot({ path: testInfo.outputPath("retention.png"), fullPage: true });

  // History.
  const row = op.locator(`[data-testid="run-row"][data-id="${run.id}"]`);
  await expect(row).toHaveAttribute("data-state", "completed");
  await expect(row.getByTestId("run-row-records")).toHaveText(`${total.toLocaleString("en-US")} / ${total.toLocaleString("en-US")}`);
  await expect(row).toContainText("e2e: monthly retention purge");

  // The held record survived; the next dry run finds nothing left (as of a moment later, maybe a few new).
  await op.goto(`/records/${sampleId}`);
  await expect(op.getByTestId("legal-hold-panel")).toHaveAttribute("data-held", "true");
  await context.close();
});
