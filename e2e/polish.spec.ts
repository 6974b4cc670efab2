import { expect, test, type Page } from "@playwright/test";
import { signInAs } from "./support/auth";

/**
 * The small things issue 12 asked for that no other spec looks at: the manual light/dark switch
 * (kept per browser, rendered by the server at once), a time-zone change that every time on
 * screen follows, and an empty range that says so instead of drawing an empty chart.
 */

const background = (page: Page) => page.evaluate(() => getComputedStyle(document.body).backgroundColor);

test("the theme switch: dark by hand is rendered by the server on the next load; Auto goes back to the system's", async ({ page }, testInfo) => {
  await page.emulateMedia({ colorScheme: "light" });
  await signInAs(page, testInfo, "viewer", "/");
  await expect(page.getByRole("heading", { level: 1, name: "Overview" })).toBeVisible();
  const light = await background(page);
  await page.getByTestId("theme-switch").selectOption("dark");
  await expect(page.locator("html")).toHaveAttribute("data-theme", "dark");
  expect(await background(page)).not.toBe(light);
  // The server renders the choice (a cookie), so the page never flashes light first.
  const reloaded = await page.reload();
  expect(await reloaded!.text()).toMatch(/<html[^>]*data-theme="dark"/);
  await expect(page.locator("html")).toHaveAttribute("data-theme", "dark");
  await expect(page.getByTestId("theme-switch")).toHaveValue("dark");
  await page.getByTestId("theme-switch").selectOption("auto");
  await expect(page.locator("html")).not.toHaveAttribute("data-theme", /.*/);
  expect(await background(page)).toBe(light);
  await page.reload();
  await expect(page.getByTestId("theme-switch")).toHaveValue("auto");
  expect(await background(page)).toBe(light);
});

test("a time-zone change in Settings is what every time on screen shows, with UTC on hover", async ({ page }, testInfo) => {
  await signInAs(page, testInfo, "approver", "/settings");
  const setZone = async (zone: string) => {
    await page.goto("/settings");
    await page.getByTestId("time-zone").selectOption(zone);
    await page.getByTestId("time-zone-save").click();
    await expect(page.getByTestId("settings-message")).toContainText(/Saved: times are now shown in/);
  };
  await setZone("Asia/Tokyo");
  try {
    const res = await page.request.get("/api/v1/queue?kind=pending&limit=1");
    const { items } = (await res.json()) as { items: { id: string }[] };
    await page.goto(`/records/${items[0].id}`);
    const when = page.locator("time.when:visible").first();
    await expect(when).toBeVisible();
    const iso = (await when.getAttribute("datetime"))!;
    // Tokyo is UTC+9 all year: the wall clock there, as the screen must print it.
    const tokyo = new Date(Date.parse(iso) + 9 * 3_600_000).toISOString().replace("T", " ").slice(0, 19);
    await expect(when.locator(".when-abs")).toHaveText(new RegExp(`^${tokyo.slice(0, 16)}(:${tokyo.slice(17, 19)})? UTC\\+09:00$`));
    await expect(when).toHaveAttribute("title", `${iso.replace("T", " ").slice(0, 19)} UTC`);
  } finally {
    await setZone("UTC");
  }
});

test("an empty range says so instead of drawing an empty chart", async ({ page }, testInfo) => {
  const to = new Date(Date.now() - 400 * 86_400_000);
  const from = new Date(to.getTime() - 86_400_000);
  await signInAs(page, testInfo, "viewer", "/conflicts");
  await page.goto(`/conflicts?from=${encodeURIComponent(from.toISOString())}&to=${encodeURIComponent(to.toISOString())}`);
  const chart = page.getByTestId("conflicts-trend");
  await expect(chart).toHaveAttribute("data-empty", "true");
  await expect(chart).toHaveAttribute("aria-label", /No conflicts in this range/);
  await expect(chart.locator("svg")).toHaveCount(0);
  // …and with the demo's conflicts in range, a drawn chart.
  await page.goto("/conflicts?range=30d");
  await expect(page.locator('figure[data-testid="conflicts-trend"]')).toBeVisible();
});
