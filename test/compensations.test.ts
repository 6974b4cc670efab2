import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { GET as getOne } from "@/app/api/v1/compensations/[id]/route";
import { POST as approveRoute } from "@/app/api/v1/compensations/[id]/approve/route";
import { POST as rejectRoute } from "@/app/api/v1/compensations/[id]/reject/route";
import { POST as retryRoute } from "@/app/api/v1/compensations/[id]/retry/route";
import { GET as listRoute, POST as requestRoute } from "@/app/api/v1/compensations/route";
import { GET as recordRoute } from "@/app/api/v1/records/[id]/route";
import { verifyAuditChain } from "@/lib/audit";
import { provideDatabase } from "@/lib/db/client";
import { byDialect } from "@/lib/db/dialect";
import { execute } from "@/lib/db/sql";
import { createTestDatabase, type TestDatabase } from "./helpers/db";
import { startProviderService, type ProviderService } from "./helpers/provider";
import { call, json, tokenFor } from "./helpers/records-api";

/**
 * Compensations end to end through the API routes, against a real database (both
 * modes) and the real provider service (a child process): four eyes, execution with
 * timeouts and retries (exactly one refund at the provider per compensation), the
 * remaining-amount check under concurrency, and the console's own idempotency. The test's
 * own SQL is written per dialect where MySQL spells it otherwise (`sql`, `insertRecord`).
 */

let db: TestDatabase;
let provider: ProviderService;
type Who = { token: string; userId: bigint; email: string };
let operator: Who; // requests
let operator2: Who; // requests too
let approver: Who;
let approver2: Who;
let both: Who; // operator + approver: may request and approve, but never their own
let viewer: Who;

const savedEnv = { PROVIDER_URL: process.env.PROVIDER_URL, PROVIDERS: process.env.PROVIDERS, PROVIDER_TIMEOUT_MS: process.env.PROVIDER_TIMEOUT_MS };

beforeAll(async () => {
  [db, provider] = await Promise.all([createTestDatabase(), startProviderService()]);
  provideDatabase(db);
  delete process.env.PROVIDERS;
  process.env.PROVIDER_URL = provider.url;
  process.env.PROVIDER_TIMEOUT_MS = "300";
  operator = await tokenFor(db, ["operator"]);
  operator2 = await tokenFor(db, ["operator"]);
  approver = await tokenFor(db, ["approver"]);
  approver2 = await tokenFor(db, ["approver"]);
  both = await tokenFor(db, ["operator", "approver"]);
  viewer = await tokenFor(db, ["viewer"]);
}, 120_000);

