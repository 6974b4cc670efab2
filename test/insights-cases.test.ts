import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { POST as APPROVE } from "@/app/api/v1/compensations/[id]/approve/route";
import { POST as REQUEST_COMPENSATION } from "@/app/api/v1/compensations/route";
import { GET as KEY_QUALITY } from "@/app/api/v1/insights/key-quality/route";
import { GET as RETENTION } from "@/app/api/v1/insights/retention/route";
import { PUT as PREFERENCES } from "@/app/api/v1/me/preferences/route";
import { POST as RECONCILE } from "@/app/api/v1/records/[id]/reconcile/route";
import { POST as RESOLVE } from "@/app/api/v1/records/[id]/resolve/route";
import { GET as STORY } from "@/app/api/v1/records/[id]/story/route";
import { provideDatabase } from "@/lib/db/client";
import { IdempotencyStore, type BeginInput } from "@/lib/idempotency";
import { refreshRollups } from "@/lib/stats/rollups";
import { useTestAuthEnv } from "./helpers/auth-fixtures";
import { createTestDatabase, type TestDatabase } from "./helpers/db";
import { startProviderService, type ProviderService } from "./helpers/provider";
import { call, json, tokenFor } from "./helpers/records-api";

/**
 * The insights (issue 17) on small planted cases the demo traffic does not hold, each on its
 * own throwaway database, planted through the writers' protocol library (IdempotencyStore with
 * a clock) and read through the API route handlers:
 * - the story of a payment that timed out at the provider, was checked with the provider (no
 *   final answer), was resolved by hand by an operator, then partly refunded — every step done
 *   through the console's own routes against the real provider service, told in the reader's
 *   time zone;
 * - key quality: a client reusing its keys across two operations, a client building keys from
 *   the clock (a timestamp, not a counter), and a client with random keys (nothing to say);
 * - the retention advisor: an operation whose keys are kept thousands of times longer than any
 *   retry is flagged, one whose expiry is tight is not.
 */

useTestAuthEnv();

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Now, on a whole second (times are told to the second). */
const wholeSecondNow = () => new Date(Math.floor(Date.now() / 1000) * 1000);
const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const storeAt = (db: TestDatabase, at: Date) => new IdempotencyStore(db.prisma, { clock: () => at });

/** A writer's request: reserve at `at`, complete `tookMs` later. */
async function request(db: TestDatabase, at: Date, input: BeginInput, tookMs = 1500) {
  const begun = await storeAt(db, at).begin(input);
  if (begun.outcome !== "owner") throw new Error(`expected to own ${input.scope} ${input.operation} ${input.key}, got ${begun.outcome}`);
  await storeAt(db, new Date(at.getTime() + tookMs)).complete(begun.record.id, { code: 201, headers: [], body: JSON.stringify({ ok: true }) });
  return begun.record.id;
}

/** The same request again at `at`: a retry the service answers from the record. */
async function retry(db: TestDatabase, at: Date, input: BeginInput) {
  const again = await storeAt(db, at).begin(input);
  if (again.outcome !== "replay") throw new Error(`expected a replay of ${input.key}, got ${again.outcome}`);
}

function post(handler: Parameters<typeof call>[0], url: string, token: string, body: unknown, params: Record<string, string> = {}) {
  const init = { method: "POST", headers: { "content-type": "application/json", "idempotency-key": randomUUID() }, body: JSON.stringify(body) };
  return call(handler, url, token, init, params);
}

// ---------------------------------------------------------------------------------------------

