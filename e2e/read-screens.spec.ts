import { expect, test, type Locator, type Page } from "@playwright/test";
import { signInAs } from "./support/auth";

/**
 * The read screens, each as the role that uses it: an operator works the stuck &
 * pending queue, support investigates a double charge, an engineer (viewer) reads
 * conflicts and expiry. Every number on screen is checked against the read API.
 */

/** GET through the browser's session (same origin), as the screens themselves do. */
async function api<T>(page: Page, url: string): Promise<T> {
  const res = await page.evaluate(async (u) => {
    const r = await fetch(u, { headers: { accept: "application/json" }, cache: "no-store" });
    return { status: r.status, body: await r.text() };
  }, url);
  expect(res.status, `${url}: ${res.body}`).toBe(200);
  return JSON.parse(res.body) as T;
}

/** The number shown in an element, whatever the locale's grouping separators. */
async function numberIn(locator: Locator): Promise<number> {
  const text = await locator.innerText();
  return Number(text.replace(/[^\d]/g, ""));
}

/** Fails the test on script errors (a screen that does not hydrate or crashes). */
function watchErrors(page: Page): string[] {
  const problems: string[] = [];
  page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error" && /Content Security Policy|Refused to|Hydration|hydrat/i.test(m.text())) problems.push(m.text());
  });
  return problems;
}

interface QueueJson {
  items: { id: string; kind: string; status: string; operation: string; idempotencyKey: string }[];
  nextCursor: string | null;
  summary: { stuck: number; pending: number; openReconciliation: number };
}

