import { expect, test, type Page } from "@playwright/test";
import { signInAs } from "./support/auth";

/**
 * Compensation with four eyes, as the two people who do it: an operator finds a
 * planted double charge on the duplicate-charge screen and hands it over to
 * compensation (the request form arrives pre-filled); the requester cannot approve
 * it; an approver signs in, approves it from /compensations, and the demo provider
 * (which `npm start` runs and seeds with the demo charges) executes the refund.
 */

interface RecordJson {
  id: string;
  status: string;
  idempotencyKey: string;
  provider: string | null;
  providerReference: string | null;
  amountMinor: string | null;
  currency: string | null;
}
interface DuplicatesJson {
  clusters: { records: RecordJson[]; pairs: { first: string; second: string; basis: string[] }[] }[];
}

async function api<T>(page: Page, url: string): Promise<T> {
  const res = await page.request.get(url);
  expect(res.status(), url).toBe(200);
  return (await res.json()) as T;
}

function watchErrors(page: Page): string[] {
  const problems: string[] = [];
  page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error" && /Hydration|hydrat|Content Security Policy/i.test(m.text())) problems.push(m.text());
  });
  return problems;
}

test("operator hands a double charge over to compensation; a second person approves it and the provider refunds it", async ({ page, browser }, testInfo) => {
  const problems = watchErrors(page);
  const operator = await signInAs(page, testInfo, "operator", "/duplicates");
  const to = new Date();
  const from = new Date(to.getTime() - 30 * 86_400_000);
  const range = `from=${encodeURIComponent(from.toISOString())}&to=${encodeURIComponent(to.toISOString())}`;
  const found = await api<DuplicatesJson>(page, `/api/v1/duplicates?${range}`);

  // A planted double charge whose later record has not been compensated yet.
  let pair: { a: RecordJson; b: RecordJson } | undefined;
  for (const c of found.clusters) {
    for (const p of c.pairs) {
      const a = c.records.find((r) => r.id === p.first)!;
      const b = c.records.find((r) => r.id === p.second)!;
      if (a.status !== "completed" || b.status !== "completed" || !b.providerReference || b.amountMinor === null) continue;
      const existing = await api<{ items: unknown[] }>(page, `/api/v1/compensations?recordId=${b.id}`);
      if (existing.items.length === 0) {
        pair = { a, b };
        break;
      }
    }
    if (pair) break;
  }
  expect(pair, "the demo traffic plants completed double charges").toBeTruthy();
  const { a, b } = pair!;

  await page.goto(`/duplicates?${range}`);
  const card = page.locator(`[data-testid="duplicate-pair"][data-first="${a.id}"][data-second="${b.id}"]`);
  await expect(card).toBeVisible();
  const handover = card.getByTestId("handover");
  await expect(handover).toHaveAttribute("href", new RegExp(`^/compensations/new\\?recordId=${b.id}&relatedRecordId=${a.id}&reason=`));
  await expect(card.getByTestId("handover-note")).toContainText(`record #${b.id}`);
  await handover.click();

  // The request form, pre-filled with the pair: the later record refunded in full, the earlier one named.
  await expect(page).toHaveURL(new RegExp(`/compensations/new\\?recordId=${b.id}&relatedRecordId=${a.id}`));
  await expect(page.getByRole("heading", { name: "Request a compensation", level: 1 })).toBeVisible();
  await expect(page.getByTestId("compensation-related")).toContainText(`record #${a.id}`);
  await expect(page.getByTestId("compensation-amount")).toHaveValue(b.amountMinor!);
  await expect(page.getByTestId("compensation-request-reason")).toHaveValue(new RegExp(`^Duplicate of record #${a.id} \\(`));
  await expect(page.getByTestId("kind-refund")).toBeChecked();
  // Client-side guard: more than the charge is refused before anything is sent.
  await page.getByTestId("compensation-amount").fill(String(BigInt(b.amountMinor!) + 1n));
  await expect(page.getByTestId("compensation-request-submit")).toBeDisabled();
  await page.getByTestId("compensation-amount").fill(b.amountMinor!);
  await page.screenshot({ path: testInfo.outputPath("compensation-request.png"), fullPage: true });
  const requestSent = page.waitForResponse((r) => r.url().endsWith("/api/v1/compensations") && r.request().method() === "POST");
  await page.getByTestId("compensation-request-submit").click();
  const response = await requestSent;
  expect(response.status()).toBe(201);
  expect(response.request().headers()["idempotency-key"]).toBeTruthy();
  const requested = page.getByTestId("compensation-requested");
  await expect(requested).toContainText("waits for approval by someone else");
  const id = (await requested.getAttribute("data-id"))!;

  // The requester sees it waiting, and that someone else must approve it.
  await requested.getByRole("link", { name: "Open the approval queue" }).click();
  await expect(page).toHaveURL(/\/compensations$/);
  const mine = page.locator(`[data-testid="compensation-row"][data-id="${id}"]`);
  await expect(mine.getByTestId("compensation-state")).toHaveText("waiting for approval");
  await expect(mine.getByTestId("compensation-note")).toContainText("someone else must approve");
  await expect(mine.getByTestId("compensation-approve")).toHaveCount(0);
  await expect(mine).toContainText(operator.email);
  await page.screenshot({ path: testInfo.outputPath("compensations-waiting.png"), fullPage: true });

  // A second person, the approver, approves it from /compensations.
  const approverContext = await browser.newContext();
  const approverPage = await approverContext.newPage();
  const approverProblems = watchErrors(approverPage);
  await signInAs(approverPage, testInfo, "approver", "/compensations");
  await expect(approverPage.getByTestId("tab-requested")).toHaveAttribute("aria-selected", "true");
  const row = approverPage.locator(`[data-testid="compensation-row"][data-id="${id}"]`);
  await expect(row).toContainText(`#${b.id}`);
  await expect(row).toContainText(operator.email);
  await row.getByTestId("compensation-approve").click();
  await row.getByTestId("compensation-reason").fill("checked both charges at the provider: a double charge");
  const approved = approverPage.waitForResponse((r) => r.url().endsWith(`/api/v1/compensations/${id}/approve`) && r.request().method() === "POST");
  await row.getByTestId("compensation-submit").click();
  expect((await approved).status()).toBe(200);
  await expect(approverPage.getByTestId("compensations-outcome")).toContainText(`#${id}: Approved and executed`);
  await expect(row).toHaveCount(0); // it left "waiting for approval"

  await approverPage.getByTestId("tab-executed").click();
  await expect(approverPage).toHaveURL(/\/compensations\?state=executed$/);
  const executed = approverPage.locator(`[data-testid="compensation-row"][data-id="${id}"]`);
  await expect(executed.getByTestId("compensation-state")).toHaveText("executed");
  await expect(executed.getByTestId("provider-compensation-id")).toHaveText(/^re_/);
  await approverPage.screenshot({ path: testInfo.outputPath("compensations-executed.png"), fullPage: true });

  // The record page shows it executed, and nothing is left to compensate.
  await page.goto(`/records/${b.id}`);
  const section = page.getByTestId("compensations");
  await expect(section.locator(`[data-testid="compensation-row"][data-id="${id}"]`).getByTestId("compensation-state")).toHaveText("executed");
  await expect(page.getByTestId("compensation-panel").getByTestId("compensation-nothing-left")).toBeVisible();
  await section.scrollIntoViewIfNeeded();
  await page.screenshot({ path: testInfo.outputPath("record-compensations.png"), fullPage: true });
  await approverContext.close();
  expect([...problems, ...approverProblems]).toEqual([]);
});

test("support cannot hand over or request; the compensation pages say why", async ({ page }, testInfo) => {
  await signInAs(page, testInfo, "support", "/compensations/new?recordId=1");
  await expect(page.getByTestId("forbidden")).toContainText("compensations.request");
  await page.goto("/compensations");
  await expect(page.getByTestId("compensations-hint")).toContainText("Approving needs the permission compensations.approve");
  await expect(page.getByTestId("compensations-hint")).toContainText("Requesting one needs the permission compensations.request");
});
