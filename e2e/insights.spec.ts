import AxeBuilder from "@axe-core/playwright";
import { expect, test, type Page } from "@playwright/test";
import { signInAs } from "./support/auth";

/**
 * Insights (issue 17) in the browser, on the demo's planted cases (lib/demo/insight-cases.ts):
 * key quality flags the counter client's scope and only it; the retention advisor lists the
 * retries after expiry and "Propose policy" pre-fills the admin's retention form; an operator
 * acknowledges the conflict spike with a reason; the banner points at the alerts; the record
 * page tells the counter client's record's story. Every figure is checked against the API.
 */

const COUNTER_SCOPE = "tenant:vandelay";

async function api<T>(page: Page, url: string): Promise<T> {
  const res = await page.request.get(url);
  expect(res.status(), url).toBe(200);
  return (await res.json()) as T;
}

function watchErrors(page: Page): string[] {
  const problems: string[] = [];
  page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error") problems.push(m.text());
  });
  return problems;
}

test("viewer: key quality flags the scope whose client makes keys from a counter, and only it", async ({ page }, testInfo) => {
  const problems = watchErrors(page);
  await signInAs(page, testInfo, "viewer", "/insights/key-quality");
  const answer = await api<{ findings: { scope: string; operation: string; kind: string }[] }>(page, "/api/v1/insights/key-quality");
  expect(new Set(answer.findings.map((f) => f.scope))).toEqual(new Set([COUNTER_SCOPE]));
  await page.goto("/insights/key-quality");
  await expect(page.getByRole("heading", { level: 1, name: "Key quality" })).toBeVisible();
  const cards = page.getByTestId("finding");
  await expect(cards).toHaveCount(answer.findings.length);
  expect(new Set(await cards.evaluateAll((els) => els.map((e) => e.getAttribute("data-scope"))))).toEqual(new Set([COUNTER_SCOPE]));
  const sequential = page.locator('[data-testid="finding"][data-kind="sequential"]');
  await expect(sequential).toContainText(/ord-0000\d\d/);
  await expect(sequential.getByTestId("finding-fix")).toContainText("UUID");
  await expect(page.getByTestId("findings-total")).toHaveText(String(answer.findings.length));
  // Another scope on its own: nothing to say.
  await page.goto("/insights/key-quality?scope=tenant%3Aacme");
  await expect(page.getByTestId("findings-empty")).toBeVisible();
  await page.screenshot({ path: testInfo.outputPath("key-quality.png"), fullPage: true });
  expect(problems).toEqual([]);
});

test("admin: the retention advisor lists the retries after expiry; Propose policy pre-fills the form, saving is the admin's audited action", async ({
  page,
}, testInfo) => {
  const problems = watchErrors(page);
  await signInAs(page, testInfo, "admin", "/insights/retention");
  const advice = await api<{
    operations: {
      operation: string;
      flags: { kind: string }[];
      lateRetries: { items: { recordId: string }[] };
      proposal: { keepRecordsDays: number; keepEventsDays: number };
    }[];
  }>(page, "/api/v1/insights/retention");
  const late = advice.operations.flatMap((o) => o.lateRetries.items.map((l) => l.recordId));
  expect(late.length).toBe(3);
  await page.goto("/insights/retention");
  await expect(page.getByRole("heading", { level: 1, name: "Retention advisor" })).toBeVisible();
  await expect(page.getByTestId("late-row")).toHaveCount(3);
  expect((await page.getByTestId("late-row").evaluateAll((els) => els.map((e) => e.getAttribute("data-record")))).sort()).toEqual([...late].sort());
  const order = page.locator('[data-testid="advisor-row"][data-operation="create_order"]');
  await expect(order.getByTestId("flag-retries_after_expiry")).toBeVisible();

  const proposal = advice.operations.find((o) => o.operation === "create_order")!.proposal;
  await order.getByTestId("propose-policy").click();
  await expect(page).toHaveURL(/\/retention\?propose=create_order/);
  await expect(page.getByTestId("policy-proposal")).toContainText("create_order");
  const form = page.getByTestId("policy-add-form");
  await expect(form.getByTestId("policy-add-operation")).toHaveValue("create_order");
  await expect(form.getByTestId("policy-add-records-days")).toHaveValue(String(proposal.keepRecordsDays));
  await expect(form.getByTestId("policy-add-events-days")).toHaveValue(String(proposal.keepEventsDays));
  await form.getByTestId("policy-add-reason").fill("retries come after expiry (retention advisor)");
  await form.getByTestId("policy-add").click();
  await expect(page.getByTestId("policies-message")).toContainText("Added: create_order keeps records");
  const row = page.locator('[data-testid="policy-row"][data-operation="create_order"]');
  await expect(row.getByTestId("policy-keep-records")).toHaveText(String(proposal.keepRecordsDays));
  const audit = await api<{ entries: { action: string; reason: string }[] }>(page, "/api/v1/audit?action=retention.policies.create");
  expect(audit.entries.map((a) => a.reason)).toContain("retries come after expiry (retention advisor)");
  expect(problems).toEqual([]);
});

