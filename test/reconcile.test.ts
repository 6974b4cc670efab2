import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import path from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { provideDatabase, openDatabase, type Database } from "@/lib/db/client";
import { IdempotencyStore } from "@/lib/idempotency";
import { DEFAULT_RECONCILE_CONFIG, backoffSeconds, reconcileConfigFromEnv, type ReconcileConfig } from "@/lib/reconcile/config";
import { claimDueItems, type ClaimedItem } from "@/lib/reconcile/core";
import { byDialect } from "@/lib/db/dialect";
import { sessionLock, sessionUnlock } from "@/lib/db/locks";
import { createReconciler, runReconcilerOnce, startReconciler } from "@/lib/reconcile/worker";
import { createTestDatabase, usingDatabaseServer, usingPostgres, type TestDatabase } from "./helpers/db";
import { auditOf, itemsOf, pendingRecord, reconciledEvents, recordRow, stuckRecord } from "./helpers/pending-records";
import { startProviderService, type ProviderService } from "./helpers/provider";
import { call, json, tokenFor } from "./helpers/records-api";

/**
 * Reconciliation against the real provider service (a child process): what each
 * provider answer does to the record and its item, backoff and needs_manual, the
 * guards against a writer or an operator who got there first, the background
 * reconciler (one claim per item across instances and processes), the bulk check
 * with its typed confirmation, permissions and bad input. Every database mode; the races
 * between handles and processes on the database servers (PostgreSQL, MySQL).
 */

/** A second handle on the test database (its own pool), as another server process has. */
const secondHandle = (poolSize: number) => openDatabase({ mode: usingPostgres ? "postgres" : "mysql", url: db.url! }, { poolSize });

let db: TestDatabase;
let provider: ProviderService;
let operator: { token: string; email: string };
const ROOT = path.resolve(import.meta.dirname, "..");

beforeAll(async () => {
  [db, provider] = await Promise.all([createTestDatabase(), startProviderService()]);
  provideDatabase(db);
  delete process.env.PROVIDERS;
  process.env.PROVIDER_URL = provider.url;
  process.env.PROVIDER_TIMEOUT_MS = "400";
  operator = await tokenFor(db, ["operator"]);
});
afterAll(async () => {
  await Promise.all([db?.drop(), provider?.stop()]);
});
afterEach(async () => {
  await provider.control.clearFaults();
});

const config = (over: Partial<ReconcileConfig> = {}): ReconcileConfig => ({ ...DEFAULT_RECONCILE_CONFIG, ...over });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const recordRoute = () => import("@/app/api/v1/records/[id]/reconcile/route");
const bulkRoute = () => import("@/app/api/v1/reconcile/route");

async function check(id: bigint, token = operator.token, body: unknown = { reason: "customer asks where the payment is" }, key: string | null = randomUUID()) {
  const r = await recordRoute();
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (key) headers["idempotency-key"] = key;
  return call(r.POST, `/api/v1/records/${id}/reconcile`, token, { method: "POST", headers, body: JSON.stringify(body) }, { id: String(id) });
}

async function bulk(body: unknown, token = operator.token, key: string = randomUUID()) {
  const r = await bulkRoute();
  return call(r.POST, `/api/v1/reconcile`, token, {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": key },
    body: JSON.stringify(body),
  });
}

const near = (d: Date | null, expectedMs: number, slackMs = 15_000) => {
  expect(d).toBeInstanceOf(Date);
  expect(Math.abs(d!.getTime() - expectedMs)).toBeLessThan(slackMs);
};

/** Parks every open item of earlier tests so the reconciler only sees this test's items. */
async function parkOtherItems() {
  await db.sql.query(`UPDATE reconciliation_items SET state = 'needs_manual', next_check_at = NULL WHERE state IN ('open', 'checking')`);
}

