import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyAuditChain } from "@/lib/audit";
import { provideDatabase } from "@/lib/db/client";
import { IdempotencyStore } from "@/lib/idempotency";
import { createTestDatabase, type TestDatabase } from "./helpers/db";
import { auditOf, itemsOf, pendingRecord, reconciledEvents, recordRow, stuckRecord } from "./helpers/pending-records";
import { call, json, tokenFor } from "./helpers/records-api";
import { StateConflictError } from "@/lib/kernel/errors";

/**
 * Resolve by hand (POST /api/v1/records/{id}/resolve) through the real route
 * handler: the guarded transition, its idempotency (Idempotency-Key), races
 * between operators and between an operator and a writer, permissions and bad
 * input. Both database modes; on embedded PGlite the single connection
 * serialises the races, and the same invariants must hold.
 */

let db: TestDatabase;
let operator: { token: string; email: string };
let operator2: { token: string; email: string };

beforeAll(async () => {
  db = await createTestDatabase();
  provideDatabase(db);
  operator = await tokenFor(db, ["operator"]);
  operator2 = await tokenFor(db, ["operator"]);
});
afterAll(() => db?.drop());

const route = () => import("@/app/api/v1/records/[id]/resolve/route");

async function resolve(id: bigint, token: string, body: unknown, key: string | null = randomUUID()): Promise<Response> {
  const r = await route();
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (key !== null) headers["idempotency-key"] = key;
  return call(r.POST, `/api/v1/records/${id}/resolve`, token, { method: "POST", headers, body: JSON.stringify(body) }, { id: String(id) });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const done = (id: bigint) => auditOf(db, id, "records.resolve").then((a) => a.filter((e) => e.outcome === "done"));

describe("resolve by hand", () => {
  it("pending → completed: version + 1, stored response naming the reference, one 'reconciled' event, item resolved, audited with the reason", async () => {
    const rec = await pendingRecord(db);
    const res = await resolve(rec.id, operator.token, {
      outcome: "completed",
      providerReference: "ch_hand_1",
      reason: "bank statement shows the charge",
      expectedVersion: rec.version,
    });
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body.record).toMatchObject({ id: String(rec.id), status: "completed", version: rec.version + 1, providerReference: "ch_hand_1" });
    expect(body.before).toMatchObject({ status: "pending", version: rec.version });
    expect(body.reconciliationItemsResolved).toEqual([String(rec.itemId)]);

    const row = await recordRow(db, rec.id);
    expect(row).toMatchObject({ status: "completed", version: rec.version + 1, provider_reference: "ch_hand_1", response_code: 200, last_error: null });
    expect(JSON.parse(row.response_body!)).toMatchObject({ status: "completed", providerReference: "ch_hand_1", resolution: { by: "hand" } });

    const events = await reconciledEvents(db, rec.id);
    expect(events).toHaveLength(1);
    expect(events[0].detail).toMatchObject({ by: "hand", outcome: "completed", actor: expect.stringContaining(operator.email) });

    const [item] = await itemsOf(db, rec.id);
    expect(item).toMatchObject({ state: "resolved_succeeded", resolved_by: expect.stringContaining(operator.email), next_check_at: null });
    expect(item.resolution).toMatchObject({ by: "hand", outcome: "completed", providerReference: "ch_hand_1", reason: "bank statement shows the charge" });
    expect(item.resolved_at).toBeInstanceOf(Date);

    const audit = await done(rec.id);
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ reason: "bank statement shows the charge", actor_label: expect.stringContaining(operator.email) });
    expect(audit[0].before).toMatchObject({ status: "pending", version: rec.version });
    expect(audit[0].after).toMatchObject({ status: "completed", version: rec.version + 1, providerReference: "ch_hand_1" });

    // The writer's next retry of that key replays what the operator stored.
    const again = await new IdempotencyStore(db.prisma).begin({
      scope: rec.scope,
      operation: rec.operation,
      key: rec.key,
      payload: { amount: 1250, key: rec.key },
      provider: "mockpay",
      amountMinor: 1250,
      currency: "EUR",
    });
    expect(again.outcome).toBe("replay");
    if (again.outcome === "replay") expect(again.response.body).toBe(row.response_body);
  });

  it("pending → failed: the error response carries the reason; the item is resolved_failed", async () => {
    const rec = await pendingRecord(db);
    const res = await resolve(rec.id, operator.token, { outcome: "failed", reason: "provider support confirmed the decline", expectedVersion: rec.version });
    expect(res.status).toBe(200);
    const row = await recordRow(db, rec.id);
    expect(row.status).toBe("failed");
    expect(row.response_code).toBe(422);
    expect(row.response_headers).toEqual([["content-type", "application/problem+json"]]);
    expect(JSON.parse(row.response_body!)).toMatchObject({ status: 422, detail: "provider support confirmed the decline" });
    expect(row.last_error).toContain("provider support confirmed the decline");
    expect((await itemsOf(db, rec.id))[0]).toMatchObject({ state: "resolved_failed" });
    expect((await reconciledEvents(db, rec.id))[0].detail).toMatchObject({ by: "hand", outcome: "failed" });
  });

  it("a stale version is a 409 with the current state, and nothing changes", async () => {
    const rec = await pendingRecord(db);
    const first = await resolve(rec.id, operator.token, {
      outcome: "completed",
      providerReference: "ch_first",
      reason: "first operator decides",
      expectedVersion: rec.version,
    });
    expect(first.status).toBe(200);
    const before = await recordRow(db, rec.id);
    const res = await resolve(rec.id, operator2.token, { outcome: "failed", reason: "second operator, stale page", expectedVersion: rec.version });
    expect(res.status).toBe(409);
    expect(res.headers.get("content-type")).toContain("application/problem+json");
    const p = await json(res);
    expect(p.type).toMatch(/state-conflict$/);
    expect(p.current).toMatchObject({ status: "completed", version: rec.version + 1 });
    expect(p.current.updatedAt).toMatch(/^\d{4}-\d{2}-\d{2}T/);
    expect(p.detail).toMatch(/changed since you saw it.*completed, version/);
    expect(await recordRow(db, rec.id)).toEqual(before);
    expect(await reconciledEvents(db, rec.id)).toHaveLength(1);
    const refused = (await auditOf(db, rec.id, "records.resolve")).filter((a) => a.outcome === "refused");
    expect(refused).toHaveLength(1);
    expect(refused[0].reason).toBe("second operator, stale page");
  });

  it("processing: refused until stuck past its operation's threshold, then resolvable", async () => {
    const fresh = await stuckRecord(db, { ageSeconds: 30 });
    const res = await resolve(fresh.id, operator.token, { outcome: "failed", reason: "worker looks dead", expectedVersion: fresh.version });
    expect(res.status).toBe(409);
    expect((await json(res)).detail).toMatch(/not stuck yet/);
    expect((await recordRow(db, fresh.id)).status).toBe("processing");

    const stuck = await stuckRecord(db, { ageSeconds: 3600 });
    const ok = await resolve(stuck.id, operator.token, {
      outcome: "completed",
      providerReference: "ch_stuck",
      reason: "worker died after the charge",
      expectedVersion: stuck.version,
    });
    expect(ok.status).toBe(200);
    expect(await recordRow(db, stuck.id)).toMatchObject({ status: "completed", version: stuck.version + 1, provider_reference: "ch_stuck" });
  });

  it("completed or failed records are never resolved again; a missing record is a 404", async () => {
    const rec = await pendingRecord(db);
    await resolve(rec.id, operator.token, { outcome: "failed", reason: "declined at the bank", expectedVersion: rec.version });
    const res = await resolve(rec.id, operator.token, {
      outcome: "completed",
      providerReference: "ch_x",
      reason: "try to flip it",
      expectedVersion: rec.version + 1,
    });
    expect(res.status).toBe(409);
    expect((await json(res)).detail).toMatch(/only pending or stuck processing/);
    expect((await recordRow(db, rec.id)).status).toBe("failed");
    expect((await resolve(987654321n, operator.token, { outcome: "failed", reason: "no such record", expectedVersion: 0 })).status).toBe(404);
  });
});