afterAll(async () => {
  for (const [k, v] of Object.entries(savedEnv)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  await provider?.stop();
  await db?.drop();
});

beforeEach(async () => {
  await provider.control.clearFaults();
});

// --- helpers ---------------------------------------------------------------------------------

/** The statement in the test database's dialect. */
const sql = (postgres: string, mysql: string) => byDialect(db, { postgres, mysql });

/** A record row written as a writer would (PostgreSQL: RETURNING id; MySQL: the insert id). */
async function insertRecord(postgres: string, mysql: string, params: unknown[]): Promise<bigint> {
  if (db.dialect.name === "mysql") return (await execute(db.sql, mysql, params)).insertId!;
  const [row] = await db.sql.query<{ id: bigint }>(postgres, params);
  return row.id;
}

interface Planted {
  id: string;
  reference: string;
  scope: string;
}

/** A record as a writer leaves it, and (for completed ones) its charge at the provider. */
async function plant(
  opts: { status?: string; amountMinor?: bigint | null; currency?: string | null; reference?: string | null; scope?: string; seed?: boolean } = {},
): Promise<Planted> {
  const status = opts.status ?? "completed";
  const reference = opts.reference === undefined ? `ch_${randomBytes(8).toString("hex")}` : opts.reference;
  const amount = opts.amountMinor === undefined ? 1000n : opts.amountMinor;
  const currency = opts.currency === undefined ? "EUR" : opts.currency;
  const scope = opts.scope ?? "tenant:comp";
  const id = await insertRecord(
    `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, response_code, provider, provider_reference,
                                      amount_minor, currency, expires_at)
     VALUES ($1, 'capture_payment', $2, repeat('a', 64), $3, $4, 'mockpay', $5, $6, $7, now() + interval '1 day') RETURNING id`,
    `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, response_code, provider, provider_reference,
                                      amount_minor, currency, expires_at)
     VALUES (?, 'capture_payment', ?, repeat('a', 64), ?, ?, 'mockpay', ?, ?, ?, UTC_TIMESTAMP(6) + INTERVAL 1 DAY)`,
    [scope, randomUUID(), status, status === "completed" ? 201 : null, reference, amount, currency],
  );
  if (opts.seed !== false && status === "completed" && reference && amount !== null && currency) {
    await provider.control.seedCharges([{ reference, amountMinor: amount, currency }]);
  }
  return { id: id.toString(), reference: reference ?? "", scope };
}

function post(handler: Parameters<typeof call>[0], url: string, who: Who, body: unknown, opts: { key?: string | null; params?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (opts.key !== null) headers["idempotency-key"] = opts.key ?? randomUUID();
  return call(handler, url, who.token, { method: "POST", headers, body: JSON.stringify(body) }, opts.params ?? {});
}

const requestComp = (who: Who, body: Record<string, unknown>, key?: string) => post(requestRoute, "/api/v1/compensations", who, body, { key });
const act = (handler: typeof approveRoute, verb: string, id: string, who: Who, reason = `${verb} in test`, key?: string) =>
  post(handler, `/api/v1/compensations/${id}/${verb}`, who, { reason }, { key, params: { id } });
const approve = (id: string, who: Who, key?: string) => act(approveRoute, "approve", id, who, "checked the duplicate", key);
const reject = (id: string, who: Who) => act(rejectRoute, "reject", id, who, "not a duplicate after all");
const retry = (id: string, who: Who, key?: string) => act(retryRoute, "retry", id, who, "provider timed out, retrying", key);

async function requested(record: Planted, who: Who = operator, amountMinor: number | string = 1000, extra: Record<string, unknown> = {}) {
  const res = await requestComp(who, { recordId: record.id, kind: "refund", amountMinor, reason: "duplicate charge", ...extra });
  expect(res.status, JSON.stringify(await res.clone().json())).toBe(201);
  return json(res);
}

async function row(id: string) {
  const [r] = await db.sql.query<Record<string, any>>(`SELECT * FROM compensations WHERE id = ${db.dialect.param(1)}`, [id]);
  return r;
}

async function refundsFor(key: string) {
  return (await provider.control.state()).refunds.filter((r) => r.idempotencyKey === key);
}

const count = async (table: string) => Number((await db.sql.query<{ n: bigint }>(`SELECT count(*) AS n FROM ${table}`))[0].n);

// --- request -------------------------------------------------------------------------------

describe("request", () => {
  it("a completed record's charge: state requested, its own provider key, audited; replays under the same Idempotency-Key", async () => {
    const r = await plant({ amountMinor: 2500n });
    const key = randomUUID();
    const body = { recordId: r.id, kind: "refund", amountMinor: 1200, reason: "customer charged twice" };
    const res = await requestComp(operator, body, key);
    expect(res.status).toBe(201);
    const c = await json(res);
    expect(c).toMatchObject({
      recordId: r.id,
      state: "requested",
      kind: "refund",
      amountMinor: "1200",
      currency: "EUR",
      provider: "mockpay",
      providerReference: r.reference,
    });
    expect(c.providerIdempotencyKey).toMatch(/^comp_[A-Za-z0-9_-]{20,}$/);
    expect(c.requestedByYou).toBe(true);
    expect(c.actions).toEqual({ approve: false, reject: false, retry: false });
    expect(res.headers.get("location")).toBe(`/api/v1/compensations/${c.id}`);
    const entry = await db.prisma.auditEntry.findFirst({ where: { action: "compensations.request", targetTable: "compensations", targetId: c.id } });
    expect(entry).toMatchObject({ outcome: "done", reason: "customer charged twice", actorId: String(operator.userId) });

    // The same key again: the stored answer, nothing new written.
    const before = await count("compensations");
    const again = await requestComp(operator, body, key);
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await json(again)).toEqual(c);
    expect(await count("compensations")).toBe(before);
    // The same key with another body: 422; no key: 400.
    expect((await requestComp(operator, { ...body, amountMinor: 1300 }, key)).status).toBe(422);
    expect((await post(requestRoute, "/api/v1/compensations", operator, body, { key: null })).status).toBe(400);
    expect(await count("compensations")).toBe(before);

    // Readable: one, and listed (the viewer holds records.read, may not act).
    const one = await json(await call(getOne, `/api/v1/compensations/${c.id}`, viewer.token, {}, { id: c.id }));
    expect(one).toMatchObject({ id: c.id, state: "requested", requestedByYou: false, actions: { approve: false, reject: false, retry: false } });
    const asApprover = await json(await call(getOne, `/api/v1/compensations/${c.id}`, approver.token, {}, { id: c.id }));
    expect(asApprover.actions).toEqual({ approve: true, reject: true, retry: false });
    const listed = await json(await call(listRoute, `/api/v1/compensations?recordId=${r.id}`, viewer.token));
    expect(listed.items.map((i: { id: string }) => i.id)).toEqual([c.id]);
  });

  it("refuses more than is left, another currency, records that are not completed or have no charge, and foreign related records — writing nothing", async () => {
    const r = await plant({ amountMinor: 1000n });
    await requested(r, operator, 600);
    const before = await count("compensations");
    const over = await requestComp(operator, { recordId: r.id, kind: "refund", amountMinor: 401, reason: "too much" });
    expect(over.status).toBe(409);
    const problem = await json(over);
    expect(problem.type).toMatch(/compensation-exceeds-remaining$/);
    expect(problem.current).toMatchObject({ originalMinor: "1000", claimedMinor: "600", remainingMinor: "400" });
    const refused = await db.prisma.auditEntry.findFirst({
      where: { action: "compensations.request", outcome: "refused", targetId: r.id },
      orderBy: { id: "desc" },
    });
    expect(refused?.detail).toMatchObject({ status: 409 });

    const usd = await requestComp(operator, { recordId: r.id, kind: "refund", amountMinor: 100, currency: "USD", reason: "wrong currency" });
    expect(usd.status).toBe(422);
    expect((await json(usd)).type).toMatch(/currency-mismatch$/);
    // The record's own currency is accepted (and is the only one).
    expect((await requestComp(operator, { recordId: r.id, kind: "refund", amountMinor: 400, currency: "eur", reason: "the rest" })).status).toBe(201);
    expect((await requestComp(operator, { recordId: r.id, kind: "refund", amountMinor: 1, reason: "nothing left" })).status).toBe(409);

    const pending = await plant({ status: "pending" });
    const p = await requestComp(operator, { recordId: pending.id, kind: "refund", amountMinor: 100, reason: "not completed" });
    expect(p.status).toBe(409);
    expect((await json(p)).current).toMatchObject({ status: "pending" });
    const noRef = await plant({ reference: null });
    expect((await requestComp(operator, { recordId: noRef.id, kind: "void", amountMinor: 100, reason: "no charge" })).status).toBe(409);
    expect((await requestComp(operator, { recordId: "999999999", kind: "refund", amountMinor: 1, reason: "missing" })).status).toBe(404);
    const other = await plant({ scope: "tenant:other" });
    const foreign = await requestComp(operator, { recordId: (await plant()).id, kind: "refund", amountMinor: 1, reason: "dup", relatedRecordId: other.id });
    expect(foreign.status).toBe(422);
    // Malformed: 400 (zod), e.g. a zero amount or an unknown kind.
    expect((await requestComp(operator, { recordId: r.id, kind: "refund", amountMinor: 0, reason: "zero" })).status).toBe(400);
    expect((await requestComp(operator, { recordId: r.id, kind: "chargeback", amountMinor: 1, reason: "kind" })).status).toBe(400);
    expect(await count("compensations")).toBe(before + 1);
    // Without compensations.request: 403 from the permissions table.
    expect((await requestComp(approver, { recordId: r.id, kind: "refund", amountMinor: 1, reason: "approver" })).status).toBe(403);
  });

  it("a refund record is not a charge: requesting its refund is a 409 that says so, and nothing is written", async () => {
    const before = await count("compensations");
    const id = await insertRecord(
      `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, response_code, resource_type, provider, provider_reference,
                                        amount_minor, currency, expires_at)
       VALUES ('tenant:comp', 'refund_payment', $1, repeat('b', 64), 'completed', 201, 'refund', 'mockpay', $2, 500, 'EUR', now() + interval '1 day') RETURNING id`,
      `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, response_code, resource_type, provider, provider_reference,
                                        amount_minor, currency, expires_at)
       VALUES ('tenant:comp', 'refund_payment', ?, repeat('b', 64), 'completed', 201, 'refund', 'mockpay', ?, 500, 'EUR', UTC_TIMESTAMP(6) + INTERVAL 1 DAY)`,
      [randomUUID(), `re_${randomBytes(6).toString("hex")}`],
    );
    const res = await requestComp(operator, { recordId: id.toString(), kind: "refund", amountMinor: 100, reason: "refund the refund?" });
    expect(res.status).toBe(409);
    expect((await json(res)).detail).toMatch(/is a refund \(refund_payment\)/);
    expect(await count("compensations")).toBe(before);
  });

  it("concurrent requests that together exceed the amount: only those that fit succeed", async () => {
    const r = await plant({ amountMinor: 1000n });
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        requestComp(i % 2 ? operator : operator2, { recordId: r.id, kind: "refund", amountMinor: 300, reason: `request ${i}` }),
      ),
    );
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses).toEqual([201, 201, 201, 409, 409, 409, 409, 409]);
    const [sum] = await db.sql.query<{ n: bigint; total: bigint }>(
      sql(
        `SELECT count(*)::bigint AS n, sum(amount_minor)::bigint AS total FROM compensations WHERE record_id = $1`,
        `SELECT count(*) AS n, CAST(sum(amount_minor) AS SIGNED) AS total FROM compensations WHERE record_id = ?`,
      ),
      [r.id],
    );
    expect(sum).toEqual({ n: 3n, total: 900n });
  });
});