describe("an operator's check (POST /api/v1/records/{id}/reconcile)", () => {
  it("succeeded: the record becomes completed with the provider's reference and a stored response; item resolved; event and audit", async () => {
    const rec = await pendingRecord(db);
    await provider.control.seedRequests([
      { requestId: rec.requestId, status: "succeeded", amountMinor: 1250, currency: "EUR", reference: `ch_${rec.requestId}` },
    ]);
    const res = await check(rec.id);
    expect(res.status).toBe(200);
    const out = await json(res);
    expect(out).toMatchObject({
      answer: "succeeded",
      action: "completed",
      providerReference: `ch_${rec.requestId}`,
      record: { status: "completed", version: rec.version + 1 },
    });
    expect(out.item).toMatchObject({ state: "resolved_succeeded", attempts: 1, nextCheckAt: null });

    const row = await recordRow(db, rec.id);
    expect(row).toMatchObject({ status: "completed", provider_reference: `ch_${rec.requestId}`, response_code: 200, version: rec.version + 1 });
    expect(JSON.parse(row.response_body!)).toMatchObject({
      status: "completed",
      providerReference: `ch_${rec.requestId}`,
      amountMinor: "1250",
      currency: "EUR",
    });
    const [item] = await itemsOf(db, rec.id);
    expect(item).toMatchObject({ state: "resolved_succeeded", attempts: 1, resolved_by: expect.stringContaining(operator.email) });
    expect(item.resolution).toMatchObject({ by: "reconciliation", answer: "succeeded", providerReference: `ch_${rec.requestId}`, recordUpdated: true });
    expect((await reconciledEvents(db, rec.id)).map((e) => e.detail)).toEqual([expect.objectContaining({ by: "reconciliation", outcome: "completed" })]);
    const audit = await auditOf(db, rec.id, "records.reconcile");
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ outcome: "done", reason: "customer asks where the payment is", actor_type: "token" });
    expect(audit[0].detail).toMatchObject({ answer: "succeeded", action: "completed" });
  });

  it("failed: the record becomes failed with the provider's reason in its stored error response", async () => {
    const rec = await pendingRecord(db);
    await provider.control.seedRequests([{ requestId: rec.requestId, status: "failed", reason: "insufficient_funds" }]);
    const out = await json(await check(rec.id));
    expect(out).toMatchObject({ answer: "failed", action: "failed", record: { status: "failed" } });
    const row = await recordRow(db, rec.id);
    expect(row.status).toBe("failed");
    expect(row.response_code).toBe(422);
    expect(JSON.parse(row.response_body!)).toMatchObject({ detail: "insufficient_funds" });
    expect(row.last_error).toContain("insufficient_funds");
    expect((await itemsOf(db, rec.id))[0]).toMatchObject({ state: "resolved_failed", attempts: 1 });
  });

  it("unknown: the record stays pending; the item goes back to open with attempts + 1 and an exponential backoff", async () => {
    const rec = await pendingRecord(db);
    await provider.control.seedRequests([{ requestId: rec.requestId, status: "unknown" }]);
    const t1 = Date.now();
    const first = await json(await check(rec.id));
    expect(first).toMatchObject({ answer: "unknown", action: "rescheduled", record: { status: "pending", version: rec.version } });
    let [item] = await itemsOf(db, rec.id);
    expect(item).toMatchObject({ state: "open", attempts: 1 });
    expect(item.last_error).toMatch(/still processing/);
    near(item.next_check_at, t1 + backoffSeconds(1, DEFAULT_RECONCILE_CONFIG) * 1000);
    near(item.last_checked_at, t1);

    const t2 = Date.now();
    await check(rec.id);
    [item] = await itemsOf(db, rec.id);
    expect(item).toMatchObject({ state: "open", attempts: 2 });
    near(item.next_check_at, t2 + 120_000);
    expect(await recordRow(db, rec.id)).toMatchObject({ status: "pending", version: rec.version });
    expect(await reconciledEvents(db, rec.id)).toHaveLength(0);
    // An operator's check is audited whatever it found.
    expect((await auditOf(db, rec.id, "records.reconcile")).map((a) => a.detail?.action)).toEqual(["rescheduled", "rescheduled"]);

    // A request the provider never heard of is unknown too.
    const ghost = await pendingRecord(db);
    expect(await json(await check(ghost.id))).toMatchObject({ answer: "unknown", action: "rescheduled" });
    expect((await itemsOf(db, ghost.id))[0].last_error).toMatch(/does not know request/);
  });

  it("a provider timeout or 503 is 'unavailable', never 'failed': the record stays pending and the next check is scheduled", async () => {
    const rec = await pendingRecord(db);
    await provider.control.seedRequests([{ requestId: rec.requestId, status: "succeeded" }]);
    await provider.control.fault({ route: "lookup", mode: "timeout", ms: 1500, times: 1 });
    const t0 = Date.now();
    const res = await check(rec.id);
    expect(res.status).toBe(200);
    expect(await json(res)).toMatchObject({ answer: "unavailable", action: "rescheduled", record: { status: "pending" } });
    let [item] = await itemsOf(db, rec.id);
    expect(item).toMatchObject({ state: "open", attempts: 1 });
    expect(item.last_error).toMatch(/timeout/);
    near(item.next_check_at, t0 + 60_000);

    await provider.control.fault({ route: "lookup", mode: "fail", times: 1 });
    expect(await json(await check(rec.id))).toMatchObject({ answer: "unavailable", action: "rescheduled" });
    [item] = await itemsOf(db, rec.id);
    expect(item).toMatchObject({ state: "open", attempts: 2 });
    expect(item.last_error).toMatch(/503|server_error/);
    expect((await recordRow(db, rec.id)).status).toBe("pending");

    // The provider is back: the next check resolves it.
    expect(await json(await check(rec.id))).toMatchObject({ answer: "succeeded", action: "completed" });
    expect((await itemsOf(db, rec.id))[0]).toMatchObject({ state: "resolved_succeeded", attempts: 3 });
  });

  it("nothing to check is a 409 (completed record without open item); a missing record a 404", async () => {
    const store = new IdempotencyStore(db.prisma);
    const begun = await store.begin({ scope: "tenant:acme", operation: "capture_payment", key: `k-${randomUUID()}`, payload: {} });
    await store.complete(begun.record.id, { code: 201, body: "{}" });
    const res = await check(begun.record.id);
    expect(res.status).toBe(409);
    expect((await json(res)).detail).toMatch(/Nothing to reconcile/);
    expect((await check(987654321n)).status).toBe(404);
    // A stuck record that names no provider request: nothing to ask, resolve by hand.
    const stuck = await stuckRecord(db);
    const r2 = await check(stuck.id);
    expect(r2.status).toBe(409);
    expect((await json(r2)).detail).toMatch(/resolve it by hand/);
  });

  it("a stuck processing record that names its provider request gets an item and is checked", async () => {
    const stuck = await stuckRecord(db, { requestId: `req_${randomUUID()}` });
    await provider.control.seedRequests([{ requestId: stuck.requestId, status: "succeeded" }]);
    expect(await json(await check(stuck.id))).toMatchObject({ answer: "succeeded", action: "completed", record: { status: "completed" } });
    expect(await itemsOf(db, stuck.id)).toEqual([expect.objectContaining({ state: "resolved_succeeded", attempts: 1 })]);
  });

  it("an operator resolving by hand while the check waits on the provider wins; the check writes nothing", async () => {
    const rec = await pendingRecord(db);
    await provider.control.seedRequests([{ requestId: rec.requestId, status: "failed", reason: "do_not_honor" }]);
    await provider.control.fault({ route: "lookup", mode: "latency", ms: 300, times: 1 });
    const checking = check(rec.id);
    await sleep(150); // the item is claimed, the lookup in flight
    const resolveRoute = await import("@/app/api/v1/records/[id]/resolve/route");
    const resolved = await call(
      resolveRoute.POST,
      `/api/v1/records/${rec.id}/resolve`,
      operator.token,
      {
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": randomUUID() },
        body: JSON.stringify({ outcome: "completed", providerReference: "ch_by_hand", reason: "bank confirmed it", expectedVersion: rec.version }),
      },
      { id: String(rec.id) },
    );
    expect(resolved.status).toBe(200);
    const out = await json(await checking);
    expect(out).toMatchObject({ answer: "failed", action: "superseded", record: { status: "completed" } });
    expect(await recordRow(db, rec.id)).toMatchObject({ status: "completed", provider_reference: "ch_by_hand", version: rec.version + 1 });
    const items = await itemsOf(db, rec.id);
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({ state: "resolved_succeeded", resolution: expect.objectContaining({ by: "hand" }) });
    expect(await reconciledEvents(db, rec.id)).toHaveLength(1);
  });

  it("a record decided first: the provider agreeing closes the item (confirmed); disagreeing sends it to needs_manual", async () => {
    const store = new IdempotencyStore(db.prisma);
    const mk = async () => {
      const requestId = `req_${randomUUID()}`;
      const begun = await store.begin({
        scope: "tenant:acme",
        operation: "capture_payment",
        key: `k-${randomUUID()}`,
        payload: {},
        provider: "mockpay",
        providerRequestId: requestId,
      });
      await db.sql.query(
        byDialect(db, {
          postgres: `INSERT INTO reconciliation_items (record_id, provider, provider_request_id, state, next_check_at) VALUES ($1, 'mockpay', $2, 'open', now())`,
          mysql: `INSERT INTO reconciliation_items (record_id, provider, provider_request_id, state, next_check_at) VALUES (?, 'mockpay', ?, 'open', UTC_TIMESTAMP(6))`,
        }),
        [begun.record.id, requestId],
      );
      await store.complete(begun.record.id, { code: 201, body: '{"ok":true}', providerReference: `ch_${requestId}` });
      return { id: begun.record.id, requestId };
    };
    const agrees = await mk();
    const disagrees = await mk();
    await provider.control.seedRequests([
      { requestId: agrees.requestId, status: "succeeded" },
      { requestId: disagrees.requestId, status: "failed", reason: "expired_card" },
    ]);
    expect(await json(await check(agrees.id))).toMatchObject({ action: "confirmed", record: { status: "completed" } });
    expect((await itemsOf(db, agrees.id))[0]).toMatchObject({ state: "resolved_succeeded", resolution: expect.objectContaining({ recordUpdated: false }) });
    expect(await json(await check(disagrees.id))).toMatchObject({ action: "needs_manual", record: { status: "completed" } });
    const [item] = await itemsOf(db, disagrees.id);
    expect(item.state).toBe("needs_manual");
    expect(item.last_error).toMatch(/provider says failed but the record is completed/);
    for (const id of [agrees.id, disagrees.id]) {
      expect(await recordRow(db, id)).toMatchObject({ status: "completed", response_code: 201 });
      expect(await reconciledEvents(db, id)).toHaveLength(0);
    }
  });

  it("permissions: viewer and support get 403; bad input is a 400; nothing changes", async () => {
    const rec = await pendingRecord(db);
    for (const role of ["viewer", "support", "approver"] as const) {
      const t = await tokenFor(db, [role]);
      expect((await check(rec.id, t.token)).status, role).toBe(403);
      expect((await bulk({ recordIds: [String(rec.id)], confirm: "check 1 record", reason: "not allowed" }, t.token)).status, role).toBe(403);
    }
    expect((await check(rec.id, operator.token, {})).status).toBe(400);
    expect((await check(rec.id, operator.token, { reason: "ok reason", extra: 1 })).status).toBe(400);
    expect((await check(rec.id, operator.token, { reason: "no key" }, null)).status).toBe(400);
    expect((await itemsOf(db, rec.id))[0]).toMatchObject({ state: "open", attempts: 0 });
    expect(await recordRow(db, rec.id)).toMatchObject({ status: "pending", version: rec.version });
  });
});

