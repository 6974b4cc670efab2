import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { provideDatabase } from "@/lib/db/client";
import { DemoLiveTraffic } from "@/lib/demo/live";
import { generateDemoTraffic } from "@/lib/demo/traffic";
import { seedDemoProvider } from "@/lib/providers/demo-seed";
import { HttpProviderAdapter } from "@/lib/providers/http";
import { DEFAULT_RECONCILE_CONFIG } from "@/lib/reconcile/config";
import { runReconcilerOnce } from "@/lib/reconcile/worker";
import { findDuplicates } from "@/lib/records/duplicates";
import { maskResponse } from "@/lib/records/mask";
import { createTestDatabase, type TestDatabase } from "./helpers/db";
import { startProviderService, type ProviderService } from "./helpers/provider";

/**
 * The embedded demo keeps a steady supply of what the screens are for while it runs
 * (lib/demo/live.ts), and its provider answers pending checks later, so the background
 * reconciler does not drain the queue at its first tick. Real database, real provider
 * service, the real reconciler.
 */
let db: TestDatabase;
let provider: ProviderService;
const quiet = { log: () => {}, warn: () => {}, error: () => {} };

beforeAll(async () => {
  [db, provider] = await Promise.all([createTestDatabase(), startProviderService()]);
  provideDatabase(db);
  delete process.env.PROVIDERS;
  process.env.PROVIDER_URL = provider.url;
  process.env.PROVIDER_TIMEOUT_MS = "2000";
  await generateDemoTraffic(db, { seed: 12, requests: 400, days: 10 });
});
afterAll(async () => {
  await Promise.all([db?.drop(), provider?.stop()]);
});

/** The n-th placeholder: $n on PostgreSQL, ? on MySQL (bound in order). */
const ph = (n: number) => db.dialect.param(n);
/** Four minutes before now, as a bound value (the dialects spell intervals differently). */
const fourMinutesAgo = () => new Date(Date.now() - 4 * 60_000);
const count = async (where: string, values: unknown[] = []) =>
  Number((await db.sql.query<{ n: bigint }>(`SELECT count(*) AS n FROM idempotency_records WHERE ${where}`, values))[0].n);
const events = async (kind: string) =>
  Number((await db.sql.query<{ n: bigint }>(`SELECT count(*) AS n FROM idempotency_events WHERE kind = ${db.dialect.param(1)}`, [kind]))[0].n);

describe("the demo's provider answers later", () => {
  it("with answersFrom, every final outcome is held back (processing) until its time; without, answered at once (as before)", async () => {
    const pending = await db.sql.query<{ provider_request_id: string }>(`SELECT provider_request_id FROM idempotency_records WHERE status = 'pending'`);
    expect(pending.length).toBeGreaterThan(1);
    const adapter = new HttpProviderAdapter(provider.url, { timeoutMs: 2000 });
    const summary = await seedDemoProvider(db, { url: provider.url, log: () => {}, answersFrom: new Date() });
    expect(summary.requests.succeeded + summary.requests.failed).toBeGreaterThan(0);
    const state = await provider.control.state();
    for (const p of pending) {
      const req = state.requests.find((r) => r.requestId === p.provider_request_id)!;
      expect((await adapter.lookup(p.provider_request_id)).status, p.provider_request_id).toBe("unknown");
      if (req.status !== "processing") expect(Date.parse(req.answerAt!)).toBeGreaterThan(Date.now() + 60_000);
    }
    // The reconciler finds no final answer yet: nothing pending is settled.
    const before = await count(`status = 'pending'`);
    const tick = await runReconcilerOnce(db, { config: DEFAULT_RECONCILE_CONFIG, lock: false, clock: () => new Date(Date.now() + 120_000), log: quiet });
    expect(tick.items).toBeGreaterThan(0);
    expect(tick.actions.completed ?? 0).toBe(0);
    expect(tick.actions.failed ?? 0).toBe(0);
    expect(await count(`status = 'pending'`)).toBe(before);

    // Seeded again without answersFrom: the answers are there at once.
    await seedDemoProvider(db, { url: provider.url, log: () => {} });
    const answered = await Promise.all(pending.map((p) => adapter.lookup(p.provider_request_id)));
    expect(answered.some((a) => a.status === "succeeded" || a.status === "failed")).toBe(true);
  });
});