// --- decide ------------------------------------------------------------------------------

describe("four eyes", () => {
  it("the requester cannot approve (403, audited; the database refuses it too); another approver can, and the provider refunds once", async () => {
    const r = await plant({ amountMinor: 1500n });
    const c = await requested(r, both, 1500);
    const own = await approve(c.id, both);
    expect(own.status).toBe(403);
    expect((await json(own)).detail).toMatch(/You requested compensation .* yourself; four-eyes/);
    const refusal = await db.prisma.auditEntry.findFirst({ where: { action: "compensations.approve", targetId: c.id }, orderBy: { id: "desc" } });
    expect(refusal).toMatchObject({ outcome: "refused", actorId: String(both.userId) });
    expect((await reject(c.id, both)).status).toBe(403);
    expect((await row(c.id)).state).toBe("requested");
    // The second line: the CHECK constraint, whatever the application does.
    await expect(
      db.sql.query(
        sql(
          `UPDATE compensations SET state = 'approved', decided_by = requested_by, decided_by_label = 'x', decided_at = now() WHERE id = $1`,
          `UPDATE compensations SET state = 'approved', decided_by = requested_by, decided_by_label = 'x', decided_at = UTC_TIMESTAMP(6) WHERE id = ?`,
        ),
        [c.id],
      ),
    ).rejects.toThrow(/compensations_four_eyes_check/);
    // The requester sees why (the list tells every viewer what they may do).
    const mine = await json(await call(getOne, `/api/v1/compensations/${c.id}`, both.token, {}, { id: c.id }));
    expect(mine).toMatchObject({ requestedByYou: true, actions: { approve: false, reject: false } });
    expect(mine.note).toMatch(/someone else must approve/);

    const ok = await approve(c.id, approver);
    expect(ok.status).toBe(200);
    const done = await json(ok);
    expect(done).toMatchObject({ state: "executed", attempts: 1, decidedByLabel: approver.email, lastError: null });
    expect(done.providerCompensationId).toMatch(/^re_/);
    const refunds = await refundsFor(c.providerIdempotencyKey);
    expect(refunds).toHaveLength(1);
    expect(refunds[0]).toMatchObject({ charge: r.reference, amountMinor: 1500n, kind: "refund", id: done.providerCompensationId });
    const actions = (
      await db.prisma.auditEntry.findMany({ where: { targetTable: "compensations", targetId: c.id, outcome: { not: "refused" } }, orderBy: { id: "asc" } })
    ).map((e) => e.action);
    expect(actions).toEqual(["compensations.request", "compensations.approve", "compensations.execute", "compensations.executed"]);

    // Approving again (another approver, a new key): 409 with the current state.
    const twice = await approve(c.id, approver2);
    expect(twice.status).toBe(409);
    expect((await json(twice)).current).toMatchObject({ state: "executed" });
    expect(await refundsFor(c.providerIdempotencyKey)).toHaveLength(1);
  });

  it("reject: state rejected, no provider call, the amount is free again; deciding again is a 409", async () => {
    const r = await plant({ amountMinor: 700n });
    const c = await requested(r, operator, 700);
    const res = await reject(c.id, approver);
    expect(res.status).toBe(200);
    expect(await json(res)).toMatchObject({ state: "rejected", decidedByLabel: approver.email, decisionReason: "not a duplicate after all" });
    expect(await refundsFor(c.providerIdempotencyKey)).toHaveLength(0);
    expect((await approve(c.id, approver2)).status).toBe(409);
    expect((await retry(c.id, approver2)).status).toBe(409);
    await requested(r, operator, 700); // the rejected one claims nothing
  });

  it("two approvers at once: exactly one decides, the other gets 409; one refund", async () => {
    const r = await plant();
    const c = await requested(r);
    const answers = await Promise.all([approve(c.id, approver), approve(c.id, approver2), reject(c.id, approver2)]);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409, 409]);
    const final = await row(c.id);
    expect(["executed", "rejected"]).toContain(final.state);
    expect(await refundsFor(c.providerIdempotencyKey)).toHaveLength(final.state === "executed" ? 1 : 0);
  });

  it("approving answers the same under the same Idempotency-Key (the provider is not asked again)", async () => {
    const r = await plant();
    const c = await requested(r);
    const key = randomUUID();
    const first = await approve(c.id, approver, key);
    const second = await approve(c.id, approver, key);
    expect(second.status).toBe(first.status);
    expect(second.headers.get("idempotent-replayed")).toBe("true");
    expect(await json(second)).toEqual(await json(first));
    expect(await refundsFor(c.providerIdempotencyKey)).toHaveLength(1);
  });
});

