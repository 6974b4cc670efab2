import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { paramList } from "@/lib/db/params";
import { generateDemoTraffic, type DemoSummary } from "@/lib/demo/traffic";
import { demoOutcomeFor, seedDemoProvider } from "@/lib/providers/demo-seed";
import { HttpProviderAdapter } from "@/lib/providers/http";
import { adapterFor, configuredProviders, InvalidProviderConfigError } from "@/lib/providers/registry";
import { chargeIdForRequest } from "@/lib/providers/service";
import { ProviderUnavailableError, UnknownProviderError, type CompensationRequest } from "@/lib/providers/types";
import { createTestDatabase, type TestDatabase } from "./helpers/db";
import { startProviderService, type ProviderService } from "./helpers/provider";

/** The real provider service as a child process; the adapter under test talks HTTP to it. */
let provider: ProviderService;
const TIMEOUT_MS = 400;
let adapter: HttpProviderAdapter;

beforeAll(async () => {
  provider = await startProviderService();
  adapter = new HttpProviderAdapter(provider.url, { timeoutMs: TIMEOUT_MS });
});
afterAll(() => provider?.stop());
beforeEach(() => provider.control.reset());

async function post(pathname: string, body: unknown, key?: string) {
  const res = await fetch(`${provider.url}${pathname}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key ? { "idempotency-key": key } : {}) },
    body: JSON.stringify(body),
  });
  return { status: res.status, replayed: res.headers.get("idempotent-replayed"), body: (await res.json()) as Record<string, any> };
}

async function charge(reference = "ch_test_1", amountMinor = 5000n, currency = "EUR") {
  await provider.control.seedCharges([{ reference, amountMinor, currency }]);
  return reference;
}

const refund = (over: Partial<CompensationRequest> = {}): CompensationRequest => ({
  kind: "refund",
  reference: "ch_test_1",
  amountMinor: 1200n,
  currency: "EUR",
  idempotencyKey: `cmp_${Math.random().toString(36).slice(2)}`,
  reason: "customer asked",
  ...over,
});

async function unavailable(p: Promise<unknown>): Promise<ProviderUnavailableError> {
  const err = await p.then(
    (v) => {
      throw new Error(`expected ProviderUnavailableError, got ${JSON.stringify(v, (_k, x) => (typeof x === "bigint" ? x.toString() : x))}`);
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ProviderUnavailableError);
  return err as ProviderUnavailableError;
}

describe("the provider's own Idempotency-Key", () => {
  it("charges: the same key and body → the first answer, replayed; another body → 422; no key → a new charge each time", async () => {
    const a = await post("/v1/charges", { amount_minor: 1999, currency: "eur", request_id: "req_a" }, "key-1");
    expect(a.status).toBe(200);
    expect(a.replayed).toBeNull();
    expect(a.body).toMatchObject({ amount_minor: 1999, currency: "EUR", request_id: "req_a" });
    const again = await post("/v1/charges", { amount_minor: 1999, currency: "eur", request_id: "req_a" }, "key-1");
    expect(again).toMatchObject({ status: 200, replayed: "true", body: a.body });
    const other = await post("/v1/charges", { amount_minor: 2999, currency: "eur", request_id: "req_a" }, "key-1");
    expect(other.status).toBe(422);
    expect(other.body.error.type).toBe("idempotency_error");

    const state = await provider.control.state();
    expect(state.charges.map((c) => c.reference)).toEqual([a.body.id]);
    expect(state.requests).toEqual([{ requestId: "req_a", status: "succeeded", reference: a.body.id, amountMinor: 1999n, currency: "EUR", reason: null }]);

    await post("/v1/charges", { amount_minor: 100, currency: "EUR" });
    await post("/v1/charges", { amount_minor: 100, currency: "EUR" });
    expect((await provider.control.state()).charges).toHaveLength(3);
  });

  it("refunds through the adapter: a retry with the same key refunds once; the same key with another amount is refused", async () => {
    await charge();
    const req = refund();
    const first = await adapter.compensate(req);
    expect(first).toMatchObject({ status: "succeeded", amountMinor: 1200n });
    expect(await adapter.compensate(req)).toEqual(first);
    const reused = await adapter.compensate({ ...req, amountMinor: 1300n });
    expect(reused).toMatchObject({ status: "failed" });
    expect((reused as { reason: string }).reason).toMatch(/idempotency_key_reused/);

    const { refunds, charges } = await provider.control.state();
    expect(refunds).toHaveLength(1);
    expect(refunds[0]).toMatchObject({ charge: "ch_test_1", amountMinor: 1200n, kind: "refund", idempotencyKey: req.idempotencyKey, reason: "customer asked" });
    expect(charges[0].refundedMinor).toBe(1200n);

    const listed = await (await fetch(`${provider.url}/v1/refunds?charge=ch_test_1`)).json();
    expect(listed.data.map((r: { id: string }) => r.id)).toEqual([(first as { providerCompensationId: string }).providerCompensationId]);
    expect((await (await fetch(`${provider.url}/v1/refunds?charge=ch_other`)).json()).data).toEqual([]);
  });
});

describe("refund rules", () => {
  it("refuses more than the charge has left, an unknown charge and another currency (failed, with the provider's error)", async () => {
    await charge("ch_test_1", 5000n);
    expect(await adapter.compensate(refund({ amountMinor: 3000n }))).toMatchObject({ status: "succeeded" });
    const over = await adapter.compensate(refund({ amountMinor: 2001n }));
    expect(over).toEqual({ status: "failed", reason: expect.stringMatching(/^amount_too_large: .*2001.*2000/) });
    expect(await adapter.compensate(refund({ kind: "void", amountMinor: 2000n }))).toMatchObject({ status: "succeeded", amountMinor: 2000n });
    const full = await adapter.compensate(refund({ amountMinor: 1n }));
    expect(full).toEqual({ status: "failed", reason: expect.stringMatching(/^charge_already_refunded/) });
    expect(await adapter.compensate(refund({ reference: "ch_nope" }))).toEqual({ status: "failed", reason: expect.stringMatching(/^resource_missing/) });
    await charge("ch_usd", 5000n, "USD");
    expect(await adapter.compensate(refund({ reference: "ch_usd", currency: "EUR" }))).toEqual({
      status: "failed",
      reason: expect.stringMatching(/^currency_mismatch/),
    });
    const { refunds } = await provider.control.state();
    expect(refunds.map((r) => [r.kind, r.amountMinor])).toEqual([
      ["refund", 3000n],
      ["void", 2000n],
    ]);
  });
});

describe("faults, as the adapter sees them", () => {
  it("timeout: the adapter gives up after PROVIDER_TIMEOUT_MS, the refund still happened once, and the retry with the same key returns it", async () => {
    await charge();
    await provider.control.fault({ route: "compensate", mode: "timeout", times: 1 });
    const req = refund();
    const started = Date.now();
    const err = await unavailable(adapter.compensate(req));
    expect(err.causeKind).toBe("timeout");
    expect(Date.now() - started).toBeGreaterThanOrEqual(TIMEOUT_MS - 20);
    expect(Date.now() - started).toBeLessThan(TIMEOUT_MS + 2000);
    expect((await provider.control.state()).refunds).toHaveLength(1);

    const retry = await adapter.compensate(req);
    expect(retry).toMatchObject({ status: "succeeded", amountMinor: 1200n });
    const { refunds } = await provider.control.state();
    expect(refunds).toHaveLength(1);
    expect((retry as { providerCompensationId: string }).providerCompensationId).toBe(refunds[0].id);
  });

  it("the timeout comes from PROVIDER_TIMEOUT_MS at call time when the adapter has none of its own", async () => {
    await provider.control.seedRequests([{ requestId: "req_t", status: "failed", reason: "card_declined" }]);
    await provider.control.fault({ route: "lookup", mode: "latency", ms: 600 });
    const envAdapter = new HttpProviderAdapter(provider.url);
    const saved = process.env.PROVIDER_TIMEOUT_MS;
    try {
      process.env.PROVIDER_TIMEOUT_MS = "150";
      expect((await unavailable(envAdapter.lookup("req_t"))).causeKind).toBe("timeout");
      process.env.PROVIDER_TIMEOUT_MS = "3000";
      expect(await envAdapter.lookup("req_t")).toEqual({ status: "failed", reason: "card_declined" });
    } finally {
      if (saved === undefined) delete process.env.PROVIDER_TIMEOUT_MS;
      else process.env.PROVIDER_TIMEOUT_MS = saved;
    }
  });

  it("lose: the connection drops without an answer (network), the refund happened once, the retry returns it", async () => {
    await charge();
    await provider.control.fault({ route: "compensate", mode: "lose", times: 1 });
    const req = refund();
    const err = await unavailable(adapter.compensate(req));
    expect(err.causeKind).toBe("network");
    expect((await provider.control.state()).refunds).toHaveLength(1);
    expect(await adapter.compensate(req)).toMatchObject({ status: "succeeded" });
    expect((await provider.control.state()).refunds).toHaveLength(1);
  });

  it("fail: 503 without any effect (server_error); `times` limits how many calls it hits", async () => {
    await charge();
    await provider.control.fault({ route: "compensate", mode: "fail", times: 2 });
    const req = refund();
    expect((await unavailable(adapter.compensate(req))).causeKind).toBe("server_error");
    expect((await unavailable(adapter.compensate(req))).causeKind).toBe("server_error");
    expect((await provider.control.state()).refunds).toHaveLength(0);
    expect(await adapter.compensate(req)).toMatchObject({ status: "succeeded" });
    expect((await provider.control.state()).refunds).toHaveLength(1);
  });

  it("latency within the timeout → the normal answer, late; beyond it → timeout and, the caller gone, no effect", async () => {
    await charge();
    await provider.control.fault({ route: "compensate", mode: "latency", ms: 150, times: 1 });
    const started = Date.now();
    expect(await adapter.compensate(refund())).toMatchObject({ status: "succeeded" });
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);

    await provider.control.fault({ route: "compensate", mode: "latency", ms: TIMEOUT_MS + 300, times: 1 });
    expect((await unavailable(adapter.compensate(refund()))).causeKind).toBe("timeout");
    await new Promise((r) => setTimeout(r, 500));
    expect((await provider.control.state()).refunds).toHaveLength(1);
  });

  it('route "*" applies to lookups and charges too; clearFaults() removes every fault; the control API is never faulted', async () => {
    await provider.control.seedRequests([{ requestId: "req_x", status: "unknown" }]);
    await provider.control.fault({ route: "*", mode: "fail" });
    expect((await unavailable(adapter.lookup("req_x"))).causeKind).toBe("server_error");
    expect((await post("/v1/charges", { amount_minor: 100, currency: "EUR" })).status).toBe(503);
    expect((await provider.control.state()).charges).toHaveLength(0);
    await provider.control.clearFaults();
    expect(await adapter.lookup("req_x")).toMatchObject({ status: "unknown" });
  });

  it("a caller's abort signal ends the call as unavailable", async () => {
    await provider.control.fault({ route: "lookup", mode: "latency", ms: 300 });
    const err = await unavailable(adapter.lookup("req_y", { signal: AbortSignal.timeout(50) }));
    expect(err.causeKind).toBe("timeout");
    expect(err.message).toMatch(/aborted by the caller/);
  });

  it("nobody listening → network", async () => {
    const dead = new HttpProviderAdapter("http://127.0.0.1:1", { timeoutMs: 2000 });
    expect((await unavailable(dead.lookup("req_z"))).causeKind).toBe("network");
  });
});

describe("lookup", () => {
  it("maps succeeded / failed / processing / unknown request ids", async () => {
    await provider.control.seedRequests([
      { requestId: "req_ok", status: "succeeded", amountMinor: 4599n, currency: "gbp" },
      { requestId: "req_ref", status: "succeeded", amountMinor: 10, currency: "USD", reference: "ch_given" },
      { requestId: "req_no", status: "failed", reason: "insufficient_funds" },
      { requestId: "req_wait", status: "unknown" },
    ]);
    expect(await adapter.lookup("req_ok")).toEqual({ status: "succeeded", reference: chargeIdForRequest("req_ok"), amountMinor: 4599n, currency: "GBP" });
    expect(await adapter.lookup("req_ref")).toEqual({ status: "succeeded", reference: "ch_given", amountMinor: 10n, currency: "USD" });
    expect(await adapter.lookup("req_no")).toEqual({ status: "failed", reason: "insufficient_funds" });
    expect(await adapter.lookup("req_wait")).toEqual({ status: "unknown", reason: expect.stringMatching(/processing/) });
    expect(await adapter.lookup("req_never_sent")).toEqual({ status: "unknown", reason: expect.stringMatching(/does not know/) });
    const raw = await fetch(`${provider.url}/v1/requests/req_never_sent`);
    expect(raw.status).toBe(404);

    // A seeded succeeded request's charge can be refunded.
    expect(await adapter.compensate(refund({ reference: chargeIdForRequest("req_ok"), currency: "GBP", amountMinor: 4599n }))).toMatchObject({
      status: "succeeded",
    });
  });

  it("seeding is an upsert that reports what changed", async () => {
    const seed = [
      { requestId: "r1", status: "succeeded" as const, amountMinor: 100n, currency: "EUR" },
      { requestId: "r2", status: "unknown" as const },
    ];
    expect(await provider.control.seedRequests(seed)).toEqual({ created: 2, updated: 0, unchanged: 0 });
    expect(await provider.control.seedRequests(seed)).toEqual({ created: 0, updated: 0, unchanged: 2 });
    expect(await provider.control.seedRequests([{ requestId: "r2", status: "failed", reason: "expired_card" }])).toEqual({
      created: 0,
      updated: 1,
      unchanged: 0,
    });
    expect(await adapter.lookup("r2")).toEqual({ status: "failed", reason: "expired_card" });
    await expect(provider.control.seedRequests([{ requestId: "r3", status: "bogus" as never }])).rejects.toThrow(/400/);
    expect((await provider.control.state()).requests.map((r) => r.requestId)).toEqual(["r1", "r2"]);
  });
});

describe("answers later", () => {
  it("a final outcome with answerAt is 'processing' until then, then the outcome; a malformed answerAt changes nothing", async () => {
    const soon = new Date(Date.now() + 1500).toISOString();
    await provider.control.seedRequests([
      { requestId: "late_ok", status: "succeeded", amountMinor: 700n, currency: "EUR", answerAt: soon },
      { requestId: "late_no", status: "failed", reason: "do_not_honor", answerAt: soon },
      { requestId: "past_ok", status: "succeeded", amountMinor: 5n, currency: "EUR", answerAt: new Date(Date.now() - 1000).toISOString() },
    ]);
    expect(await adapter.lookup("late_ok")).toEqual({ status: "unknown", reason: expect.stringMatching(/processing/) });
    expect(await adapter.lookup("late_no")).toEqual({ status: "unknown", reason: expect.stringMatching(/processing/) });
    expect(await adapter.lookup("past_ok")).toMatchObject({ status: "succeeded", amountMinor: 5n });
    expect((await provider.control.state()).requests.find((r) => r.requestId === "late_ok")).toMatchObject({ status: "succeeded", answerAt: soon });
    await new Promise((r) => setTimeout(r, 1600));
    expect(await adapter.lookup("late_ok")).toEqual({ status: "succeeded", reference: chargeIdForRequest("late_ok"), amountMinor: 700n, currency: "EUR" });
    expect(await adapter.lookup("late_no")).toEqual({ status: "failed", reason: "do_not_honor" });

    const before = await provider.control.state();
    await expect(provider.control.seedRequests([{ requestId: "x1", status: "succeeded", answerAt: "tomorrow" }])).rejects.toThrow(/400.*answerAt/);
    await expect(provider.control.seedRequests([{ requestId: "x2", status: "unknown", answerAt: soon }])).rejects.toThrow(/400.*answerAt/);
    expect(await provider.control.state()).toEqual(before);
  });
});

describe("persistence (--data)", () => {
  it("keeps charges, refunds and idempotency keys across a restart, in a file replaced atomically", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "provider-data-"));
    const file = path.join(dir, "provider.json");
    let p2 = await startProviderService({ dataFile: file });
    try {
      const a = new HttpProviderAdapter(p2.url, { timeoutMs: 2000 });
      await p2.control.seedCharges([{ reference: "ch_keep", amountMinor: 700n, currency: "CHF" }]);
      const req = refund({ reference: "ch_keep", amountMinor: 700n, currency: "CHF" });
      const first = await a.compensate(req);
      expect(JSON.parse(readFileSync(file, "utf8")).refunds).toHaveLength(1);
      await p2.stop();

      p2 = await startProviderService({ dataFile: file });
      const b = new HttpProviderAdapter(p2.url, { timeoutMs: 2000 });
      expect(await b.compensate(req)).toEqual(first);
      expect(await b.compensate(refund({ reference: "ch_keep", amountMinor: 1n, currency: "CHF" }))).toMatchObject({ status: "failed" });
      const state = await p2.control.state();
      expect(state.refunds).toHaveLength(1);
      expect(state.charges).toEqual([{ reference: "ch_keep", amountMinor: 700n, currency: "CHF", requestId: null, refundedMinor: 700n }]);
    } finally {
      await p2.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("registry", () => {
  it("PROVIDERS is an explicit map; unknown names are refused; PROVIDER_URL is ignored then", () => {
    const env = { PROVIDERS: " mockpay=http://127.0.0.1:4010/ , acmepay = http+https://user:secret@pay.example.com/api", PROVIDER_URL: "http://127.0.0.1:9" };
    const m = adapterFor("mockpay", env);
    expect(m).toBeInstanceOf(HttpProviderAdapter);
    expect((m as HttpProviderAdapter).baseUrl).toBe("http://127.0.0.1:4010");
    expect((adapterFor("acmepay", env) as HttpProviderAdapter).baseUrl).toBe("https://user:secret@pay.example.com/api");
    expect(() => adapterFor("otherpay", env)).toThrow(UnknownProviderError);
    expect(configuredProviders(env)).toEqual({
      source: "PROVIDERS",
      providers: [
        { name: "mockpay", kind: "http", url: "http://127.0.0.1:4010" },
        { name: "acmepay", kind: "http", url: "https://pay.example.com/api" },
      ],
    });
  });

  it("PROVIDER_URL serves every name; neither → UnknownProviderError", () => {
    const env = { PROVIDER_URL: "http://127.0.0.1:4555" };
    expect((adapterFor("anything", env) as HttpProviderAdapter).baseUrl).toBe("http://127.0.0.1:4555");
    expect(adapterFor("mockpay", env).kind).toBe("http");
    expect(configuredProviders(env)).toEqual({ source: "PROVIDER_URL", providers: [{ name: "*", kind: "http", url: "http://127.0.0.1:4555" }] });
    expect(() => adapterFor("mockpay", {})).toThrow(UnknownProviderError);
    expect(() => adapterFor("mockpay", { PROVIDERS: "  ", PROVIDER_URL: "" })).toThrow(/no provider adapter is configured for "mockpay"/);
    expect(configuredProviders({})).toEqual({ source: "none", providers: [] });
  });

  it("malformed configuration is an InvalidProviderConfigError (an UnknownProviderError) naming the problem", () => {
    for (const [PROVIDERS, message] of [
      ["mockpay", /expected name=url/],
      ["mockpay=not a url", /needs a URL/],
      ["mockpay=ftp://x", /http\(s\) URL/],
      ["mockpay=stripe+https://api.stripe.com", /unknown adapter type "stripe"/],
      ["a=http://x,a=http://y", /listed twice/],
    ] as const) {
      let err: unknown;
      try {
        adapterFor("mockpay", { PROVIDERS });
      } catch (e) {
        err = e;
      }
      expect(err, PROVIDERS).toBeInstanceOf(InvalidProviderConfigError);
      expect(err).toBeInstanceOf(UnknownProviderError);
      expect((err as Error).message).toMatch(message);
      expect(configuredProviders({ PROVIDERS }).error).toMatch(message);
    }
  });

  it("reads process.env at call time, and the adapter it returns talks to the real service", async () => {
    await provider.control.seedRequests([{ requestId: "req_env", status: "failed", reason: "do_not_honor" }]);
    const saved = { PROVIDERS: process.env.PROVIDERS, PROVIDER_URL: process.env.PROVIDER_URL };
    try {
      delete process.env.PROVIDERS;
      delete process.env.PROVIDER_URL;
      expect(() => adapterFor("mockpay")).toThrow(UnknownProviderError);
      process.env.PROVIDERS = `mockpay=${provider.url}`;
      expect(await adapterFor("mockpay").lookup("req_env")).toEqual({ status: "failed", reason: "do_not_honor" });
      expect(() => adapterFor("acmepay")).toThrow(UnknownProviderError);
      delete process.env.PROVIDERS;
      process.env.PROVIDER_URL = provider.url;
      expect(await adapterFor("acmepay").lookup("req_env")).toEqual({ status: "failed", reason: "do_not_honor" });
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });
});

describe("demo seeding", () => {
  let db: TestDatabase;
  let demo: DemoSummary;
  beforeAll(async () => {
    db = await createTestDatabase();
    demo = await generateDemoTraffic(db, { seed: 5, requests: 700, days: 10, now: new Date("2026-11-30T12:00:00.000Z") });
  });
  afterAll(() => db?.drop());

  it("registers completed charges and gives every pending request a stable outcome; seeding again changes nothing", async () => {
    const silent = () => {};
    const first = await seedDemoProvider(db, { url: provider.url, log: silent });
    const state = await provider.control.state();

    // (a) charges: every completed record with a provider reference and amount, refunds excluded, one per reference.
    const completed = await db.sql.query<{ provider_reference: string; amount_minor: bigint; currency: string; resource_type: string | null }>(
      `SELECT provider_reference, amount_minor, currency, resource_type FROM idempotency_records
        WHERE status = 'completed' AND provider IS NOT NULL AND provider_reference IS NOT NULL AND amount_minor IS NOT NULL AND currency IS NOT NULL
        ORDER BY created_at, id`,
    );
    const expected = new Map<string, { amountMinor: bigint; currency: string }>();
    for (const r of completed) {
      if (r.resource_type !== "refund" && !expected.has(r.provider_reference))
        expected.set(r.provider_reference, { amountMinor: r.amount_minor, currency: r.currency });
    }
    expect(expected.size).toBeGreaterThan(100);
    const byRef = new Map(state.charges.map((c) => [c.reference, c]));
    for (const [ref, c] of expected) expect(byRef.get(ref), ref).toMatchObject(c);
    expect(first.charges.created).toBe(expected.size);

    // (b) pending requests: outcome from the request id's hash, about half succeeded.
    const pending = await db.sql.query<{ provider_request_id: string; amount_minor: bigint | null; currency: string | null }>(
      `SELECT provider_request_id, amount_minor, currency FROM idempotency_records WHERE status = 'pending' AND provider_request_id IS NOT NULL`,
    );
    expect(pending.length).toBe(demo.scenarios.pending);
    expect(pending.length).toBeGreaterThan(3);
    const requests = new Map(state.requests.map((r) => [r.requestId, r]));
    expect(requests.size).toBe(pending.length);
    for (const p of pending) {
      const want = demoOutcomeFor(p.provider_request_id);
      const got = await adapter.lookup(p.provider_request_id);
      if (want.status === "succeeded") {
        expect(got).toEqual({ status: "succeeded", reference: chargeIdForRequest(p.provider_request_id), amountMinor: p.amount_minor, currency: p.currency });
      } else if (want.status === "failed") {
        expect(got).toEqual({ status: "failed", reason: want.reason });
      } else {
        expect(got.status).toBe("unknown");
      }
    }
    expect(first.requests.succeeded + first.requests.failed + first.requests.unknown).toBe(pending.length);
    // The hash split over many ids: ~50/25/25.
    const split = { succeeded: 0, failed: 0, unknown: 0 };
    for (let i = 0; i < 4000; i++) split[demoOutcomeFor(`mp_req_${i}`).status]++;
    expect(split.succeeded / 4000).toBeCloseTo(0.5, 1);
    expect(split.failed / 4000).toBeCloseTo(0.25, 1);
    expect(split.unknown / 4000).toBeCloseTo(0.25, 1);

    // Idempotent: nothing changes the second time.
    const second = await seedDemoProvider(db, { url: provider.url, log: silent });
    expect(second.charges).toEqual({ created: 0, updated: 0, unchanged: expected.size });
    expect(second.requests).toMatchObject({ created: 0, updated: 0, unchanged: pending.length });
    expect(await provider.control.state()).toEqual(state);

    // Deterministic: a fresh provider seeded from the same data ends up in the same state.
    await provider.control.reset();
    await seedDemoProvider(db, { url: provider.url, log: silent });
    const again = await provider.control.state();
    const stable = (s: typeof state) => ({
      requests: s.requests,
      charges: s.charges.map(({ reference, amountMinor, currency, requestId }) => ({ reference, amountMinor, currency, requestId })),
    });
    expect(stable(again)).toEqual(stable(state));
  });

  it("the planted double charges can be refunded at the provider (both of them)", async () => {
    await seedDemoProvider(db, { url: provider.url, log: () => {} });
    expect(demo.doubleSubmits.length).toBeGreaterThan(0);
    for (const pair of demo.doubleSubmits) {
      const ids = paramList(db.dialect);
      const records = await db.sql.query<{ provider_reference: string; amount_minor: bigint; currency: string }>(
        `SELECT provider_reference, amount_minor, currency FROM idempotency_records WHERE id IN (${ids.list(pair.recordIds)}) ORDER BY id`,
        ids.values,
      );
      expect(records).toHaveLength(2);
      for (const r of records) {
        const out = await adapter.compensate(refund({ reference: r.provider_reference, amountMinor: r.amount_minor, currency: r.currency }));
        expect(out, r.provider_reference).toMatchObject({ status: "succeeded", amountMinor: r.amount_minor });
      }
    }
  });
});
