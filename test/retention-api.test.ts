import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as legalHoldsRoute from "@/app/api/v1/legal-holds/route";
import * as liftRoute from "@/app/api/v1/legal-holds/[id]/lift/route";
import * as purgesRoute from "@/app/api/v1/purges/route";
import * as purgeRoute from "@/app/api/v1/purges/[id]/route";
import * as cancelRoute from "@/app/api/v1/purges/[id]/cancel/route";
import * as recordHoldRoute from "@/app/api/v1/records/[id]/legal-hold/route";
import * as dryRun from "@/app/api/v1/retention/dry-run/route";
import * as policiesRoute from "@/app/api/v1/retention/policies/route";
import * as policyRoute from "@/app/api/v1/retention/policies/[id]/route";
import { provideDatabase } from "@/lib/db/client";
import { byDialect } from "@/lib/db/dialect";
import { paramList } from "@/lib/db/params";
import { execute } from "@/lib/db/sql";
import { IdempotencyStore } from "@/lib/idempotency";
import { getRun, type PurgeRunView } from "@/lib/retention/runs";
import { stopPurgeWork, waitForPurgeWork } from "@/lib/retention/worker";
import { createTestDatabase, type TestDatabase } from "./helpers/db";
import { call, json, tokenFor } from "./helpers/records-api";
import { buildRetentionDataset, keptChecksums, remaining, truth } from "./helpers/retention";

/**
 * The retention API end to end (route handlers called as Next calls them): policies,
 * legal holds, dry run, starting / watching / cancelling purge runs in the background,
 * permissions, idempotency, audit — and a writer that keeps working during a purge.
 */

let db: TestDatabase;
const tokens = {} as Record<"viewer" | "support" | "operator" | "admin", string>;

beforeAll(async () => {
  db = await createTestDatabase();
  provideDatabase(db);
  for (const role of ["viewer", "support", "operator", "admin"] as const) tokens[role] = (await tokenFor(db, [role])).token;
});

afterAll(async () => {
  await stopPurgeWork();
  await db?.drop();
});

type Handler = Parameters<typeof call>[0];
const send = (
  handler: unknown,
  method: string,
  url: string,
  token: string,
  body?: unknown,
  params: Record<string, string> = {},
  key: string | null = randomUUID(),
) =>
  call(
    handler as Handler,
    url,
    token,
    {
      method,
      headers: { "content-type": "application/json", ...(key ? { "idempotency-key": key } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    },
    params,
  );
const get = (handler: unknown, url: string, token: string, params: Record<string, string> = {}) => call(handler as Handler, url, token, {}, params);

async function auditOf(action: string, targetId?: string) {
  return db.prisma.auditEntry.findMany({ where: { action, ...(targetId ? { targetId } : {}) }, orderBy: { id: "asc" } });
}

async function until(runId: bigint, done: (r: PurgeRunView) => boolean, timeoutMs = 30_000): Promise<PurgeRunView> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await getRun(db.prisma, runId);
    if (done(r)) return r;
    if (Date.now() > deadline) throw new Error(`run ${runId} still ${r.state} (${r.recordsDeleted} records deleted)`);
    await new Promise((res) => setTimeout(res, 25));
  }
}