describe("races", () => {
  it("100 concurrent resolves with different Idempotency-Keys: exactly one 200, 99 × 409; the record changed once", async () => {
    const rec = await pendingRecord(db);
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        resolve(rec.id, i % 2 ? operator.token : operator2.token, {
          outcome: i % 3 ? "completed" : "failed",
          ...(i % 3 ? { providerReference: `ch_race_${i}` } : {}),
          reason: `operator attempt ${i}`,
          expectedVersion: rec.version,
        }).then(async (r) => ({ status: r.status, body: await json(r) })),
      ),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(99);
    for (const r of results.filter((x) => x.status === 409)) expect(r.body.type).toMatch(/state-conflict$/);
    const row = await recordRow(db, rec.id);
    expect(row.version).toBe(rec.version + 1);
    const winner = results.find((r) => r.status === 200)!.body;
    expect(row.status).toBe(winner.outcome);
    expect(await reconciledEvents(db, rec.id)).toHaveLength(1);
    expect(await done(rec.id)).toHaveLength(1);
    expect((await auditOf(db, rec.id, "records.resolve")).filter((a) => a.outcome === "refused")).toHaveLength(99);
    expect((await verifyAuditChain(db.prisma)).intact).toBe(true);
  });

  it("100 concurrent resolves with the SAME key: one execution; the rest replay it or are told it is in progress", async () => {
    const rec = await pendingRecord(db);
    const key = randomUUID();
    const body = { outcome: "completed", providerReference: "ch_same_key", reason: "double-clicked submit", expectedVersion: rec.version };
    const results = await Promise.all(
      Array.from({ length: 100 }, () =>
        resolve(rec.id, operator.token, body, key).then(async (r) => ({
          status: r.status,
          replayed: r.headers.get("idempotent-replayed"),
          text: await r.text(),
        })),
      ),
    );
    const executed = results.filter((r) => r.status === 200 && r.replayed !== "true");
    expect(executed).toHaveLength(1);
    for (const r of results) {
      if (r === executed[0]) continue;
      if (r.status === 200) {
        expect(r.replayed).toBe("true");
        expect(r.text).toBe(executed[0].text);
      } else {
        expect(r.status).toBe(409);
        expect(JSON.parse(r.text).type).toMatch(/idempotency-request-in-progress$/);
      }
    }
    expect(await reconciledEvents(db, rec.id)).toHaveLength(1);
    expect(await done(rec.id)).toHaveLength(1);
    expect((await recordRow(db, rec.id)).version).toBe(rec.version + 1);

    // Later retries replay exactly; the same key with another body is a 422; no key is a 400.
    const replay = await resolve(rec.id, operator.token, body, key);
    expect(replay.status).toBe(200);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(await replay.text()).toBe(executed[0].text);
    const other = await resolve(rec.id, operator.token, { ...body, reason: "a different reason" }, key);
    expect(other.status).toBe(422);
    const missing = await resolve(rec.id, operator.token, body, null);
    expect(missing.status).toBe(400);
    expect((await json(missing)).type).toMatch(/idempotency-key-missing$/);
    expect(await done(rec.id)).toHaveLength(1);
  });

  it("a writer completing a stuck record while an operator resolves it: exactly one wins, every round (≥ 30 rounds)", async () => {
    const store = new IdempotencyStore(db.prisma);
    // Calibrate: how long an operator's request takes end to end here.
    const took: number[] = [];
    for (let i = 0; i < 3; i++) {
      const probe = await stuckRecord(db, { ageSeconds: 3600 });
      const t0 = performance.now();
      await resolve(probe.id, operator.token, { outcome: "failed", reason: "calibration", expectedVersion: probe.version });
      took.push(performance.now() - t0);
    }
    let delayStep = Math.max(0.5, Math.min(...took) / 8);
    let writerWins = 0;
    let operatorWins = 0;
    let rounds = 0;
    // At least 30 rounds, and on until both sides have won one (a loaded machine skews the
    // calibration: each sweep of 10 rounds where one side never won widens the next).
    for (let round = 0; round < 30 || ((writerWins === 0 || operatorWins === 0) && round < 120); round++) {
      rounds++;
      if (round > 0 && round % 10 === 0 && (writerWins === 0 || operatorWins === 0)) delayStep *= 2;
      const rec = await stuckRecord(db, { ageSeconds: 3600 });
      // The operator's request authenticates and reserves its key before its UPDATE; a head start for
      // one side or the other, swept across the rounds, lets either reach the row first.
      const offset = ((round % 10) - 4) * delayStep;
      const writer = sleep(Math.max(0, offset))
        .then(() =>
          store.complete(rec.id, {
            code: 201,
            headers: [["content-type", "application/json"]],
            body: `{"round":${round}}`,
            providerReference: `ch_writer_${round}`,
          }),
        )
        .then(() => "ok" as const)
        .catch((err: unknown) => {
          if (err instanceof StateConflictError) return "conflict" as const;
          throw err;
        });
      const op = sleep(Math.max(0, -offset))
        .then(() => resolve(rec.id, operator.token, { outcome: "failed", reason: `operator gives up, round ${round}`, expectedVersion: rec.version }))
        .then((r) => r.status);
      const [w, o] = await Promise.all([writer, op]);
      const row = await recordRow(db, rec.id);
      expect(row.version).toBe(rec.version + 1);
      if (w === "ok") {
        writerWins++;
        expect(o).toBe(409);
        expect(row).toMatchObject({ status: "completed", response_code: 201, provider_reference: `ch_writer_${round}` });
        expect(await reconciledEvents(db, rec.id)).toHaveLength(0);
        expect(await done(rec.id)).toHaveLength(0);
      } else {
        operatorWins++;
        expect(w).toBe("conflict");
        expect(o).toBe(200);
        expect(row).toMatchObject({ status: "failed", response_code: 422 });
        expect(await reconciledEvents(db, rec.id)).toHaveLength(1);
        expect(await done(rec.id)).toHaveLength(1);
      }
    }
    expect(writerWins + operatorWins).toBe(rounds);
    // Both sides won some rounds: the race was real.
    expect(writerWins, `writer won ${writerWins}, operator ${operatorWins}`).toBeGreaterThan(0);
    expect(operatorWins, `writer won ${writerWins}, operator ${operatorWins}`).toBeGreaterThan(0);
  });
});