describe("the background reconciler", () => {
  beforeEach(parkOtherItems);

  it("works due items only, as the system actor 'reconciler'; resolutions are audited, reschedules are not", async () => {
    const ok = await pendingRecord(db);
    const no = await pendingRecord(db);
    const later = await pendingRecord(db);
    const notDue = await pendingRecord(db, { firstCheckInSeconds: 3600 });
    await provider.control.seedRequests([
      { requestId: ok.requestId, status: "succeeded" },
      { requestId: no.requestId, status: "failed", reason: "stolen_card" },
      { requestId: later.requestId, status: "unknown" },
      { requestId: notDue.requestId, status: "succeeded" },
    ]);
    const s = await runReconcilerOnce(db, { config: config() });
    expect(s).toMatchObject({ status: "worked", items: 3, errors: 0, actions: { completed: 1, failed: 1, rescheduled: 1 } });
    expect((await recordRow(db, ok.id)).status).toBe("completed");
    expect((await recordRow(db, no.id)).status).toBe("failed");
    expect((await recordRow(db, later.id)).status).toBe("pending");
    expect((await recordRow(db, notDue.id)).status).toBe("pending");
    expect((await itemsOf(db, notDue.id))[0]).toMatchObject({ state: "open", attempts: 0 });
    const [audit] = await auditOf(db, ok.id, "records.reconcile");
    expect(audit).toMatchObject({ actor_type: "system", actor_label: "reconciler", outcome: "done", reason: "background reconciliation" });
    expect((await itemsOf(db, ok.id))[0].resolved_by).toBe("reconciler");
    expect((await reconciledEvents(db, ok.id))[0].detail).toMatchObject({ by: "reconciliation", actor: "reconciler" });
    expect(await auditOf(db, later.id, "records.reconcile")).toHaveLength(0);
    // Nothing is due any more.
    expect(await runReconcilerOnce(db, { config: config() })).toMatchObject({ status: "idle", items: 0 });
  });

  it("unknown again and again: backoff doubles up to the cap; after max attempts the item needs a decision by hand", async () => {
    const rec = await pendingRecord(db);
    await provider.control.seedRequests([{ requestId: rec.requestId, status: "unknown" }]);
    const cfg = config({ maxAttempts: 4, backoffBaseSeconds: 60, backoffCapSeconds: 150 });
    let offset = 0;
    const clock = () => new Date(Date.now() + offset);
    const expectedDelays = [60, 120, 150];
    for (let attempt = 1; attempt <= 4; attempt++) {
      const s = await runReconcilerOnce(db, { config: cfg, clock });
      expect(s.items, `attempt ${attempt}`).toBe(1);
      const [item] = await itemsOf(db, rec.id);
      expect(item.attempts).toBe(attempt);
      if (attempt < 4) {
        expect(item.state).toBe("open");
        near(item.next_check_at, Date.now() + offset + expectedDelays[attempt - 1] * 1000, 5000);
        // Not due yet at the same time…
        expect((await runReconcilerOnce(db, { config: cfg, clock })).items).toBe(0);
        offset += expectedDelays[attempt - 1] * 1000 + 1000; // …but after the delay.
      } else {
        expect(item).toMatchObject({ state: "needs_manual", next_check_at: null });
        expect(s.actions).toEqual({ needs_manual: 1 });
      }
    }
    offset += 365 * 86400_000;
    expect((await runReconcilerOnce(db, { config: cfg, clock })).items).toBe(0);
    const audit = await auditOf(db, rec.id, "records.reconcile");
    expect(audit.map((a) => a.detail?.action)).toEqual(["needs_manual"]);
    expect((await recordRow(db, rec.id)).status).toBe("pending");
    // An operator may still check a needs_manual item.
    await provider.control.seedRequests([{ requestId: rec.requestId, status: "succeeded" }]);
    expect(await json(await check(rec.id))).toMatchObject({ action: "completed" });
  });

  it("a checker that died mid-check: its item is claimed again once the lease ran out, never before", async () => {
    const rec = await pendingRecord(db);
    await provider.control.seedRequests([{ requestId: rec.requestId, status: "succeeded" }]);
    const cfg = config({ leaseSeconds: 60 });
    const [claimed] = await claimDueItems(db, 10, new Date(), cfg); // …and this "process" dies here
    expect(claimed.recordId).toBe(rec.id);
    expect((await itemsOf(db, rec.id))[0].state).toBe("checking");
    expect((await runReconcilerOnce(db, { config: cfg })).items).toBe(0);
    const s = await runReconcilerOnce(db, { config: cfg, clock: () => new Date(Date.now() + 61_000) });
    expect(s).toMatchObject({ items: 1, actions: { completed: 1 } });
    expect((await itemsOf(db, rec.id))[0]).toMatchObject({ state: "resolved_succeeded", attempts: 1 });
  });

  it("two reconciler instances at once never check the same item: each item is looked up exactly once", async () => {
    const n = 24;
    const recs = await Promise.all(Array.from({ length: n }, () => pendingRecord(db)));
    await provider.control.seedRequests(recs.map((r) => ({ requestId: r.requestId, status: "succeeded" as const })));
    await provider.control.fault({ route: "lookup", mode: "latency", ms: 150 });
    const second: Database = usingDatabaseServer ? await secondHandle(10) : db;
    const lookups = new Map<bigint, number>();
    const onLookup = (item: ClaimedItem) => lookups.set(item.id, (lookups.get(item.id) ?? 0) + 1);
    try {
      const cfg = config({ batchSize: 4, concurrency: 2 });
      // The advisory lock is off: this exercises the per-item claim (the second line of defence).
      const [a, b] = await Promise.all([
        runReconcilerOnce(db, { config: cfg, lock: false, onLookup }),
        runReconcilerOnce(second, { config: cfg, lock: false, onLookup }),
      ]);
      expect(a.items + b.items).toBe(n);
      if (usingDatabaseServer) {
        expect(a.items).toBeGreaterThan(0);
        expect(b.items).toBeGreaterThan(0);
      }
    } finally {
      if (second !== db) await second.close();
    }
    expect(lookups.size).toBe(n);
    expect([...lookups.values()].every((c) => c === 1)).toBe(true);
    for (const r of recs) {
      expect((await recordRow(db, r.id)).status).toBe("completed");
      expect(await reconciledEvents(db, r.id)).toHaveLength(1);
      expect((await itemsOf(db, r.id))[0]).toMatchObject({ state: "resolved_succeeded", attempts: 1 });
    }
  });

  it("claims racing each other (two handles, many at once) never hand out the same item twice", async () => {
    const n = 60;
    await Promise.all(Array.from({ length: n }, () => pendingRecord(db)));
    const second: Database = usingDatabaseServer ? await secondHandle(20) : db;
    try {
      const now = new Date();
      const claims = await Promise.all(Array.from({ length: 30 }, (_, i) => claimDueItems(i % 2 ? db : second, 3, now, config())));
      const ids = claims.flat().map((c) => c.id);
      expect(ids).toHaveLength(n);
      expect(new Set(ids).size).toBe(n);
    } finally {
      if (second !== db) await second.close();
    }
    await parkOtherItems();
  });

  it.runIf(usingDatabaseServer)("database server: only one instance ticks at a time (the reconciler's lock held → the other skips)", async () => {
    const rec = await pendingRecord(db);
    await provider.control.seedRequests([{ requestId: rec.requestId, status: "succeeded" }]);
    const other = await secondHandle(2);
    try {
      await other.withSession(async (s) => {
        await sessionLock(s, "reconciler");
        expect(await runReconcilerOnce(db, { config: config() })).toMatchObject({ status: "locked", items: 0 });
        await sessionUnlock(s, "reconciler");
      });
    } finally {
      await other.close();
    }
    expect(await runReconcilerOnce(db, { config: config() })).toMatchObject({ status: "worked", items: 1 });
  });

  it.runIf(usingDatabaseServer)("database server: two `npm run reconciler -- --once` processes at once: every item checked exactly once", async () => {
    const n = 12;
    const recs = await Promise.all(Array.from({ length: n }, () => pendingRecord(db)));
    await provider.control.seedRequests(recs.map((r, i) => ({ requestId: r.requestId, status: i % 3 ? ("succeeded" as const) : ("failed" as const) })));
    await provider.control.fault({ route: "lookup", mode: "latency", ms: 200 });
    const run = () =>
      new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
        const child = spawn(path.join(ROOT, "node_modules", ".bin", "tsx"), ["scripts/reconciler.ts", "--once"], {
          cwd: ROOT,
          env: {
            ...process.env,
            DATABASE_URL: db.url!,
            PROVIDER_URL: provider.url,
            PROVIDER_TIMEOUT_MS: "3000",
            RECONCILER_BATCH_SIZE: "3",
            RECONCILE_CONCURRENCY: "2",
          },
          stdio: ["ignore", "pipe", "pipe"],
        });
        let out = "";
        let err = "";
        child.stdout.on("data", (c) => (out += c));
        child.stderr.on("data", (c) => (err += c));
        child.on("exit", (code) => resolve({ code, out, err }));
      });
    const results = await Promise.all([run(), run()]);
    const ticks = results.map((r) => {
      expect(r.code, r.err).toBe(0);
      return JSON.parse(r.out.trim().split("\n").pop()!) as { status: string; items: number };
    });
    expect(ticks.reduce((s, t) => s + t.items, 0)).toBe(n);
    for (const [i, r] of recs.entries()) {
      expect((await recordRow(db, r.id)).status).toBe(i % 3 ? "completed" : "failed");
      expect(await reconciledEvents(db, r.id)).toHaveLength(1);
      expect((await itemsOf(db, r.id))[0].attempts).toBe(1);
      expect(await auditOf(db, r.id, "records.reconcile")).toHaveLength(1);
    }
  });
});

