import { expect, test, type Page } from "@playwright/test";
import { Redis } from "ioredis";
import { signInAs } from "./support/auth";
import { e2eRedisUrl, type E2eMode } from "./support/env";

/**
 * The Redis keys screen against the server's key store (REDIS_URL, a database of its
 * own): an operator sees the census, releases a wedged key from the wedged list and
 * looks a key up with its stored response masked; a viewer sees counts and keys but
 * no release. Keys are written here the way the seed's PHP handler writes them.
 */

let redis: Redis | null = null;

// eslint-disable-next-line no-empty-pattern -- Playwright wants the fixtures argument destructured
test.beforeAll(async ({}, testInfo) => {
  const client = new Redis(e2eRedisUrl(testInfo.project.metadata.mode as E2eMode), {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  client.on("error", () => {});
  try {
    await client.connect();
    redis = client;
  } catch {
    client.disconnect();
  }
});
test.afterAll(async () => {
  await redis?.flushdb();
  redis?.disconnect();
});

async function seed(r: Redis) {
  await r.flushdb();
  const p = r.pipeline();
  p.set("idempotency:order-1", JSON.stringify({ status: 201, body: { id: "ch_1", card: "4242 4242 4242 4242" } }), "EX", 86400);
  p.set("idempotency:order-2", JSON.stringify({ status: 402, body: { error: "card_declined" } }), "EX", 86400);
  p.set("idempotency:order-3", JSON.stringify({ status: 503, body: "upstream down" }), "EX", 86400);
  p.set("idempotency:crashed-1", "processing", "EX", 86400 - 7200);
  p.set("idempotency:crashed-2", "processing", "EX", 86400 - 3600);
  p.set("idempotency:running", "processing", "EX", 86400 - 5);
  p.hset("session:abc", { user: "1" });
  p.set("idempotency:lock:deploy", "1");
  await p.exec();
}

const numberIn = async (page: Page, testId: string) => Number((await page.getByTestId(testId).innerText()).replace(/[^\d]/g, ""));

test("operator: census counts, release a wedged key from the list, key lookup with the stored response masked", async ({ page }, testInfo) => {
  test.skip(!redis && !process.env.CI, "no Redis reachable");
  expect(redis, "Redis must be reachable in CI").not.toBeNull();
  await seed(redis!);
  await signInAs(page, testInfo, "operator", "/redis");
  await page.goto("/redis");
  await page.getByTestId("redis-refresh").click();
  await expect.poll(() => numberIn(page, "redis-wedged")).toBe(2);
  expect(await numberIn(page, "redis-processing")).toBe(3);
  expect(await numberIn(page, "redis-completed")).toBe(3);
  expect(await numberIn(page, "redis-5xx")).toBe(1);
  expect(await numberIn(page, "redis-unrecognised")).toBe(1);
  await expect(page.getByTestId("redis-flags")).toContainText("No payload fingerprint");

  const rows = page.getByTestId("redis-wedged-row");
  await expect(rows).toHaveCount(2);
  await expect(rows.first()).toHaveAttribute("data-key", "idempotency:crashed-1"); // oldest first
  await rows.first().getByTestId("redis-release").click();
  const dialog = page.getByTestId("redis-release-dialog");
  await dialog.getByTestId("redis-release-reason").fill("worker OOM-killed after SET NX");
  await dialog.getByTestId("redis-release-submit").click();
  await expect(page.getByTestId("redis-release-result")).toContainText("Released 1");
  expect(await redis!.exists("idempotency:crashed-1")).toBe(0);
  await page.getByTestId("redis-release-close").click();
  await expect.poll(() => numberIn(page, "redis-wedged")).toBe(1);

  await page.getByTestId("redis-lookup-input").fill("idempotency:order-1");
  await page.getByTestId("redis-lookup-submit").click();
  const body = page.getByTestId("redis-lookup-body");
  await expect(body).toContainText("4242");
  await expect(body).not.toContainText("4242 4242 4242 4242");
});

test("viewer: counts and wedged keys, no release", async ({ page }, testInfo) => {
  test.skip(!redis && !process.env.CI, "no Redis reachable");
  await seed(redis!);
  await signInAs(page, testInfo, "viewer", "/redis");
  await page.goto("/redis");
  await page.getByTestId("redis-refresh").click();
  await expect.poll(() => numberIn(page, "redis-wedged")).toBe(2);
  await expect(page.getByTestId("redis-wedged-row")).toHaveCount(2);
  await expect(page.getByTestId("redis-release")).toHaveCount(0);
  await expect(page.getByTestId("redis-release-all")).toHaveCount(0);
  await page.goto("/");
  await expect(page.getByTestId("redis-tile")).toContainText("wedged");
});