describe("retention policies", () => {
  it("admins create, change and delete them (idempotent, audited with before/after); others are refused", async () => {
    const create = { operation: "refund_payment", keepRecordsDays: 30, keepEventsDays: 90, reason: "finance asked for a month" };
    expect((await send(policiesRoute.POST, "POST", "/api/v1/retention/policies", tokens.operator, create)).status).toBe(403);
    const key = randomUUID();
    const res = await send(policiesRoute.POST, "POST", "/api/v1/retention/policies", tokens.admin, create, {}, key);
    expect(res.status).toBe(201);
    const { policy } = await json(res);
    expect(policy).toMatchObject({ operation: "refund_payment", keepRecordsDays: 30, keepEventsDays: 90, enabled: true });
    // A retry replays; another creation for the same operation is a 409.
    const replay = await send(policiesRoute.POST, "POST", "/api/v1/retention/policies", tokens.admin, create, {}, key);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect((await json(replay)).policy.id).toBe(policy.id);
    const dup = await send(policiesRoute.POST, "POST", "/api/v1/retention/policies", tokens.admin, create);
    expect(dup.status).toBe(409);
    expect((await auditOf("retention.policies.create")).map((e) => e.outcome)).toEqual(["refused", "done", "refused"]);

    const put = await send(
      policyRoute.PUT,
      "PUT",
      `/api/v1/retention/policies/${policy.id}`,
      tokens.admin,
      { keepRecordsDays: 45, keepEventsDays: 90, enabled: false, reason: "longer" },
      { id: policy.id },
    );
    expect(put.status).toBe(200);
    expect((await json(put)).policy).toMatchObject({ keepRecordsDays: 45, enabled: false });
    const [updated] = await auditOf("retention.policies.update", policy.id);
    expect(updated.before).toEqual({ operation: "refund_payment", keepRecordsDays: 30, keepEventsDays: 90, enabled: true });
    expect(updated.after).toEqual({ operation: "refund_payment", keepRecordsDays: 45, keepEventsDays: 90, enabled: false });

    const list = await json(await get(policiesRoute.GET, "/api/v1/retention/policies", tokens.viewer));
    expect(list.policies.map((p: { id: string }) => p.id)).toContain(policy.id);

    const del = await send(policyRoute.DELETE, "DELETE", `/api/v1/retention/policies/${policy.id}`, tokens.admin, { reason: "not needed" }, { id: policy.id });
    expect(del.status).toBe(200);
    const [deleted] = await auditOf("retention.policies.delete", policy.id);
    expect(deleted).toMatchObject({ outcome: "done", after: null, before: { keepRecordsDays: 45 } });
    expect(
      (await send(policyRoute.DELETE, "DELETE", `/api/v1/retention/policies/${policy.id}`, tokens.admin, { reason: "again" }, { id: policy.id })).status,
    ).toBe(404);
    // Without the key: 400; bad numbers: 400.
    expect((await send(policiesRoute.POST, "POST", "/api/v1/retention/policies", tokens.admin, create, {}, null)).status).toBe(400);
    expect((await send(policiesRoute.POST, "POST", "/api/v1/retention/policies", tokens.admin, { ...create, keepRecordsDays: -1 })).status).toBe(400);
  });
});