describe("configuration and robustness", () => {
  it("settings come from the environment; malformed ones are reported and the default used", () => {
    const warnings: string[] = [];
    const c = reconcileConfigFromEnv(
      {
        RECONCILE_BACKOFF_SECONDS: "2m",
        RECONCILE_BACKOFF_CAP: "1h",
        RECONCILE_MAX_ATTEMPTS: "five",
        RECONCILER_INTERVAL_SECONDS: "0",
        RECONCILE_LEASE_SECONDS: "1",
      },
      { warn: (m: string) => warnings.push(m) },
    );
    expect(c).toMatchObject({ backoffBaseSeconds: 120, backoffCapSeconds: 3600, maxAttempts: 8, intervalSeconds: 0, leaseSeconds: 120 });
    expect(warnings.join("\n")).toMatch(/RECONCILE_MAX_ATTEMPTS="five"[\s\S]*RECONCILE_LEASE_SECONDS="1"/);
    expect([1, 2, 3, 7, 8, 30].map((n) => backoffSeconds(n, DEFAULT_RECONCILE_CONFIG))).toEqual([60, 120, 240, 3840, 7680, 21600]);
  });

  it("a failing tick (database unreachable) is logged, never thrown; the next tick works again", async () => {
    const logs: string[] = [];
    const log = { log: (m: string) => logs.push(m), warn: (m: string) => logs.push(m), error: (m: string) => logs.push(m) };
    let down = true;
    const r = createReconciler(
      async () => {
        if (down) throw new Error("connect ECONNREFUSED 127.0.0.1:5432");
        return db;
      },
      { intervalSeconds: 0, config: config(), log },
    );
    expect(await r.runOnce()).toMatchObject({ status: "failed" });
    expect(logs.join("\n")).toMatch(/reconciler: tick failed .*ECONNREFUSED/);
    down = false;
    await parkOtherItems();
    expect((await r.runOnce()).status).toBe("idle");
    expect(logs.join("\n")).toMatch(/works again/);
    await r.stop();
    expect(startReconciler(async () => db, { intervalSeconds: 0, log })).toBeNull();
  });
});