test("operator: the queue shows stuck and pending records, sorts by age, and selects rows for bulk actions", async ({ page }, testInfo) => {
  const problems = watchErrors(page);
  await signInAs(page, testInfo, "operator", "/queue");
  const stuck = await api<QueueJson>(page, "/api/v1/queue?kind=stuck&limit=200");
  const pending = await api<QueueJson>(page, "/api/v1/queue?kind=pending&limit=200");
  expect(stuck.items.length, "the demo traffic plants stuck records").toBeGreaterThan(0);
  expect(pending.items.length, "the demo traffic plants pending records").toBeGreaterThan(0);

  await page.goto("/queue");
  await expect(page.getByRole("heading", { name: "Stuck & pending", level: 1 })).toBeVisible();
  const rows = page.getByTestId("queue-row");
  await expect(rows.first()).toBeVisible();
  // Both kinds on the "All" tab, oldest first, and the tab counts are the API's.
  await expect(page.locator('[data-testid="queue-row"][data-kind="stuck"]').first()).toBeVisible();
  await expect(page.locator('[data-testid="queue-row"][data-kind="pending"]').first()).toBeVisible();
  expect(await numberIn(page.getByTestId("tab-stuck").locator(".rs-count"))).toBe(stuck.summary.stuck);
  expect(await numberIn(page.getByTestId("tab-pending").locator(".rs-count"))).toBe(pending.summary.pending);
  const firstId = await rows.first().getAttribute("data-id");
  await expect(rows.first().getByTestId("record-link")).toHaveAttribute("href", `/records/${firstId}`);
  await page.screenshot({ path: testInfo.outputPath("queue-all.png"), fullPage: true });

  // The stuck tab: exactly the API's stuck rows, in its order; the filter is in the URL.
  await page.getByTestId("tab-stuck").click();
  await expect(page).toHaveURL(/[?&]kind=stuck/);
  await expect(rows).toHaveCount(Math.min(stuck.items.length, 50));
  await expect(page.locator('[data-testid="queue-row"]:not([data-kind="stuck"])')).toHaveCount(0);
  expect(await rows.evaluateAll((els) => els.map((e) => e.getAttribute("data-id")))).toEqual(stuck.items.slice(0, 50).map((i) => i.id));

  // Keyboard: Right arrow moves to the pending tab.
  await page.getByTestId("tab-stuck").press("ArrowRight");
  await expect(page).toHaveURL(/[?&]kind=pending/);
  await expect(page.getByTestId("tab-pending")).toBeFocused();
  await expect(rows).toHaveCount(Math.min(pending.items.length, 50));
  await expect(page.locator('[data-testid="queue-row"]:not([data-kind="pending"])')).toHaveCount(0);

  // Sorting by age (newest first) matches the API's order, and survives a reload (it is in the URL).
  const newest = await api<QueueJson>(page, "/api/v1/queue?kind=pending&sort=age_asc&limit=50");
  await page.getByTestId("sort-age").click();
  await expect(page).toHaveURL(/[?&]sort=age_asc/);
  await expect(rows.first()).toHaveAttribute("data-id", newest.items[0].id);
  await page.reload();
  await expect(rows.first()).toHaveAttribute("data-id", newest.items[0].id);

  // Selection: per row, "select all on page", kept out of the URL; bulk check disabled until rows are selected
  // (the check itself: e2e/operator-resolve.spec.ts).
  const count = page.getByTestId("selection-count");
  const bulk = page.getByTestId("bulk-check");
  await expect(count).toHaveText("0 selected");
  await expect(bulk).toBeDisabled();
  await expect(page.getByTestId("bulk-bar")).toContainText("Select rows to check them");
  await rows.nth(0).getByTestId("row-select").check();
  await expect(count).toHaveText("1 selected");
  const n = await rows.count();
  if (n > 1) {
    // Keyboard: arrow down to the next row, Space selects it.
    await rows.nth(0).focus();
    await page.keyboard.press("ArrowDown");
    await expect(rows.nth(1)).toBeFocused();
    await page.keyboard.press(" ");
    await expect(count).toHaveText("2 selected");
  }
  await page.getByTestId("select-all").check();
  await expect(count).toHaveText(`${n} selected`);
  await expect(bulk).toBeEnabled();
  expect((await bulk.getAttribute("data-record-ids"))!.split(",").sort()).toEqual(
    (await rows.evaluateAll((els) => els.map((e) => e.getAttribute("data-id")!))).sort(),
  );
  expect(page.url()).not.toMatch(/select/);
  await page.screenshot({ path: testInfo.outputPath("queue-selected.png"), fullPage: true });
  await page.getByTestId("select-all").uncheck();
  await expect(count).toHaveText("0 selected");

  // Keyset "Load more" (5 per page here): the next page continues exactly where the API's does.
  const all = await api<QueueJson>(page, "/api/v1/queue?limit=200");
  await page.goto("/queue?limit=5");
  await expect(rows).toHaveCount(Math.min(5, all.items.length));
  if (all.items.length > 5) {
    await page.getByTestId("load-more").click();
    await expect(rows).toHaveCount(Math.min(10, all.items.length));
    expect(await rows.evaluateAll((els) => els.map((e) => e.getAttribute("data-id")))).toEqual(all.items.slice(0, 10).map((i) => i.id));
  }

  // An operator may not export: no export link.
  await expect(page.getByTestId("export-link")).toHaveCount(0);
  expect(problems).toEqual([]);
});

interface DuplicatesJson {
  from: string;
  to: string;
  clusters: {
    completed: number;
    records: { id: string; idempotencyKey: string; providerReference: string | null; status: string }[];
    pairs: { first: string; second: string; basis: string[]; secondsApart: number }[];
  }[];
}