describe("legal holds", () => {
  it("record level: set / lift with a reason, conditional on the version, audited; 403 for viewer and support", async () => {
    const id = await byDialect(db, {
      postgres: async () => {
        const [row] = await db.sql.query<{ id: bigint }>(
          `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, expires_at)
       VALUES ('tenant:x', 'create_order', $1, $2, 'completed', now() - interval '90 days') RETURNING id`,
          [randomUUID(), "b".repeat(64)],
        );
        return row.id;
      },
      mysql: async () =>
        (
          await execute(
            db.sql,
            `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, expires_at)
       VALUES ('tenant:x', 'create_order', ?, ?, 'completed', UTC_TIMESTAMP(6) - INTERVAL 90 DAY)`,
            [randomUUID(), "b".repeat(64)],
          )
        ).insertId!,
    })();
    const url = `/api/v1/records/${id}/legal-hold`;
    const params = { id: String(id) };
    for (const role of ["viewer", "support"] as const)
      expect((await send(recordHoldRoute.POST, "POST", url, tokens[role], { hold: true, reason: "case 12" }, params)).status).toBe(403);
    const stale = await send(recordHoldRoute.POST, "POST", url, tokens.operator, { hold: true, reason: "case 12", expectedVersion: 7 }, params);
    expect(stale.status).toBe(409);
    expect((await json(stale)).current).toMatchObject({ version: 0, legalHold: false });
    const set = await json(await send(recordHoldRoute.POST, "POST", url, tokens.operator, { hold: true, reason: "case 12", expectedVersion: 0 }, params));
    expect(set).toMatchObject({ noop: false, record: { legalHold: true, version: 1 } });
    const again = await json(await send(recordHoldRoute.POST, "POST", url, tokens.operator, { hold: true, reason: "case 12 again" }, params));
    expect(again).toMatchObject({ noop: true, record: { legalHold: true, version: 1 } });
    const entries = await auditOf("records.legal_hold", String(id));
    // (The 403s are audited by the API wrapper, before the target is known: see the refusal count below.)
    expect(entries.map((e) => [e.outcome, e.before, e.after])).toEqual([
      ["refused", null, null],
      ["done", { legalHold: false, version: 0 }, { legalHold: true, version: 1 }],
      ["done", { legalHold: true, version: 1 }, { legalHold: true, version: 1 }],
    ]);
    // Prisma's JSON path is an array on PostgreSQL and a JSON path string on MySQL.
    const statusIs409 = byDialect(db, { postgres: { path: ["status"], equals: 409 }, mysql: { path: "$.status" as unknown as string[], equals: 409 } });
    expect(await db.prisma.auditEntry.count({ where: { action: "records.legal_hold", outcome: "refused", detail: statusIs409 } })).toBe(1);
    const lift = await json(await send(recordHoldRoute.POST, "POST", url, tokens.operator, { hold: false, reason: "case closed" }, params));
    expect(lift.record).toMatchObject({ legalHold: false, version: 2 });
    expect(
      (await send(recordHoldRoute.POST, "POST", `/api/v1/records/999999/legal-hold`, tokens.operator, { hold: true, reason: "x y z" }, { id: "999999" }))
        .status,
    ).toBe(404);
  });

  it("scope level: set (one active per scope), list, lift (kept as history), audited", async () => {
    expect((await send(legalHoldsRoute.POST, "POST", "/api/v1/legal-holds", tokens.support, { scope: "tenant:court", reason: "subpoena" })).status).toBe(403);
    const res = await send(legalHoldsRoute.POST, "POST", "/api/v1/legal-holds", tokens.operator, { scope: "tenant:court", reason: "subpoena" });
    expect(res.status).toBe(201);
    const { hold } = await json(res);
    expect(hold).toMatchObject({ scope: "tenant:court", active: true, reason: "subpoena" });
    const dup = await send(legalHoldsRoute.POST, "POST", "/api/v1/legal-holds", tokens.operator, { scope: "tenant:court", reason: "again" });
    expect(dup.status).toBe(409);
    const active = await json(await get(legalHoldsRoute.GET, "/api/v1/legal-holds", tokens.viewer));
    expect(active.holds.map((h: { id: string }) => h.id)).toContain(hold.id);
    const lifted = await send(liftRoute.POST, "POST", `/api/v1/legal-holds/${hold.id}/lift`, tokens.operator, { reason: "case closed" }, { id: hold.id });
    expect((await json(lifted)).hold).toMatchObject({ active: false, liftReason: "case closed" });
    expect((await send(liftRoute.POST, "POST", `/api/v1/legal-holds/${hold.id}/lift`, tokens.operator, { reason: "again" }, { id: hold.id })).status).toBe(409);
    const history = await json(await get(legalHoldsRoute.GET, "/api/v1/legal-holds?state=lifted&scope=tenant:court", tokens.viewer));
    expect(history.holds).toHaveLength(1);
    expect((await auditOf("legal_holds.set")).map((e) => e.outcome)).toEqual(["refused", "done", "refused"]);
    expect((await auditOf("legal_holds.lift")).map((e) => e.outcome)).toEqual(["done", "refused"]);
  });
});