// --- execute and retry -----------------------------------------------------------------------

describe("execution", () => {
  for (const mode of ["timeout", "lose"] as const) {
    it(`a provider ${mode} leaves it failed with "outcome unknown"; retry executes it; the provider refunded exactly once`, async () => {
      const r = await plant({ amountMinor: 990n });
      const c = await requested(r, operator, 990);
      await provider.control.fault({ route: "compensate", mode, times: 1, ms: 2000 });
      const res = await approve(c.id, approver);
      expect(res.status).toBe(200);
      const failed = await json(res);
      expect(failed).toMatchObject({ state: "failed", attempts: 1, providerCompensationId: null, claimsAmount: true });
      expect(failed.lastError).toMatch(/^outcome unknown/);
      expect(failed.lastError).toContain(c.providerIdempotencyKey);
      expect(failed.actions.retry).toBe(true);
      // The effect happened at the provider (that is what timeout/lose do).
      expect(await refundsFor(c.providerIdempotencyKey)).toHaveLength(1);
      // Still claims its amount: nothing more can be requested meanwhile.
      expect((await requestComp(operator, { recordId: r.id, kind: "refund", amountMinor: 1, reason: "more" })).status).toBe(409);
      const audit = await db.prisma.auditEntry.findFirst({ where: { action: "compensations.execution_failed", targetId: c.id } });
      expect(audit?.outcome).toBe("failed");

      const again = await retry(c.id, approver2);
      expect(again.status).toBe(200);
      const executed = await json(again);
      expect(executed).toMatchObject({ state: "executed", attempts: 2, lastError: null });
      const refunds = await refundsFor(c.providerIdempotencyKey);
      expect(refunds).toHaveLength(1);
      expect(executed.providerCompensationId).toBe(refunds[0].id);
      const charge = (await provider.control.state()).charges.find((ch) => ch.reference === r.reference)!;
      expect(charge.refundedMinor).toBe(990n);
      expect((await retry(c.id, approver2)).status).toBe(409); // executed: nothing to retry
    });
  }

  it("ten concurrent retries with different keys: one attempt, one refund, one executed", async () => {
    const r = await plant({ amountMinor: 500n });
    const c = await requested(r, operator, 500);
    await provider.control.fault({ route: "compensate", mode: "fail", times: 1 });
    expect(await json(await approve(c.id, approver))).toMatchObject({ state: "failed" });
    expect(await refundsFor(c.providerIdempotencyKey)).toHaveLength(0); // fail = 503 without effect
    // The winner's provider call is slow, so the others arrive while it is executing; under this
    // load (ten requests, one process) it gets more time than the 300 ms the other tests use.
    await provider.control.fault({ route: "compensate", mode: "latency", ms: 200, times: 1 });
    process.env.PROVIDER_TIMEOUT_MS = "5000";
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => retry(c.id, i % 2 ? approver : approver2))).finally(() => {
      process.env.PROVIDER_TIMEOUT_MS = "300";
    });
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(9);
    expect(await refundsFor(c.providerIdempotencyKey)).toHaveLength(1);
    const final = await row(c.id);
    expect(final).toMatchObject({ state: "executed", attempts: 2 });
    const executedEntries = await db.prisma.auditEntry.count({ where: { action: "compensations.executed", targetId: c.id, outcome: "done" } });
    expect(executedEntries).toBe(1);
  });

  it("the provider's refusal fails it for good reasons (no longer claiming); a crashed attempt past its lease may be taken over", async () => {
    // The provider refuses: the charge it names does not exist there.
    const ghost = await plant({ amountMinor: 300n, seed: false });
    const c = await requested(ghost, operator, 300);
    const failed = await json(await approve(c.id, approver));
    expect(failed.state).toBe("failed");
    expect(failed.lastError).toMatch(/^provider refused/);
    expect(failed.claimsAmount).toBe(false);

    // A crash between "executing" and the answer: executing, last attempt long ago.
    const r = await plant({ amountMinor: 800n });
    const d = await requested(r, operator, 800);
    await db.sql.query(
      sql(
        `UPDATE compensations SET state = 'executing', decided_by = $2, decided_by_label = 'approver', decided_at = now() - interval '10 minutes',
              attempts = 1, last_attempt_at = now() - interval '10 minutes' WHERE id = $1`,
        `UPDATE compensations SET state = 'executing', decided_by = ?, decided_by_label = 'approver', decided_at = UTC_TIMESTAMP(6) - INTERVAL 10 MINUTE,
              attempts = 1, last_attempt_at = UTC_TIMESTAMP(6) - INTERVAL 10 MINUTE WHERE id = ?`,
      ),
      byDialect(db, { postgres: [d.id, approver.userId], mysql: [approver.userId, d.id] }),
    );
    const view = await json(await call(getOne, `/api/v1/compensations/${d.id}`, approver.token, {}, { id: d.id }));
    expect(view).toMatchObject({ state: "executing", stale: true, actions: { retry: true } });
    const taken = await retry(d.id, approver2);
    expect(taken.status).toBe(200);
    expect(await json(taken)).toMatchObject({ state: "executed", attempts: 2 });
    expect(await refundsFor(d.providerIdempotencyKey)).toHaveLength(1);

    // Executing within the lease: not retried.
    const e = await requested(await plant(), operator, 100);
    await db.sql.query(
      sql(
        `UPDATE compensations SET state = 'executing', decided_by = $2, decided_by_label = 'approver', decided_at = now(), attempts = 1, last_attempt_at = now() WHERE id = $1`,
        `UPDATE compensations SET state = 'executing', decided_by = ?, decided_by_label = 'approver', decided_at = UTC_TIMESTAMP(6), attempts = 1, last_attempt_at = UTC_TIMESTAMP(6) WHERE id = ?`,
      ),
      byDialect(db, { postgres: [e.id, approver.userId], mysql: [approver.userId, e.id] }),
    );
    const busy = await retry(e.id, approver);
    expect(busy.status).toBe(409);
    expect((await json(busy)).detail).toMatch(/within its lease/);
  });

  it("the record page lists the record's compensations", async () => {
    const r = await plant();
    const c = await requested(r, operator, 250);
    const detail = await json(await call(recordRoute, `/api/v1/records/${r.id}`, viewer.token, {}, { id: r.id }));
    expect(detail.compensations.map((x: { id: string }) => x.id)).toEqual([c.id]);
    expect(detail.compensations[0]).toMatchObject({ state: "requested", amountMinor: "250", claimsAmount: true });
    // The compensation's steps target the compensation, and show in the record's audit trail too.
    expect(detail.audit.map((e: { action: string }) => e.action)).toContain("compensations.request");
  });
});