describe("live demo traffic", () => {
  it("finishes what the generator left in flight, then keeps a steady supply of in-flight, pending, stuck, conflicting and double-charged records", async () => {
    const live = new DemoLiveTraffic(db, { providerUrl: provider.url, seed: 3 });
    // The generator's requests "in flight right now" are finished at the first tick, not left to turn stuck.
    const young = await count(`status = 'processing' AND created_at > ${ph(1)}`, [fourMinutesAgo()]);
    expect(young).toBeGreaterThan(0);
    const first = await live.tick("checkout");
    expect(first.finished).toBeGreaterThanOrEqual(young);
    const [capture] = first.created.slice(-1);
    expect(await count(`id = ${ph(1)} AND status = 'processing'`, [capture])).toBe(1); // in flight…
    expect(await count(`status = 'processing' AND created_at > ${ph(1)} AND id <> ${ph(2)}`, [fourMinutesAgo(), capture])).toBe(0);

    const pendingBefore = await count(`status = 'pending'`);
    const pend = await live.tick("pending");
    expect(await count(`id = ${ph(1)} AND status = 'completed'`, [capture])).toBe(1); // …until the next tick
    expect(await count(`status = 'pending'`)).toBe(pendingBefore + 1);
    const [pendingRow] = await db.sql.query<{ provider_request_id: string }>(`SELECT provider_request_id FROM idempotency_records WHERE id = ${ph(1)}`, [
      pend.created[0],
    ]);
    const told = (await provider.control.state()).requests.find((r) => r.requestId === pendingRow.provider_request_id)!;
    expect(told).toBeTruthy();
    if (told.status !== "processing") expect(Date.parse(told.answerAt!)).toBeGreaterThan(Date.now() + 2 * 60_000);
    expect(
      Number(
        (
          await db.sql.query<{ n: bigint }>(`SELECT count(*) AS n FROM reconciliation_items WHERE record_id = ${ph(1)} AND state = 'open'`, [pend.created[0]])
        )[0].n,
      ),
    ).toBe(1);

    const stuck = await live.tick("stuck");
    await live.tick("checkout");
    await live.tick("checkout");
    expect(await count(`id = ${ph(1)} AND status = 'processing'`, [stuck.created[0]])).toBe(1); // never finished: turns stuck

    const conflicts = await events("conflict");
    await live.tick("conflict");
    expect(await events("conflict")).toBe(conflicts + 1);

    const replays = await events("replayed");
    await live.tick("replay");
    expect(await events("replayed")).toBe(replays + 1);

    const double = await live.tick("double");
    expect(double.created).toHaveLength(2);
    const dups = await findDuplicates(db.sql, {});
    const cluster = dups.clusters.find((c) => c.records.some((r) => r.id === double.created[1]));
    expect(cluster?.records.map((r) => r.id)).toEqual(double.created);
    expect(cluster?.completed).toBe(2);

    // Its stored responses carry what masking is for: an email, a card, a client secret, a session cookie.
    const [resp] = await db.sql.query<{ response_code: number; response_headers: [string, string][]; response_body: string }>(
      `SELECT response_code, response_headers, response_body FROM idempotency_records WHERE id = ${ph(1)}`,
      [double.created[1]],
    );
    const masked = maskResponse({ code: resp.response_code, headers: resp.response_headers, body: resp.response_body });
    const rules = new Set(masked.masked.map((m) => m.rule));
    expect([...rules].sort()).toEqual(["card", "email", "header:set-cookie", "key:clientsecret"]);
  });

  it("a steady mix: over many ticks every kind happens, and the queue never empties", async () => {
    const live = new DemoLiveTraffic(db, { providerUrl: provider.url, seed: 99 });
    const seen = new Set<string>();
    for (let i = 0; i < 60; i++) seen.add((await live.tick()).action);
    expect([...seen].sort()).toEqual(["checkout", "conflict", "double", "pending", "replay", "stuck"]);
    await runReconcilerOnce(db, { config: DEFAULT_RECONCILE_CONFIG, lock: false, clock: () => new Date(Date.now() + 120_000), log: quiet });
    expect(await count(`status = 'pending'`)).toBeGreaterThan(0);
  });
});