describe("purge runs through the API", () => {
  it("dry run → start with its asOf and count → the run deletes exactly the dry run's numbers; progress and history", async () => {
    const data = await buildRetentionDataset(db, { scale: 2 });
    for (const role of ["viewer", "support"] as const) {
      expect((await get(dryRun.GET, "/api/v1/retention/dry-run", tokens[role])).status).toBe(403);
      expect((await send(purgesRoute.POST, "POST", "/api/v1/purges", tokens[role], { reason: "monthly purge", confirm: "0" })).status).toBe(403);
    }
    const d = await json(await get(dryRun.GET, "/api/v1/retention/dry-run?samples=2", tokens.operator));
    const t = await truth(db, new Date(d.asOf));
    expect(d.totals).toEqual({ records: t.records.length, events: t.events.length });
    expect(d.policies.map((p: { policy: { operation: string | null } }) => p.policy.operation)).toEqual([null, "capture_payment", "issue_invoice"]);
    const kept = await keptChecksums(db, t);

    const wrong = await send(purgesRoute.POST, "POST", "/api/v1/purges", tokens.operator, {
      reason: "monthly purge",
      confirm: String(d.totals.records - 1),
      asOf: d.asOf,
    });
    expect(wrong.status).toBe(409);
    expect((await json(wrong)).current).toMatchObject({ estimatedRecords: d.totals.records });
    const res = await send(purgesRoute.POST, "POST", "/api/v1/purges", tokens.operator, {
      reason: "monthly purge",
      confirm: String(d.totals.records),
      asOf: d.asOf,
      batchSize: 5,
      pauseMs: 0,
    });
    expect(res.status).toBe(202);
    const { run } = await json(res);
    expect(res.headers.get("location")).toBe(`/api/v1/purges/${run.id}`);
    await waitForPurgeWork();
    const progress = await json(await get(purgeRoute.GET, `/api/v1/purges/${run.id}`, tokens.viewer, { id: run.id }));
    expect(progress.run).toMatchObject({
      state: "completed",
      recordsDeleted: String(d.totals.records),
      eventsDeleted: String(d.totals.events),
      progress: 1,
      active: false,
    });
    expect(await remaining(db, t)).toEqual({ records: 0, events: 0 });
    expect(await keptChecksums(db, t)).toEqual(kept);
    const history = await json(await get(purgesRoute.GET, "/api/v1/purges?limit=5", tokens.viewer));
    expect(history.items[0].id).toBe(run.id);
    expect(history.active).toBeNull();
    const [start] = await auditOf("purges.start", run.id);
    const [finish] = await auditOf("purges.finish", run.id);
    expect(start.reason).toBe("monthly purge");
    expect(finish.after).toMatchObject({ recordsDeleted: String(d.totals.records), eventsDeleted: String(d.totals.events) });
    expect(data.labels.size).toBeGreaterThan(0);
  });

  it("one run at a time (409); cancel mid-run → cancelled with partial counts that match the rows gone", async () => {
    await buildRetentionDataset(db, { scale: 6 });
    const asOf = new Date();
    const t = await truth(db, asOf);
    const kept = await keptChecksums(db, t);
    const d = await json(await get(dryRun.GET, "/api/v1/retention/dry-run", tokens.operator));
    const res = await send(purgesRoute.POST, "POST", "/api/v1/purges", tokens.operator, {
      reason: "cancel test",
      confirm: String(d.totals.records),
      asOf: d.asOf,
      batchSize: 2,
      pauseMs: 150,
    });
    expect(res.status).toBe(202);
    const { run } = await json(res);
    const second = await send(purgesRoute.POST, "POST", "/api/v1/purges", tokens.operator, { reason: "second one", confirm: String(d.totals.records) });
    expect(second.status).toBe(409);
    expect((await json(second)).current).toMatchObject({ id: run.id });

    await until(BigInt(run.id), (r) => r.batches >= 2);
    expect((await send(cancelRoute.POST, "POST", `/api/v1/purges/${run.id}/cancel`, tokens.support, { reason: "stop" }, { id: run.id })).status).toBe(403);
    const cancel = await send(cancelRoute.POST, "POST", `/api/v1/purges/${run.id}/cancel`, tokens.operator, { reason: "wrong day" }, { id: run.id });
    expect(cancel.status).toBe(200);
    expect(["cancelling", "cancelled"]).toContain((await json(cancel)).run.state);
    await waitForPurgeWork();
    const done = await getRun(db.prisma, BigInt(run.id));
    expect(done.state).toBe("cancelled");
    expect(done.cancelRequestedByLabel).toMatch(/operator/);
    const gone = t.records.length - (await remaining(db, t)).records;
    expect(Number(done.recordsDeleted)).toBe(gone);
    expect(gone).toBeGreaterThan(0);
    expect(gone).toBeLessThan(t.records.length);
    // Deleted rows are a prefix of the eligible set in id order (the watermark), nothing else touched.
    const p = paramList(db.dialect);
    const byIds = byDialect(db, {
      postgres: () => `id = ANY (${p.add(`{${t.records.join(",")}}`)}::bigint[])`,
      mysql: () => `id IN (${p.list(t.records)})`,
    })();
    const left = await db.sql.query<{ id: bigint }>(`SELECT id FROM idempotency_records WHERE ${byIds} ORDER BY id`, p.values);
    expect(left.map((r) => String(r.id))).toEqual(t.records.slice(gone));
    expect(await keptChecksums(db, t)).toEqual(kept);
    const [finish] = await auditOf("purges.finish", run.id);
    expect(finish.after).toMatchObject({ state: "cancelled", recordsDeleted: String(gone), eventsDeleted: "0" });
    expect((await send(cancelRoute.POST, "POST", `/api/v1/purges/${run.id}/cancel`, tokens.operator, { reason: "again" }, { id: run.id })).status).toBe(409);
  });

  it("a writer keeps working (begin + complete through the protocol library) while a purge runs", async () => {
    await buildRetentionDataset(db, { scale: 4 });
    const d = await json(await get(dryRun.GET, "/api/v1/retention/dry-run", tokens.operator));
    const store = new IdempotencyStore(db.prisma);
    const res = await send(purgesRoute.POST, "POST", "/api/v1/purges", tokens.operator, {
      reason: "under load",
      confirm: String(d.totals.records),
      asOf: d.asOf,
      batchSize: 3,
      pauseMs: 5,
    });
    const { run } = await json(res);
    let written = 0;
    const errors: unknown[] = [];
    let purging = true;
    const finished = waitForPurgeWork().then(() => (purging = false));
    while (purging || written < 20) {
      try {
        const b = await store.begin({
          scope: "tenant:live",
          operation: "create_order",
          key: `live-${written}-${randomUUID()}`,
          payload: { n: written },
          ttlSeconds: 3600,
        });
        if (b.outcome !== "owner") throw new Error(`not the owner: ${b.outcome}`);
        await store.complete(b.record.id, { code: 201, body: "{}" });
        written++;
        // A writer does other work between requests (and PGlite's one connection is shared
        // first come, first served only across event-loop turns).
        await new Promise((r) => setImmediate(r));
      } catch (err) {
        errors.push(err);
        break;
      }
    }
    await finished;
    expect(errors).toEqual([]);
    expect(written).toBeGreaterThanOrEqual(20);
    const done = await getRun(db.prisma, BigInt(run.id));
    expect(done).toMatchObject({ state: "completed", recordsDeleted: BigInt(d.totals.records) });
    const [{ n }] = await db.sql.query<{ n: bigint }>(`SELECT count(*) AS n FROM idempotency_records WHERE scope = 'tenant:live' AND status = 'completed'`);
    expect(Number(n)).toBe(written);
  });
});