describe("the story of a payment that went pending, was checked, resolved by hand and refunded", () => {
  const ZONE = "Asia/Kolkata"; // UTC+05:30 all year: no daylight saving to guess
  /** The reader's local time, computed apart from the console's formatter. */
  const local = (d: Date) => `${new Date(d.getTime() + 330 * MINUTE).toISOString().slice(0, 19).replace("T", " ")} UTC+05:30`;

  let db: TestDatabase;
  let provider: ProviderService;
  const saved = { PROVIDER_URL: process.env.PROVIDER_URL, PROVIDERS: process.env.PROVIDERS, PROVIDER_TIMEOUT_MS: process.env.PROVIDER_TIMEOUT_MS };
  type Who = Awaited<ReturnType<typeof tokenFor>>;
  let operator: Who, approver: Who, reader: Who;
  let recordId: bigint;
  let version: number;
  const requestId = `req_${randomBytes(6).toString("hex")}`;
  const reference = `ch_${randomBytes(6).toString("hex")}`;
  let reservedAt: Date, pendingAt: Date;

  const story = async () => {
    const res = await call(STORY, `/api/v1/records/${recordId}/story`, reader.token, {}, { id: String(recordId) });
    expect(res.status).toBe(200);
    return json<{ timeZone: string; sentences: { kind: string; text: string }[]; text: string }>(res);
  };
  const sentence = (s: { sentences: { kind: string; text: string }[] }, kind: string) => s.sentences.filter((x) => x.kind === kind).map((x) => x.text);

  beforeAll(async () => {
    [db, provider] = await Promise.all([createTestDatabase(), startProviderService()]);
    provideDatabase(db);
    delete process.env.PROVIDERS;
    process.env.PROVIDER_URL = provider.url;
    process.env.PROVIDER_TIMEOUT_MS = "2000";
    [operator, approver, reader] = [await tokenFor(db, ["operator"]), await tokenFor(db, ["approver"]), await tokenFor(db, ["support"])];
    const zone = await call(PREFERENCES, "/api/v1/me/preferences", reader.token, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ timeZone: ZONE }),
    });
    expect(zone.status).toBe(200);

    // The writer: reserved two hours ago; the provider call timed out, so it marked the record pending.
    reservedAt = new Date(wholeSecondNow().getTime() - 2 * HOUR);
    pendingAt = new Date(reservedAt.getTime() + 10_000);
    const key = `pay-${randomUUID()}`;
    const begun = await storeAt(db, reservedAt).begin({
      scope: "tenant:initech",
      operation: "capture_payment",
      key,
      payload: { order: "ord_7781", amount: 4999, currency: "EUR" },
      provider: "mockpay",
      amountMinor: 4999,
      currency: "EUR",
    });
    if (begun.outcome !== "owner") throw new Error("expected to own the new key");
    const pending = await storeAt(db, pendingAt).markPending(begun.record.id, {
      providerRequestId: requestId,
      error: "timeout after 10000 ms waiting for mockpay POST /v1/charges",
      firstCheckInSeconds: 60,
    });
    recordId = pending.record.id;
    version = pending.record.version;
    // The provider knows the request but has no final answer yet.
    await provider.control.seedRequests([{ requestId, status: "unknown" }]);
  }, 120_000);

  afterAll(async () => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    await Promise.all([provider?.stop(), db?.drop()]);
  });

  it("while pending: since when, and each check with the provider that had no answer", async () => {
    for (let i = 0; i < 2; i++) {
      const res = await post(
        RECONCILE,
        `/api/v1/records/${recordId}/reconcile`,
        operator.token,
        { reason: "customer asks where the payment is" },
        { id: String(recordId) },
      );
      expect(res.status).toBe(200);
      expect(await json(res)).toMatchObject({ answer: "unknown", action: "rescheduled", item: { attempts: i + 1 } });
    }
    const item = await db.prisma.reconciliationItem.findFirstOrThrow({ where: { recordId } });
    const s = await story();
    // The zone as the server's ICU names it (older ICU data canonicalises Asia/Kolkata to Asia/Calcutta).
    expect(["Asia/Kolkata", "Asia/Calcutta"]).toContain(s.timeZone);
    expect(sentence(s, "first_request")).toEqual([
      expect.stringMatching(new RegExp(`^On ${esc(local(reservedAt))} the client of tenant:initech first asked to capture payment for €49\\.99 under`)),
    ]);
    expect(sentence(s, "pending")).toEqual([
      `At ${local(pendingAt)} the call to mockpay did not come back in time (timeout after 10000 ms waiting for mockpay POST /v1/charges): ` +
        `the outcome was unknown, so the record was set pending with provider request id ${requestId} — never retried blindly.`,
    ]);
    expect(sentence(s, "pending_since")).toEqual([
      expect.stringMatching(new RegExp(`^It has been pending since ${esc(local(pendingAt))} \\((1 h 59 min|2 h( \\d+ min)?)\\)`)),
    ]);
    expect(sentence(s, "reconciliation")).toEqual([
      `A reconciliation item is open: checked with the provider 2 times, last on ${local(item.lastCheckedAt!)}; next check ${local(item.nextCheckAt!)}.`,
    ]);
    expect(s.sentences.map((x) => x.kind)).toEqual(["first_request", "pending", "pending_since", "reconciliation", "expiry"]);
  });

  it("once resolved by hand and refunded: the checks, who resolved it and why, the compensation — in the reader's zone", async () => {
    const reason = "the provider's dashboard shows the charge captured";
    const resolved = await post(
      RESOLVE,
      `/api/v1/records/${recordId}/resolve`,
      operator.token,
      { outcome: "completed", providerReference: reference, reason, expectedVersion: version },
      { id: String(recordId) },
    );
    expect(resolved.status).toBe(200);
    await provider.control.seedCharges([{ reference, amountMinor: 4999, currency: "EUR", requestId }]);
    const requested = await post(REQUEST_COMPENSATION, "/api/v1/compensations", operator.token, {
      recordId: String(recordId),
      kind: "refund",
      amountMinor: 1500,
      reason: "two of the three items were out of stock",
    });
    expect(requested.status).toBe(201);
    const compId = String((await json(requested)).id);
    const approved = await post(APPROVE, `/api/v1/compensations/${compId}/approve`, approver.token, { reason: "matches the warehouse report" }, { id: compId });
    expect(approved.status).toBe(200);

    const item = await db.prisma.reconciliationItem.findFirstOrThrow({ where: { recordId } });
    const comp = await db.prisma.compensation.findUniqueOrThrow({ where: { id: BigInt(compId) } });
    expect(comp).toMatchObject({ state: "executed" });
    const operatorLabel = `${operator.email} (token records test)`; // the audit's label of a token's user

    const s = await story();
    // Where it stood: the timeout and since when it was pending are still told.
    expect(sentence(s, "pending")).toEqual([expect.stringContaining(`At ${local(pendingAt)} the call to mockpay did not come back in time`)]);
    expect(sentence(s, "pending_since")).toEqual([]); // it is not pending any more
    // The checks with the provider are not forgotten once an operator decided.
    expect(sentence(s, "reconciliation")).toEqual([
      `It was checked with the provider 2 times, last on ${local(item.lastCheckedAt!)}, without a final answer (the provider is still processing the request).`,
    ]);
    expect(sentence(s, "resolved")).toEqual([
      `On ${local(item.resolvedAt!)} it was resolved by hand by ${operatorLabel}: it succeeded (provider reference ${reference}), because “${reason}”.`,
    ]);
    // It was decided by hand: nothing may claim the provider answered.
    expect(s.text).not.toMatch(/from the provider's answer/);
    expect(sentence(s, "compensation")).toEqual([
      `A refund of €15.00 was requested by ${operator.email} on ${local(comp.requestedAt)} (“two of the three items were out of stock”); ` +
        `approved by ${approver.email} on ${local(comp.decidedAt!)} (“matches the warehouse report”); ` +
        `carried out by the provider on ${local(comp.executedAt!)} (${comp.providerCompensationId}).`,
    ]);
    expect(comp.providerCompensationId).toBeTruthy();
    expect(s.sentences.map((x) => x.kind)).toEqual(["first_request", "pending", "reconciliation", "resolved", "compensation", "expiry"]);
    // Every time in the reader's zone; none left in UTC.
    expect(s.text.match(/\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\+05:30/g)!.length).toBeGreaterThanOrEqual(8);
    expect(s.text).not.toMatch(/\d\d:\d\d:\d\d UTC(?!\+05:30)/);
  });
});