test("support: the duplicate finder shows a planted double charge side by side", async ({ page }, testInfo) => {
  const problems = watchErrors(page);
  await signInAs(page, testInfo, "support", "/duplicates");
  const to = new Date();
  const from = new Date(to.getTime() - 30 * 86_400_000);
  const range = `from=${encodeURIComponent(from.toISOString())}&to=${encodeURIComponent(to.toISOString())}`;
  const found = await api<DuplicatesJson>(page, `/api/v1/duplicates?${range}`);
  // A planted double charge: two completed captures of the same purchase under different keys.
  const cluster = found.clusters.find((c) => c.completed >= 2) ?? found.clusters[0];
  expect(cluster, "the demo traffic plants double charges").toBeTruthy();
  const pair = cluster.pairs[0];
  const a = cluster.records.find((r) => r.id === pair.first)!;
  const b = cluster.records.find((r) => r.id === pair.second)!;
  expect(a.idempotencyKey).not.toBe(b.idempotencyKey);

  await page.goto(`/duplicates?${range}`);
  await expect(page.getByRole("heading", { name: "Duplicate charges", level: 1 })).toBeVisible();
  await expect(page.getByTestId("duplicate-pair").first()).toBeVisible();
  await expect(page.getByTestId("duplicate-pair")).toHaveCount(found.clusters.reduce((s, c) => s + c.pairs.length, 0));
  const card = page.locator(`[data-testid="duplicate-pair"][data-first="${a.id}"][data-second="${b.id}"]`);
  await expect(card).toBeVisible();
  await expect(card).toContainText(a.idempotencyKey.slice(0, 20));
  await expect(card).toContainText(b.idempotencyKey.slice(0, 20));
  for (const ref of [a.providerReference, b.providerReference]) if (ref) await expect(card).toContainText(ref.slice(0, 20));
  await expect(card.getByRole("link", { name: `record #${a.id}` })).toHaveAttribute("href", `/records/${a.id}`);
  await expect(card.getByRole("link", { name: `record #${b.id}` })).toHaveAttribute("href", `/records/${b.id}`);
  await expect(card.getByTestId("pair-basis").first()).toContainText(pair.basis.includes("payload_hash") ? "same payload hash" : "same amount");
  await expect(card.getByTestId("pair-gap")).toContainText("apart");
  const handover = card.getByTestId("handover");
  await expect(handover).toBeDisabled();
  await expect(handover).toHaveAttribute("data-record-ids", `${a.id},${b.id}`);
  await expect(card.getByTestId("handover-note")).toContainText("needs the permission compensations.request"); // support may not hand over
  await card.scrollIntoViewIfNeeded();
  await card.screenshot({ path: testInfo.outputPath("duplicate-pair.png") });
  await page.screenshot({ path: testInfo.outputPath("duplicates.png"), fullPage: true });

  // Support may export: the link carries the same filters as the screen.
  const exportLink = page.getByTestId("export-link");
  await expect(exportLink).toHaveAttribute("href", /^\/api\/v1\/export\/duplicates\?/);
  const href = new URL((await exportLink.getAttribute("href"))!, "http://x");
  expect(href.searchParams.get("from")).toBe(from.toISOString());
  expect(href.searchParams.get("to")).toBe(to.toISOString());

  // The window is adjustable and kept in the URL.
  await page.getByLabel("Window").selectOption("1m");
  await expect(page).toHaveURL(/[?&]window=1m/);
  await expect(page.getByTestId("duplicates-summary")).toContainText("1 min");
  expect(problems).toEqual([]);
});

interface ConflictsJson {
  total: number;
  groups: { operation: string; scope: string; conflicts: number; keys: number }[];
  rates: { operation: string; conflicts: number; requests: number }[];
  events: { items: { id: string; operation: string; scope: string }[]; nextCursor: string | null };
}

