import { expect, test } from "@playwright/test";
import { signInAs } from "./support/auth";

test("the Admin menu opens from the keyboard and leads to the API reference, built from the OpenAPI document", async ({ page, request }, testInfo) => {
  await signInAs(page, testInfo, "operator");
  const nav = page.getByRole("navigation", { name: "Main" });
  const admin = nav.locator("summary", { hasText: "Admin" });
  await admin.focus();
  await page.keyboard.press("Enter");
  const link = nav.getByRole("link", { name: "API reference" });
  await expect(link).toBeVisible();
  await page.keyboard.press("Escape");
  await expect(link).toBeHidden();
  await admin.click();
  await link.click();
  await expect(page).toHaveURL(/\/api-docs$/);
  await expect(page.getByRole("heading", { name: "API reference", level: 1 })).toBeVisible();

  const doc = await (await request.get("/api/v1/openapi.json")).json();
  expect(doc.openapi).toBe("3.1.0");
  const op = page.getByTestId("op-GET /api/v1/records/{id}");
  await expect(op).toContainText(doc.paths["/api/v1/records/{id}"].get.summary);
  await op.locator("summary").click();
  await expect(op).toContainText("records.read");
});
