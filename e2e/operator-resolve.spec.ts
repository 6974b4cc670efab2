import { randomBytes } from "node:crypto";
import { expect, test, type Page } from "@playwright/test";
import { signInAs } from "./support/auth";

/**
 * An operator works the stuck & pending queue: resolves a pending record by hand
 * (completed, with the provider's reference and a reason) and sees it completed; a
 * second tab still showing the old version gets the 409 with the record's current
 * state and reloads; then a bulk "Check with provider" on two rows with the typed
 * confirmation, showing one outcome per record.
 */

interface QueueJson {
  items: { id: string; kind: string; status: string; version: number; idempotencyKey: string }[];
}

interface RecordJson {
  record: { id: string; status: string; version: number; providerReference: string | null };
  reconciliationItems: { state: string; attempts: number }[];
  timeline: { events: { kind: string }[] };
}

async function api<T>(page: Page, url: string): Promise<T> {
  const res = await page.request.get(url);
  expect(res.status(), url).toBe(200);
  return (await res.json()) as T;
}

function watchErrors(page: Page): string[] {
  const problems: string[] = [];
  page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
  return problems;
}

test("operator: resolves a pending record by hand from the queue; a stale second attempt gets the 409 and reloads", async ({ page, context }, testInfo) => {
  const problems = watchErrors(page);
  await signInAs(page, testInfo, "operator", "/queue?kind=pending");
  const pending = await api<QueueJson>(page, "/api/v1/queue?kind=pending&limit=50");
  expect(pending.items.length, "the demo data has pending records").toBeGreaterThan(0);

  const rows = page.locator('[data-testid="queue-row"][data-kind="pending"]');
  await expect(rows.first()).toBeVisible();
  const id = (await rows.first().getAttribute("data-id"))!;
  const version = pending.items.find((i) => i.id === id)!.version;

  // A second tab opens the same record now and keeps showing this version.
  const stale = await context.newPage();
  await stale.goto(`/records/${id}`);
  await expect(stale.getByTestId("resolve-version")).toHaveText(String(version));

  // From the queue row to the record's resolve panel.
  await rows.first().getByTestId("row-resolve").click();
  await expect(page).toHaveURL(new RegExp(`/records/${id}#resolve$`));
  const panel = page.getByTestId("resolve-panel");
  await expect(panel).toBeVisible();
  await expect(panel.getByTestId("resolve-state")).toContainText("pending");
  await expect(panel.getByTestId("resolve-version")).toHaveText(String(version));

  const reference = `ch_e2e_${randomBytes(6).toString("hex")}`;
  const submit = panel.getByTestId("resolve-submit");
  await expect(panel.getByTestId("resolve-outcome-completed")).toBeChecked();
  await expect(submit).toBeDisabled(); // reference and reason still missing
  await panel.getByTestId("resolve-reference").fill(reference);
  await panel.getByTestId("resolve-reason").fill("provider dashboard shows the charge succeeded (e2e)");
  await page.screenshot({ path: testInfo.outputPath("resolve-form.png"), fullPage: true });
  await submit.click();

  await expect(panel.getByTestId("resolve-done")).toContainText(`completed with provider reference ${reference}`);
  await expect(page.locator(".record-head").getByTestId("status-badge")).toHaveText("completed");
  await expect(page.getByTestId("record-fields")).toContainText(reference);
  await expect(page.getByTestId("resolve-form")).toHaveCount(0);
  await expect(page.getByTestId("timeline")).toContainText("reconciled");
  const after = await api<RecordJson>(page, `/api/v1/records/${id}`);
  expect(after.record).toMatchObject({ status: "completed", version: version + 1, providerReference: reference });
  expect(after.reconciliationItems.every((i) => i.state !== "open" && i.state !== "checking")).toBe(true);
  await page.screenshot({ path: testInfo.outputPath("resolved.png"), fullPage: true });

  // The stale tab still offers the form at the old version: the API refuses with 409 and the current state.
  const stalePanel = stale.getByTestId("resolve-panel");
  await stalePanel.getByTestId("resolve-outcome-failed").check();
  await expect(stalePanel.getByTestId("resolve-reference")).toHaveCount(0);
  await stalePanel.getByTestId("resolve-reason").fill("declined at the bank (stale tab, e2e)");
  await stalePanel.getByTestId("resolve-submit").click();
  const conflict = stalePanel.getByTestId("resolve-conflict");
  await expect(conflict).toBeVisible();
  await expect(conflict).toContainText("Someone changed this record first");
  await expect(conflict).toContainText(`version ${version + 1}`);
  await expect(conflict.getByTestId("resolve-conflict-current")).toContainText("completed");
  await stale.screenshot({ path: testInfo.outputPath("resolve-conflict.png"), fullPage: true });
  await conflict.getByTestId("resolve-reload").click();
  await expect(stale.locator(".record-head").getByTestId("status-badge")).toHaveText("completed");
  await expect(stale.getByTestId("resolve-panel")).toHaveCount(0);
  // Nothing was overwritten.
  expect((await api<RecordJson>(page, `/api/v1/records/${id}`)).record).toMatchObject({ status: "completed", version: version + 1 });
  expect(problems).toEqual([]);
});