test("engineer: conflicts by operation and scope, trend chart and drill-down equal the API", async ({ page }, testInfo) => {
  const problems = watchErrors(page);
  await signInAs(page, testInfo, "viewer", "/conflicts");
  const to = new Date();
  const from = new Date(to.getTime() - 30 * 86_400_000);
  const range = `from=${encodeURIComponent(from.toISOString())}&to=${encodeURIComponent(to.toISOString())}`;
  const stats = await api<ConflictsJson>(page, `/api/v1/conflicts?${range}`);
  expect(stats.total, "the demo traffic reuses keys with other payloads").toBeGreaterThan(0);

  await page.goto(`/conflicts?${range}`);
  await expect(page.getByRole("heading", { name: "Conflicts", level: 1 })).toBeVisible();
  await expect(page.getByTestId("conflicts-total")).toBeVisible();
  expect(await numberIn(page.getByTestId("conflicts-total"))).toBe(stats.total);
  const chart = page.getByTestId("conflicts-trend");
  await expect(chart.locator("svg.recharts-surface").first()).toBeVisible();
  await expect(chart.locator(".recharts-bar-rectangle").first()).toBeAttached();

  const groups = page.getByTestId("conflict-group");
  await expect(groups).toHaveCount(stats.groups.length);
  for (const g of stats.groups) {
    const row = page.locator(`[data-testid="conflict-group"][data-operation="${g.operation}"][data-scope="${g.scope}"]`);
    expect(await numberIn(row.getByTestId("group-conflicts"))).toBe(g.conflicts);
  }
  for (const r of stats.rates) {
    const row = page.locator(`[data-testid="rate-row"][data-operation="${r.operation}"]`);
    expect(await numberIn(row.getByTestId("rate-conflicts"))).toBe(r.conflicts);
    expect(await numberIn(row.getByTestId("rate-requests"))).toBe(r.requests);
  }
  await expect(page.getByTestId("conflict-event")).toHaveCount(Math.min(stats.total, 50));
  await page.screenshot({ path: testInfo.outputPath("conflicts.png"), fullPage: true });

  // The drill-down pages with a keyset cursor (10 at a time here), newest first like the API.
  if (stats.total > 10) {
    await page.goto(`/conflicts?${range}&limit=10`);
    await expect(page.getByTestId("conflict-event")).toHaveCount(10);
    await page.getByTestId("load-more").click();
    await expect(page.getByTestId("conflict-event")).toHaveCount(Math.min(20, stats.total));
    const ids = await page.getByTestId("conflict-event").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-id")));
    expect(ids).toEqual(stats.events.items.slice(0, 20).map((e) => e.id));
    await page.goto(`/conflicts?${range}`);
  }

  // Drill down into the largest group: its keys, with both hashes.
  const top = stats.groups[0];
  await groups.first().getByRole("button", { name: "Keys" }).click();
  await expect(page).toHaveURL(new RegExp(`[?&]operation=${top.operation}`));
  await expect(page.getByTestId("conflict-event")).toHaveCount(Math.min(top.conflicts, 50));
  const shown = await page.getByTestId("conflict-event").evaluateAll((rows) => rows.map((r) => [r.children[1].textContent, r.children[2].textContent]));
  expect(new Set(shown.map((s) => s.join("|")))).toEqual(new Set([`${top.operation}|${top.scope}`]));
  await expect.poll(() => numberIn(page.getByTestId("conflicts-total"))).toBe(top.conflicts);

  // A viewer has no records.export: no export link.
  await expect(page.getByTestId("export-link")).toHaveCount(0);
  expect(problems).toEqual([]);
});

interface ExpiryJson {
  expiringNext24h: number;
  expiringNext30d: number;
  next24h: { count: number }[];
  expired: { total: number; purgeable: number; groups: { operation: string; status: string; count: number; purgeable: number }[] };
}