describe("listing", () => {
  it("filters by state, pages with a cursor, newest first", async () => {
    const r = await plant({ amountMinor: 3000n });
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await requested(r, operator, 100)).id);
    const page1 = await json(await call(listRoute, `/api/v1/compensations?recordId=${r.id}&state=requested&limit=2`, viewer.token));
    expect(page1.items.map((i: { id: string }) => i.id)).toEqual([ids[2], ids[1]]);
    expect(page1.nextCursor).toBeTruthy();
    const page2 = await json(await call(listRoute, `/api/v1/compensations?recordId=${r.id}&state=requested&limit=2&cursor=${page1.nextCursor}`, viewer.token));
    expect(page2.items.map((i: { id: string }) => i.id)).toEqual([ids[0]]);
    expect(page2.nextCursor).toBeNull();
    const all = await json(await call(listRoute, `/api/v1/compensations?state=requested&limit=200`, viewer.token));
    expect(all.items.every((i: { state: string }) => i.state === "requested")).toBe(true);
    expect((await call(listRoute, `/api/v1/compensations?state=bogus`, viewer.token)).status).toBe(400);
    // Counts per state for the screen's tabs, whatever the filter: equal to the table.
    const truth = (
      await db.sql.query<{ state: string; n: number | bigint }>(
        sql(`SELECT state, count(*)::int AS n FROM compensations GROUP BY state`, `SELECT state, count(*) AS n FROM compensations GROUP BY state`),
      )
    ).map((t) => ({ state: t.state, n: Number(t.n) }));
    expect(truth.length).toBeGreaterThan(1);
    for (const t of truth) expect(page1.counts[t.state], t.state).toBe(t.n);
    expect(Object.values(page1.counts as Record<string, number>).reduce((a, b) => a + b, 0)).toBe(truth.reduce((a, t) => a + t.n, 0));
  });

  it("the audit chain is intact after all of it", async () => {
    expect((await verifyAuditChain(db.prisma)).intact).toBe(true);
  });
});