test("operator: bulk check with provider on two queue rows, with the typed confirmation; one outcome per record", async ({ page }, testInfo) => {
  const problems = watchErrors(page);
  await signInAs(page, testInfo, "operator", "/queue?kind=pending");
  const rows = page.locator('[data-testid="queue-row"][data-kind="pending"]');
  await expect(rows.nth(1)).toBeVisible();
  const ids = [(await rows.nth(0).getAttribute("data-id"))!, (await rows.nth(1).getAttribute("data-id"))!];
  const before = await Promise.all(ids.map((id) => api<RecordJson>(page, `/api/v1/records/${id}`)));

  const bulk = page.getByTestId("bulk-check");
  await expect(bulk).toBeDisabled();
  await rows.nth(0).getByTestId("row-select").check();
  await rows.nth(1).getByTestId("row-select").check();
  await expect(page.getByTestId("selection-count")).toHaveText("2 selected");
  await expect(bulk).toBeEnabled();
  await bulk.click();

  const dialog = page.getByTestId("bulk-dialog");
  await expect(dialog).toBeVisible();
  await expect(dialog.getByTestId("bulk-expected")).toHaveText("check 2 records");
  const go = dialog.getByTestId("bulk-confirm-submit");
  await dialog.getByTestId("bulk-reason").fill("provider incident over, sweep (e2e)");
  await dialog.getByTestId("bulk-confirm-input").fill("check 3 records");
  await expect(go).toBeDisabled();
  await dialog.getByTestId("bulk-confirm-input").fill("check 2 records");
  await expect(go).toBeEnabled();
  await go.click();

  const outcomes = dialog.getByTestId("bulk-outcome");
  await expect(outcomes).toHaveCount(2);
  expect((await outcomes.evaluateAll((els) => els.map((e) => e.getAttribute("data-id")!))).sort()).toEqual([...ids].sort());
  for (const action of await outcomes.evaluateAll((els) => els.map((e) => e.getAttribute("data-action")!))) {
    // Without a reachable provider the answer is "no final answer yet"; with one, whatever it said.
    expect(["completed", "failed", "rescheduled", "needs_manual", "confirmed"]).toContain(action);
  }
  await expect(dialog.getByTestId("bulk-summary")).toContainText("Checked 2");
  await page.screenshot({ path: testInfo.outputPath("bulk-outcomes.png"), fullPage: true });
  await dialog.getByTestId("bulk-close").click();
  await expect(dialog).toBeHidden();
  await expect(page.getByTestId("selection-count")).toHaveText("0 selected");

  // Each record was checked: its item's attempts went up (the background reconciler may have checked it too).
  for (const [n, id] of ids.entries()) {
    const now = await api<RecordJson>(page, `/api/v1/records/${id}`);
    const attempts = (r: RecordJson) => r.reconciliationItems.reduce((s, i) => s + i.attempts, 0);
    expect(attempts(now)).toBeGreaterThanOrEqual(attempts(before[n]) + 1);
  }
  expect(problems).toEqual([]);
});