test("operator: the banner points at the alerts; the conflict spike is acknowledged with a reason", async ({ page }, testInfo) => {
  const problems = watchErrors(page);
  await signInAs(page, testInfo, "operator", "/");
  // The server's evaluator remembers the alerts a few seconds after it starts (INSIGHTS_ALERTS_SECONDS).
  await expect(async () => {
    await page.goto("/");
    await expect(page.getByTestId("alerts-banner")).toBeVisible({ timeout: 5_000 });
  }).toPass({ timeout: 90_000 });
  await page.getByTestId("alerts-banner").getByRole("link", { name: "Open the alerts" }).click();
  await expect(page.getByRole("heading", { level: 1, name: "Alerts" })).toBeVisible();
  const live = await api<{ alerts: { kind: string; scope: string | null }[] }>(page, "/api/v1/insights/alerts");
  await expect(page.getByTestId("alert")).toHaveCount(live.alerts.length);
  const spike = page.locator(`[data-testid="alert"][data-kind="conflict_spike"][data-scope="${COUNTER_SCOPE}"]`);
  await expect(spike).toBeVisible();
  await spike.getByTestId("ack-open").click();
  await spike.getByTestId("ack-reason").fill("vandelay redeployed with a counter reset; ticket OPS-42");
  await spike.getByTestId("ack-submit").click();
  await expect(spike.getByTestId("alert-acknowledged")).toContainText("OPS-42");
  const after = await api<{ alerts: { kind: string; acknowledged: { reason: string } | null }[] }>(page, "/api/v1/insights/alerts");
  expect(after.alerts.find((a) => a.kind === "conflict_spike")!.acknowledged!.reason).toContain("OPS-42");
  await page.screenshot({ path: testInfo.outputPath("alerts.png"), fullPage: true });
  expect(problems).toEqual([]);
});

test("viewer: alerts can be read, not acknowledged", async ({ page }, testInfo) => {
  await signInAs(page, testInfo, "viewer", "/insights/alerts");
  await page.goto("/insights/alerts");
  await expect(page.getByTestId("alert").first()).toBeVisible();
  await expect(page.getByTestId("ack-open")).toHaveCount(0);
});

test("support: the record page of one of the counter client's records tells its story", async ({ page }, testInfo) => {
  const problems = watchErrors(page);
  await signInAs(page, testInfo, "support", "/records");
  const found = await api<{ items: { id: string; scope: string; operation: string }[] }>(page, "/api/v1/records?q=ord-000001&field=key");
  const record = found.items.find((r) => r.scope === COUNTER_SCOPE && r.operation === "create_order")!;
  expect(record).toBeTruthy();
  const story = await api<{ sentences: { kind: string; text: string }[] }>(page, `/api/v1/records/${record.id}/story`);
  await page.goto(`/records/${record.id}`);
  const panel = page.getByTestId("record-story");
  await expect(panel.getByRole("heading", { name: "What happened" })).toBeVisible();
  const items = panel.getByTestId("story-sentences").locator("li");
  await expect(items).toHaveCount(story.sentences.length);
  await expect(panel).toContainText("ord-000001");
  await expect(panel.locator('li[data-kind="conflict"]')).toContainText("different payload");
  await page.screenshot({ path: testInfo.outputPath("story.png"), fullPage: true });
  expect(problems).toEqual([]);
});

test("the insight pages and the story fit a 360 px phone: no sideways scroll, no serious axe violation", async ({ page }, testInfo) => {
  await page.setViewportSize({ width: 360, height: 780 });
  await signInAs(page, testInfo, "operator", "/insights/alerts");
  const found = await api<{ items: { id: string; scope: string }[] }>(page, "/api/v1/records?q=ord-000002&field=key");
  const record = found.items.find((r) => r.scope === COUNTER_SCOPE)!;
  for (const [path, ready] of [
    ["/insights/alerts", "alert"],
    ["/insights/retention", "advisor-table"],
    ["/insights/key-quality", "finding"],
    [`/records/${record.id}`, "story-sentences"],
    ["/", "alerts-banner"],
  ] as const) {
    await page.goto(path);
    await expect(page.getByTestId(ready).first()).toBeVisible({ timeout: 20_000 });
    await expect(page.locator('[data-testid="loading"], [aria-busy="true"], .rs-skeleton, .skeleton')).toHaveCount(0, { timeout: 20_000 });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect.soft(overflow, `${path} scrolls sideways`).toBeLessThanOrEqual(0);
    const axe = await new AxeBuilder({ page }).withTags(["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]).analyze();
    const bad = axe.violations
      .filter((v) => v.impact === "serious" || v.impact === "critical")
      .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(" | ")}`);
    expect.soft(bad, `${path}: axe`).toEqual([]);
    await page.screenshot({ path: testInfo.outputPath(`phone-${path.replace(/\W+/g, "-")}.png`), fullPage: true });
  }
});