describe("permissions and bad input", () => {
  it("viewer and support get 403 (audited); nothing changes", async () => {
    const rec = await pendingRecord(db);
    for (const role of ["viewer", "support", "approver", "admin"] as const) {
      const t = await tokenFor(db, [role]);
      const res = await resolve(rec.id, t.token, { outcome: "failed", reason: "not mine to decide", expectedVersion: rec.version });
      expect(res.status, role).toBe(403);
    }
    expect(await recordRow(db, rec.id)).toMatchObject({ status: "pending", version: rec.version });
    expect(await reconciledEvents(db, rec.id)).toHaveLength(0);
    expect((await itemsOf(db, rec.id))[0].state).toBe("open");
  });

  it("keeps what is true: the service's own response and resource, when the operator gives them, are what a retry replays", async () => {
    const rec = await pendingRecord(db);
    const given = {
      code: 201,
      headers: [
        ["content-type", "application/json"],
        ["location", "/orders/ord_77"],
      ] as [string, string][],
      body: '{"order_id":"ord_77"}',
    };
    const res = await resolve(rec.id, operator.token, {
      outcome: "completed",
      providerReference: "ch_known",
      resourceType: "order",
      resourceId: "ord_77",
      response: given,
      reason: "the service's log shows the order was created",
      expectedVersion: rec.version,
    });
    expect(res.status).toBe(200);
    const row = await recordRow(db, rec.id);
    expect(row).toMatchObject({ status: "completed", response_code: 201, response_body: given.body, resource_type: "order", resource_id: "ord_77" });
    expect(row.response_headers).toEqual(given.headers);
    const again = await new IdempotencyStore(db.prisma).begin({
      scope: rec.scope,
      operation: rec.operation,
      key: rec.key,
      payload: { amount: 1250, key: rec.key },
      provider: "mockpay",
      amountMinor: 1250,
      currency: "EUR",
    });
    expect(again.outcome).toBe("replay");
    if (again.outcome === "replay") expect(again.response).toEqual({ code: 201, headers: given.headers, body: given.body });
    const [entry] = await done(rec.id);
    expect(entry.after).toMatchObject({ resourceType: "order", resourceId: "ord_77", response: { given: "by the operator", code: 201 } });
    expect(JSON.stringify(entry)).not.toContain("order_id"); // the body itself stays out of the audit trail
    // Without them, the console's documented answer, marked by its `resolution` member.
    const other = await pendingRecord(db);
    expect(
      (
        await resolve(other.id, operator.token, {
          outcome: "completed",
          providerReference: "ch_unknown",
          reason: "dashboard shows it",
          expectedVersion: other.version,
        })
      ).status,
    ).toBe(200);
    const made = await recordRow(db, other.id);
    expect(JSON.parse(made.response_body!)).toMatchObject({ status: "completed", providerReference: "ch_unknown", resolution: { by: "hand" } });
    // A response that contradicts the outcome is refused, and nothing changes.
    const third = await pendingRecord(db);
    const bad = await resolve(third.id, operator.token, {
      outcome: "completed",
      providerReference: "x",
      response: { code: 402, body: "declined" },
      reason: "contradiction",
      expectedVersion: third.version,
    });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(await json(bad))).toContain("response.code");
    expect((await recordRow(db, third.id)).status).toBe("pending");
  });

  it("bad input is a 400 naming the field, and nothing changes", async () => {
    const rec = await pendingRecord(db);
    const bad: [unknown, RegExp][] = [
      [{ outcome: "completed", reason: "no reference given", expectedVersion: rec.version }, /providerReference.*required/],
      [{ outcome: "failed", providerReference: "ch_1", reason: "reference on a failure", expectedVersion: rec.version }, /providerReference/],
      [{ outcome: "done", providerReference: "ch_1", reason: "unknown outcome", expectedVersion: rec.version }, /outcome/],
      [{ outcome: "failed", reason: "no version" }, /expectedVersion/],
      [{ outcome: "failed", reason: "negative", expectedVersion: -1 }, /expectedVersion/],
      [{ outcome: "failed", reason: "fraction", expectedVersion: 1.5 }, /expectedVersion/],
      [{ outcome: "failed", expectedVersion: rec.version }, /reason/],
      [{ outcome: "failed", reason: "  ", expectedVersion: rec.version }, /reason/],
      [{ outcome: "failed", reason: "extra field", expectedVersion: rec.version, status: "completed" }, /status|unrecognized/i],
    ];
    for (const [body, message] of bad) {
      const res = await resolve(rec.id, operator.token, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect((await json(res)).detail, JSON.stringify(body)).toMatch(message);
    }
    const notJson = await route().then((r) =>
      call(
        r.POST,
        `/api/v1/records/${rec.id}/resolve`,
        operator.token,
        { method: "POST", headers: { "content-type": "application/json", "idempotency-key": randomUUID() }, body: "{" },
        { id: String(rec.id) },
      ),
    );
    expect(notJson.status).toBe(400);
    expect((await resolve(0n, operator.token, { outcome: "failed", reason: "bad id", expectedVersion: 0 })).status).toBe(400);
    expect(await recordRow(db, rec.id)).toMatchObject({ status: "pending", version: rec.version });
    expect(await reconciledEvents(db, rec.id)).toHaveLength(0);
    expect(await done(rec.id)).toHaveLength(0);
  });
});