describe("bulk check (POST /api/v1/reconcile)", () => {
  beforeEach(parkOtherItems);

  it("needs the exact confirmation text: a missing or wrong one is a 400 naming it and the count, and nothing is checked", async () => {
    const recs = await Promise.all([pendingRecord(db), pendingRecord(db), pendingRecord(db)]);
    await provider.control.seedRequests(recs.map((r) => ({ requestId: r.requestId, status: "succeeded" as const })));
    const ids = recs.map((r) => String(r.id));
    for (const confirm of [undefined, "check 2 records", "CHECK 3 RECORDS", "yes"]) {
      const res = await bulk({ recordIds: ids, reason: "provider incident is over", ...(confirm === undefined ? {} : { confirm }) });
      expect(res.status, String(confirm)).toBe(400);
      const p = await json(res);
      expect(p).toMatchObject({ expectedConfirmation: "check 3 records", count: 3 });
      expect(p.detail).toContain('"check 3 records"');
    }
    for (const r of recs) expect((await itemsOf(db, r.id))[0]).toMatchObject({ state: "open", attempts: 0 });

    const res = await bulk({ recordIds: [...ids, ids[0]], confirm: "check 3 records", reason: "provider incident is over" });
    expect(res.status).toBe(200);
    const out = await json(res);
    expect(out).toMatchObject({ count: 3, dryRun: false, summary: { completed: 3 } });
    expect(out.outcomes.map((o: { recordId: string; ok: boolean; outcome: { action: string } }) => [o.recordId, o.ok, o.outcome.action])).toEqual(
      ids.map((id) => [id, true, "completed"]),
    );
    for (const r of recs) expect((await recordRow(db, r.id)).status).toBe("completed");
  });

  it("per-record refusals are outcomes, not the call's failure", async () => {
    const rec = await pendingRecord(db);
    await provider.control.seedRequests([{ requestId: rec.requestId, status: "unknown" }]);
    const res = await bulk({ recordIds: [String(rec.id), "987654321"], confirm: "check 2 records", reason: "sweep" });
    expect(res.status).toBe(200);
    const out = await json(res);
    expect(out.outcomes[0]).toMatchObject({ ok: true, outcome: { action: "rescheduled" } });
    expect(out.outcomes[1]).toMatchObject({ ok: false, error: { status: 404 } });
    expect(out.summary).toEqual({ rescheduled: 1, refused: 1 });
  });

  it("a row that cannot be checked says why (nothing to ask the provider: no request id), not that the record changed", async () => {
    const rec = await pendingRecord(db);
    await provider.control.seedRequests([{ requestId: rec.requestId, status: "unknown" }]);
    const stuck = await stuckRecord(db);
    const byId = `SELECT version, updated_at FROM idempotency_records WHERE id = ${db.dialect.param(1)}`;
    const [before] = await db.sql.query<{ version: number; updated_at: Date }>(byId, [stuck.id]);
    const res = await bulk({ recordIds: [String(rec.id), String(stuck.id)], confirm: "check 2 records", reason: "sweep" });
    const out = await json(res);
    expect(out.outcomes[1]).toMatchObject({
      ok: false,
      error: { status: 409, title: "Nothing to ask the provider", cause: "no_provider_request", detail: expect.stringMatching(/names no provider request id/) },
    });
    expect(out.summary).toEqual({ rescheduled: 1, nothing_to_check: 1 });
    // Nothing changed on it.
    expect(await db.sql.query(byId, [stuck.id])).toEqual([before]);
    // The single-record check answers the same problem type.
    const one = await check(stuck.id);
    expect(await json(one)).toMatchObject({ status: 409, title: "Nothing to ask the provider", cause: "no_provider_request" });
  });

  it("by filter: a dry run tells the count and the text; the check takes the oldest first, at most 100", async () => {
    const scope = `tenant:bulk-${randomUUID().slice(0, 8)}`;
    const recs = await Promise.all(Array.from({ length: 5 }, () => pendingRecord(db, { scope })));
    await pendingRecord(db, { scope: "tenant:other" });
    await provider.control.seedRequests(recs.map((r) => ({ requestId: r.requestId, status: "failed" as const, reason: "declined" })));
    const dry = await json(await bulk({ filter: { scope }, dryRun: true, reason: "how many" }));
    expect(dry).toMatchObject({ dryRun: true, count: 5, total: 5, remaining: 0, confirmation: "check 5 records", outcomes: [] });
    expect([...dry.recordIds].sort()).toEqual(recs.map((r) => String(r.id)).sort());
    for (const r of recs) expect((await itemsOf(db, r.id))[0].attempts).toBe(0);
    const res = await bulk({ filter: { scope, operation: "capture_payment" }, confirm: dry.confirmation, reason: "provider says declined" });
    expect(res.status).toBe(200);
    expect((await json(res)).summary).toEqual({ failed: 5 });
    // Nothing left for the filter.
    const none = await bulk({ filter: { scope }, confirm: "check 0 records", reason: "again" });
    expect(none.status).toBe(409);
  });

  it("bad input: both or neither of recordIds and filter, more than 100 ids, malformed ids → 400", async () => {
    const many = Array.from({ length: 101 }, (_, i) => String(i + 1));
    const cases: unknown[] = [
      { reason: "neither" },
      { recordIds: ["1"], filter: {}, reason: "both" },
      { recordIds: many, confirm: "check 101 records", reason: "too many" },
      { recordIds: [], reason: "none" },
      { recordIds: ["abc"], reason: "bad id" },
      { recordIds: ["1"], confirm: "check 1 record" },
      { filter: { status: "pending" }, reason: "unknown filter" },
    ];
    for (const body of cases) expect((await bulk(body)).status, JSON.stringify(body).slice(0, 80)).toBe(400);
  });
});