test("engineer: expiry histogram, expired-not-purged table and purge preview equal the API", async ({ page }, testInfo) => {
  const problems = watchErrors(page);
  await signInAs(page, testInfo, "viewer"); // lands on the overview: no expiry request in flight
  // Records expire continuously, so compare with the very answer the page rendered.
  const answered = page.waitForResponse((r) => new URL(r.url()).pathname === "/api/v1/expiry" && r.status() === 200);
  await page.goto("/expiry");
  const stats = (await (await answered).json()) as ExpiryJson;
  await expect(page.getByRole("heading", { name: "Expiry & retention", level: 1 })).toBeVisible();
  await expect(page.getByTestId("expired-total")).toBeVisible();
  expect(await numberIn(page.getByTestId("expiring-24h"))).toBe(stats.expiringNext24h);
  expect(await numberIn(page.getByTestId("expiring-30d"))).toBe(stats.expiringNext30d);
  expect(await numberIn(page.getByTestId("expired-total"))).toBe(stats.expired.total);
  expect(await numberIn(page.getByTestId("purgeable-total"))).toBe(stats.expired.purgeable);
  expect(stats.expired.total, "the demo traffic leaves expired records").toBeGreaterThan(0);

  const histogram = page.getByTestId("expiry-histogram");
  if (stats.next24h.some((b) => b.count > 0)) {
    await expect(histogram.locator(".recharts-bar-rectangle").first()).toBeAttached();
  }
  await expect(page.getByTestId("expired-row")).toHaveCount(stats.expired.groups.length);
  for (const g of stats.expired.groups) {
    const row = page.locator(`[data-testid="expired-row"][data-operation="${g.operation}"][data-status="${g.status}"]`);
    expect(await numberIn(row.getByTestId("expired-count"))).toBe(g.count);
    expect(await numberIn(row.getByTestId("expired-purgeable"))).toBe(g.purgeable);
  }
  await expect(page.getByTestId("retention-preview")).toContainText("read-only");
  await page.screenshot({ path: testInfo.outputPath("expiry.png"), fullPage: true });

  // Keyboard: the 30-day histogram, kept in the URL.
  await page.getByTestId("tab-24h").focus();
  await page.keyboard.press("ArrowRight");
  await expect(page).toHaveURL(/[?&]span=30d/);
  await expect(histogram).toContainText("per day");
  expect(problems).toEqual([]);
});

test("export links appear only with records.export, carrying the screen's filters", async ({ page }, testInfo) => {
  await signInAs(page, testInfo, "viewer", "/queue");
  for (const path of ["/queue", "/duplicates", "/conflicts"]) {
    await page.goto(path);
    await expect(page.getByTestId("loading")).toHaveCount(0);
    await expect(page.getByTestId("export-link")).toHaveCount(0);
  }
  await page.context().clearCookies();

  await signInAs(page, testInfo, "support", "/queue");
  await page.goto("/queue?kind=pending&sort=age_asc");
  await expect(page.getByTestId("export-link")).toHaveAttribute("href", "/api/v1/export/queue?kind=pending&sort=age_asc");
  const hrefs = [await page.getByTestId("export-link").getAttribute("href")];
  await page.goto("/conflicts");
  await expect(page.getByTestId("export-link")).toHaveAttribute("href", /^\/api\/v1\/export\/conflicts\?from=/);
  hrefs.push(await page.getByTestId("export-link").getAttribute("href"));
  // The duplicates' first view searches every record still held: its export does too (no range)…
  await page.goto("/duplicates?window=30m");
  await expect(page.getByTestId("export-link")).toHaveAttribute("href", "/api/v1/export/duplicates?window=30m");
  hrefs.push(await page.getByTestId("export-link").getAttribute("href"));
  // …a preset range exports exactly the range shown.
  await page.goto("/duplicates?range=7d&window=30m");
  await expect(page.getByTestId("export-link")).toHaveAttribute("href", /^\/api\/v1\/export\/duplicates\?from=.*window=30m/);
  hrefs.push(await page.getByTestId("export-link").getAttribute("href"));
  // The export endpoint accepts exactly the filters the screens put in their links.
  for (const href of hrefs) {
    const res = await page.evaluate(async (u) => {
      const r = await fetch(u!);
      return { status: r.status, type: r.headers.get("content-type"), body: (await r.text()).slice(0, 300) };
    }, href);
    expect(res.status, `${href}: ${res.body}`).toBe(200);
    expect(res.type).toContain("text/csv");
  }
});