// ---------------------------------------------------------------------------------------------

interface Finding {
  scope: string;
  operation: string;
  kind: string;
  fix: string;
  evidence: { examples: string[]; count: number; of: number; share: number; note: string };
}

describe("key quality (GET /api/v1/insights/key-quality)", () => {
  const TWIN = "tenant:twin"; // one key for the order and for its payment
  const CLOCK = "tenant:clock"; // keys from the clock
  const RANDOM = "tenant:random"; // a UUID per intent
  let db: TestDatabase;
  let body: { scopes: { scope: string; operations: { operation: string; findings: Finding[] }[] }[]; findings: Finding[] };
  const shared: string[] = [];
  const clockKeys: string[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    provideDatabase(db);
    const now = wholeSecondNow();
    const order = (scope: string, key: string, n: number): BeginInput => ({ scope, operation: "create_order", key, payload: { cart: n, scope } });
    const payment = (scope: string, key: string, n: number): BeginInput => ({ scope, operation: "capture_payment", key, payload: { amount: 100 + n } });
    for (let i = 0; i < 24; i++) {
      const at = new Date(now.getTime() - (i + 1) * 10 * MINUTE);
      // tenant:twin — the payment of each of its first 8 orders reuses the order's key.
      const orderKey = randomUUID();
      if (i < 8) shared.push(orderKey);
      await request(db, at, order(TWIN, orderKey, i));
      await request(db, new Date(at.getTime() + 30_000), payment(TWIN, i < 8 ? orderKey : randomUUID(), i));
      // tenant:random — a fresh UUID per intent, for both operations.
      await request(db, at, order(RANDOM, randomUUID(), i));
      await request(db, new Date(at.getTime() + 30_000), payment(RANDOM, randomUUID(), i));
    }
    // tenant:clock — `checkout-<unix seconds>`, one request every 7 s: one template, and numbers
    // as close together as a counter's (29 × 7 s apart ≤ 10 steps a key) — but they are times.
    for (let i = 0; i < 30; i++) {
      const at = new Date(now.getTime() - 3 * HOUR + i * 7_000);
      const key = `checkout-${Math.floor(at.getTime() / 1000)}`;
      clockKeys.push(key);
      await request(db, at, order(CLOCK, key, i));
    }
    await db.withSession((s) => refreshRollups(s));
    const { token } = await tokenFor(db, ["viewer"]);
    const res = await call(KEY_QUALITY, "/api/v1/insights/key-quality", token);
    expect(res.status).toBe(200);
    body = await json(res);
  }, 120_000);
  afterAll(() => db?.drop());

  const findingsOf = (scope: string) => body.findings.filter((f) => f.scope === scope);

  it("a client that reuses one key for two operations is flagged across operations, with the keys as evidence", () => {
    expect(findingsOf(TWIN).map((f) => [f.operation, f.kind])).toEqual([["*", "cross_operation"]]);
    const [f] = findingsOf(TWIN);
    expect(f.evidence.count).toBe(8);
    expect(f.evidence.of).toBe(24 + 16); // distinct keys of the scope's sample
    expect(f.evidence.examples).toHaveLength(5);
    for (const k of f.evidence.examples) expect(shared).toContain(k);
    expect(f.evidence.note).toBe("8 keys used under more than one of capture_payment, create_order");
    expect(f.fix).toMatch(/separate key per operation/);
    // Each operation alone has fine keys.
    const scope = body.scopes.find((s) => s.scope === TWIN)!;
    expect(scope.operations.map((o) => [o.operation, o.findings.length])).toEqual([
      ["capture_payment", 0],
      ["create_order", 0],
    ]);
  });

  it("keys built from the clock are timestamp-like, not a counter (however close the numbers lie)", () => {
    // Timestamp-like (and, a time being predictable, low in entropy) — never "sequential".
    expect(findingsOf(CLOCK).map((f) => [f.operation, f.kind])).toEqual([
      ["create_order", "timestamp"],
      ["create_order", "low_entropy"],
    ]);
    const f = findingsOf(CLOCK).find((x) => x.kind === "timestamp")!;
    expect(f.evidence).toMatchObject({ count: 30, of: 30, share: 1, note: "a time inside the key" });
    expect(f.evidence.examples).toHaveLength(5);
    for (const k of f.evidence.examples) expect(clockKeys).toContain(k);
    expect(f.fix).toMatch(/Do not build keys from the clock/);
  });

  it("a client with a random UUID per intent is not flagged at all", () => {
    expect(body.scopes.map((s) => s.scope)).toEqual([RANDOM, CLOCK, TWIN].sort());
    expect(findingsOf(RANDOM)).toEqual([]);
    const scope = body.scopes.find((s) => s.scope === RANDOM)!;
    expect(scope.operations.map((o) => [o.operation, o.findings.length])).toEqual([
      ["capture_payment", 0],
      ["create_order", 0],
    ]);
  });
});

