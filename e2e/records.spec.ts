import { expect, test, type Page } from "@playwright/test";
import { signInAs } from "./support/auth";
import { serviceDatabase } from "./support/service-db";

/**
 * Record search, record detail (masked response, audited reveal), saved views and the
 * CSV export link, as the roles that use them.
 */

interface RecordRow {
  id: string;
  idempotencyKey: string;
  operation: string;
  status: string;
  scope: string;
}

/**
 * The insights' planted counter client (lib/demo/insight-cases.ts): its captures are the newest
 * of a small demo database and store only an id and a status.
 */
const COUNTER_SCOPE = "tenant:vandelay";

/** A completed capture from the demo traffic (it has a stored JSON response), via the read API. */
async function demoCapture(page: Page): Promise<RecordRow> {
  const res = await page.request.get("/api/v1/records?status=completed&limit=200");
  expect(res.status()).toBe(200);
  const { items } = (await res.json()) as { items: RecordRow[] };
  const capture = items.find((r) => r.operation === "capture_payment" && r.scope !== COUNTER_SCOPE);
  expect(capture, "the demo data has completed captures").toBeTruthy();
  return capture!;
}

test("support: searches a key prefix, opens the record, sees the masked response, reveals it with a reason, and the reveal is audited", async ({
  page,
  browser,
}, testInfo) => {
  const support = await signInAs(page, testInfo, "support", "/records");
  await expect(page.getByRole("heading", { name: "Search records" })).toBeVisible();
  const target = await demoCapture(page);
  const prefix = target.idempotencyKey.slice(0, 6);

  // Keyboard: "/" focuses the search box; Enter searches; the filters land in the URL.
  await expect(page.getByTestId("record-row").first()).toBeVisible(); // the newest records, before any search
  await page.locator("body").click({ position: { x: 5, y: 5 } });
  await page.keyboard.press("/");
  await expect(page.getByTestId("search-input")).toBeFocused();
  await page.keyboard.type(prefix);
  await page.getByTestId("search-field").selectOption("key");
  await page.getByText("Starts with").click();
  await page.getByTestId("search-input").press("Enter");
  await expect(page).toHaveURL(new RegExp(`/records\\?q=${prefix}&field=key&match=prefix$`));
  const rows = page.getByTestId("record-row");
  await expect(rows.first()).toBeVisible();
  for (const key of await page.getByTestId("record-link").allInnerTexts()) expect(key.startsWith(prefix)).toBe(true);
  const row = rows.filter({ has: page.getByRole("link", { name: target.idempotencyKey, exact: true }) });
  await expect(row.getByTestId("status-badge")).toHaveText("completed");
  await expect(row).toContainText("capture_payment");
  await expect(row).toContainText(/[€$£]|CHF|SEK|PLN/); // amount formatted with its currency
  await expect(row.locator("time")).toHaveAttribute("title", /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC$/);

  // Export (support holds records.export): the link carries the same filters; the file is CSV.
  const href = await page.getByTestId("export-csv").getAttribute("href");
  expect(href).toBe(`/api/v1/export/records?q=${prefix}&field=key&match=prefix`);
  const csv = await page.request.get(href!);
  expect(csv.status()).toBe(200);
  expect(csv.headers()["content-type"]).toContain("text/csv");
  expect(csv.headers()["content-disposition"]).toMatch(/attachment; filename="records-.*\.csv"/);
  const lines = (await csv.text()).trim().split("\r\n");
  expect(lines[0]).toMatch(/^id,created_at,/);
  expect(lines.length - 1).toBe(await rows.count());
  await page.screenshot({ path: testInfo.outputPath("record-search.png"), fullPage: true });

  // Rows are links: keyboard into the results and open it.
  await row.getByRole("link").focus();
  await page.keyboard.press("Enter");
  await expect(page).toHaveURL(new RegExp(`/records/${target.id}$`));

  const fields = page.getByTestId("record-fields");
  await expect(fields).toContainText(target.idempotencyKey);
  await expect(fields).toContainText("capture_payment");
  await expect(page.getByTestId("timeline").getByTestId("timeline-event").first()).toBeVisible();
  await expect(page.getByTestId("timeline")).toContainText("reserved");
  await expect(page.getByTestId("suspected-duplicates")).toBeVisible();

  // The stored response, masked: the demo's captures hold the customer's email, a client secret and a session
  // cookie (and some the whole card), highlighted as masked.
  const stored = page.getByTestId("stored-response");
  await expect(stored).toContainText("HTTP 201");
  await expect(stored.getByTestId("masked-body")).toContainText('"status": "captured"');
  await expect(stored.getByTestId("masked-fields")).toContainText("email");
  await expect(stored.getByTestId("masked-fields")).toContainText("header:set-cookie");
  expect(await stored.getByTestId("masked-value").count()).toBeGreaterThanOrEqual(3);
  await expect(stored.getByTestId("masked-body")).toContainText(/"receipt_email": "\w\*\*\*@/); // the first letter stays
  await expect(stored.getByTestId("masked-body")).toContainText('"client_secret": "[masked]"');
  await expect(page.getByTestId("revealed-response")).toHaveCount(0);

  // Reveal: asks for a reason, POSTs it, shows the response as stored and says it was audited.
  const reason = `e2e reveal ${testInfo.project.name} ${Date.now()}`;
  await page.getByTestId("reveal-button").click();
  await page.getByTestId("reveal-reason").fill(reason);
  const answered = page.waitForResponse((r) => r.url().endsWith(`/api/v1/records/${target.id}/reveal`) && r.request().method() === "POST");
  await page.getByTestId("reveal-submit").click();
  expect((await answered).status()).toBe(200);
  const revealed = page.getByTestId("revealed-response");
  await expect(revealed).toContainText(/recorded in the audit log \(entry #\d+\)/);
  await expect(revealed.getByTestId("revealed-body")).toContainText('"status": "captured"');
  await expect(revealed.getByTestId("revealed-body")).toContainText(/"receipt_email": "\w+\.\w+\d*@/); // the customer's email, as stored
  await expect(revealed.getByTestId("revealed-body")).toContainText(/"client_secret": "pay_\w+_secret_/);
  // The record's own audit trail shows the reveal (refetched after it).
  await expect(page.getByTestId("record-audit").getByTestId("record-audit-row").filter({ hasText: reason })).toContainText("records.reveal");
  await page.screenshot({ path: testInfo.outputPath("record-detail.png"), fullPage: true });

  // …and an admin finds it in the audit log.
  const adminContext = await browser.newContext();
  const admin = await adminContext.newPage();
  await signInAs(admin, testInfo, "admin", `/audit?action=records.reveal&targetId=${target.id}`);
  const entry = admin.getByTestId("audit-row").filter({ hasText: reason });
  await expect(entry).toHaveCount(1);
  await expect(entry).toContainText(support.email);
  await expect(entry).toContainText("done");
  await expect(entry).toContainText(`idempotency_records ${target.id}`);
  await adminContext.close();
});

test("viewer: the record detail withholds the stored response and offers no reveal; no export link", async ({ page }, testInfo) => {
  await signInAs(page, testInfo, "viewer", "/records");
  await expect(page.getByTestId("record-row").first()).toBeVisible();
  await expect(page.getByTestId("export-csv")).toHaveCount(0);
  const target = await demoCapture(page);
  await page.goto(`/records/${target.id}`);
  await expect(page.getByTestId("record-fields")).toContainText(target.idempotencyKey);
  const stored = page.getByTestId("stored-response");
  await expect(stored.getByTestId("response-withheld")).toContainText("records.read_body");
  await expect(stored.getByTestId("masked-body")).toHaveCount(0);
  await expect(page.getByTestId("reveal-button")).toHaveCount(0);
  await expect(page.getByTestId("timeline").getByTestId("timeline-event").first()).toBeVisible();
  // The API agrees: no body, and no reveal.
  const api = await (await page.request.get(`/api/v1/records/${target.id}`)).json();
  expect(api.response).toBeNull();
  expect(api.bodyAccess).toBe("none");
  const reveal = await page.request.post(`/api/v1/records/${target.id}/reveal`, {
    data: { reason: "viewer tries" },
    headers: { origin: new URL(page.url()).origin },
  });
  expect(reveal.status()).toBe(403);
});

test("viewer: saves the current filters as a view, re-applies it from another page state, deletes it; empty and error states", async ({ page }, testInfo) => {
  await signInAs(page, testInfo, "viewer", "/records?q=tenant%3Aacme&field=scope");
  await expect(page.getByTestId("search-input")).toHaveValue("tenant:acme");
  await expect(page.getByTestId("record-row").first()).toBeVisible();
  const name = `Acme ${Date.now()}`;
  await page.getByTestId("save-view").click();
  await page.getByTestId("saved-view-name").fill(name);
  await page.getByTestId("saved-view-name").press("Enter");
  const chip = page.getByTestId("saved-view").filter({ hasText: name });
  await expect(chip).toBeVisible();
  await expect(chip).toHaveAttribute("aria-current", "true");

  // Somewhere else (no filters, a second page), then apply the view.
  await page.goto("/records");
  await expect(page.getByTestId("search-input")).toHaveValue("");
  await expect(page.getByTestId("record-row")).toHaveCount(50);
  await page.getByTestId("load-more").click();
  await expect(page.getByTestId("record-row")).toHaveCount(100);
  await expect(chip).toBeVisible();
  await expect(chip).not.toHaveAttribute("aria-current", "true");
  await chip.click();
  await expect(page).toHaveURL(/\/records\?q=tenant%3Aacme&field=scope$/);
  await expect(page.getByTestId("search-input")).toHaveValue("tenant:acme");
  await expect(page.getByTestId("search-field")).toHaveValue("scope");
  await expect(page.getByTestId("record-row").first()).toBeVisible();
  for (const scope of await page.locator("[data-testid=record-row] td:nth-child(3)").allInnerTexts()) expect(scope).toBe("tenant:acme");
  await expect(chip).toHaveAttribute("aria-current", "true");

  // Views survive a reload (they are stored, not kept in the page) and are deleted from the bar.
  await page.reload();
  await page.getByRole("button", { name: `Delete saved view ${name}` }).click();
  await expect(chip).toHaveCount(0);

  // Empty and error states.
  await page.goto("/records?q=no-such-key-at-all");
  await expect(page.getByTestId("records-empty")).toContainText("No records match");
  await page.goto("/records?operation=Not%20An%20Operation");
  await expect(page.getByTestId("records-error")).toContainText("operation");
  await page.goto("/records/999999999");
  await expect(page.getByTestId("record-error")).toContainText("Record not found");
});

test("support: a planted record's sensitive fields are masked and highlighted; revealing shows them", async ({ page }, testInfo) => {
  test.skip(testInfo.project.metadata.mode === "embedded", "only a database server can be written from outside its process");
  const client = await serviceDatabase(testInfo);
  const key = `e2e-sensitive-${Date.now()}`;
  let id: string;
  try {
    id = await client.insert(
      {
        postgres: `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, response_code, response_headers, response_body,
                                        amount_minor, currency, provider, provider_reference, expires_at)
       VALUES ('tenant:e2e', 'capture_payment', $1, repeat('a', 64), 'completed', 201, $2::jsonb, $3, 4200, 'EUR', 'mockpay', 'ch_e2e', now() + interval '1 day')
       RETURNING id::text`,
        mysql: `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, response_code, response_headers, response_body,
                                        amount_minor, currency, provider, provider_reference, expires_at)
       VALUES ('tenant:e2e', 'capture_payment', ?, REPEAT('a', 64), 'completed', 201, ?, ?, 4200, 'EUR', 'mockpay', 'ch_e2e', UTC_TIMESTAMP(6) + INTERVAL 1 DAY)`,
      },
      [
        key,
        JSON.stringify([
          ["Content-Type", "application/json"],
          ["Set-Cookie", "sid=s3cr3t-session; Path=/"],
        ]),
        JSON.stringify({ id: "pay_e2e", card: { number: "4111111111111111", cvc: "737" }, customer: { email: "jane.doe@example.com" } }),
      ],
    );
  } finally {
    await client.close();
  }
  await signInAs(page, testInfo, "support", `/records/${id}`);
  const masked = page.getByTestId("masked-body");
  await expect(masked).toContainText("************1111");
  await expect(masked).toContainText("j***@example.com");
  await expect(masked).not.toContainText("4111111111111111");
  await expect(page.getByTestId("stored-response").getByTestId("masked-value")).toHaveCount(4); // card number, cvc, email, Set-Cookie
  await expect(page.getByTestId("masked-fields")).toContainText("body.card.number");
  await page.screenshot({ path: testInfo.outputPath("record-detail-masked.png"), fullPage: true });
  await page.getByTestId("reveal-button").click();
  await page.getByTestId("reveal-reason").fill("e2e: verify the planted card is revealed");
  await page.getByTestId("reveal-submit").click();
  const revealed = page.getByTestId("revealed-body");
  await expect(revealed).toContainText('"number": "4111111111111111"');
  await expect(revealed).toContainText("jane.doe@example.com");
  await expect(page.getByTestId("revealed-response")).toContainText("sid=s3cr3t-session");
});