// ---------------------------------------------------------------------------------------------

interface Advice {
  operation: string;
  retries: { keys: number };
  window: { maxSeconds: number | null };
  expiry: { ttlSeconds: number | null };
  flags: { kind: string; factor?: number; text: string }[];
  lateRetries: { count: number };
  proposal: { keepRecordsDays: number; serviceTtlSeconds: number | null; why: string };
}

describe("the retention advisor (GET /api/v1/insights/retention)", () => {
  const KEYS = 22; // at least STORAGE_MIN_KEYS retried keys per operation
  let db: TestDatabase;
  let body: { sampling: { storageFactor: number }; operations: Advice[] };

  beforeAll(async () => {
    db = await createTestDatabase();
    provideDatabase(db);
    const now = wholeSecondNow();
    for (let i = 0; i < KEYS; i++) {
      // capture_payment: kept 30 days; its clients retry within 20–90 s.
      const payAt = new Date(now.getTime() - (i + 1) * 30 * MINUTE);
      const pay: BeginInput = { scope: "tenant:acme", operation: "capture_payment", key: randomUUID(), payload: { n: i }, ttlSeconds: 30 * 86400 };
      await request(db, payAt, pay);
      await retry(db, new Date(payAt.getTime() + (i === 0 ? 90_000 : 20_000 + i * 3_000)), pay);
      // create_order: kept 4 h; its clients (a mobile app offline) retry up to 3 h later — tight, not wasteful.
      const orderAt = new Date(now.getTime() - 4 * HOUR - i * 20 * MINUTE);
      const order: BeginInput = { scope: "tenant:acme", operation: "create_order", key: randomUUID(), payload: { n: i }, ttlSeconds: 4 * 3600 };
      await request(db, orderAt, order);
      await retry(db, new Date(orderAt.getTime() + (i === 0 ? 3 * HOUR : 30 * MINUTE + i * 5 * MINUTE)), order);
    }
    const { token } = await tokenFor(db, ["viewer"]);
    const res = await call(RETENTION, `/api/v1/insights/retention?from=${new Date(now.getTime() - 2 * DAY).toISOString()}`, token);
    expect(res.status).toBe(200);
    body = await json(res);
  }, 120_000);
  afterAll(() => db?.drop());

  const advice = (operation: string) => body.operations.find((o) => o.operation === operation)!;

  it("flags the operation whose keys are kept thousands of times longer than any retry, and proposes a shorter expiry", () => {
    expect(body.sampling.storageFactor).toBe(100);
    const pay = advice("capture_payment");
    expect(pay).toMatchObject({ retries: { keys: KEYS }, window: { maxSeconds: 90 }, expiry: { ttlSeconds: 30 * 86400 }, lateRetries: { count: 0 } });
    expect(pay.flags).toEqual([
      {
        kind: "kept_too_long",
        factor: (30 * 86400) / 90,
        text: "Keys are kept 28800× longer than the longest retry seen (expiry 720 h, longest retry 2 min): storage for nothing.",
      },
    ]);
    expect(pay.proposal.why).toMatch(/10× the longest retry/);
    expect(pay.proposal.serviceTtlSeconds).toBe(3600);
    expect(pay.proposal.keepRecordsDays).toBe(1);
  });

  it("does not flag the operation whose expiry is tight to its retries", () => {
    const order = advice("create_order");
    expect(order).toMatchObject({ retries: { keys: KEYS }, window: { maxSeconds: 3 * 3600 }, expiry: { ttlSeconds: 4 * 3600 }, lateRetries: { count: 0 } });
    expect(order.flags).toEqual([]);
    expect(order.proposal.why).toBe("the current settings cover every retry seen");
    expect(order.proposal.serviceTtlSeconds).toBe(4 * 3600);
    expect(body.operations.map((o) => o.operation)).toEqual(["capture_payment", "create_order"]);
  });
});
