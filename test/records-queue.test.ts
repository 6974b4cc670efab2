import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { provideDatabase } from "@/lib/db/client";
import { generateDemoTraffic, type DemoSummary } from "@/lib/demo/traffic";
import { parseStuckThresholds, thresholdFor, type StuckThresholds } from "@/lib/records/config";
import { queueSummary, stuckAndPending, type QueueInput, type QueueItem } from "@/lib/records/queue";
import { createTestDatabase, type TestDatabase } from "./helpers/db";
import { call, json, tokenFor } from "./helpers/records-api";
import { decodeCursor } from "@/lib/db/paging";

let db: TestDatabase;
let demo: DemoSummary;
const now = new Date("2026-11-30T12:00:00.000Z");
const DEFAULT = parseStuckThresholds(undefined);

beforeAll(async () => {
  db = await createTestDatabase();
  demo = await generateDemoTraffic(db, { seed: 61, requests: 900, days: 10, now });
  provideDatabase(db);
});
afterAll(() => db?.drop());

async function allPages(input: QueueInput, thresholds: StuckThresholds = DEFAULT): Promise<QueueItem[]> {
  const out: QueueItem[] = [];
  let cursor: QueueInput["cursor"];
  for (let i = 0; i < 1000; i++) {
    const r = await stuckAndPending(db.sql, { ...input, cursor }, { now, thresholds });
    out.push(...r.items);
    if (!r.nextCursor) return out;
    cursor = decodeCursor(r.nextCursor)!;
  }
  throw new Error("too many pages");
}

type Raw = { id: bigint; operation: string; status: string; scope: string; provider: string | null; updated_at: Date };
const raw = () => db.sql.query<Raw>(`SELECT id, operation, status, scope, provider, updated_at FROM idempotency_records ORDER BY updated_at, id`);
const ids = (rows: { id: bigint }[]) => rows.map((r) => r.id.toString());

describe("stuck & pending queue", () => {
  it("stuck = processing unchanged for longer than its operation's threshold (default 5 minutes); in-flight ones are not", async () => {
    expect(DEFAULT).toEqual({ defaultSeconds: 300, byOperation: {} });
    const rows = await raw();
    const stuckBy = (t: StuckThresholds) =>
      rows.filter((r) => r.status === "processing" && now.getTime() - r.updated_at.getTime() > thresholdFor(t, r.operation) * 1000);

    const r = await stuckAndPending(db.sql, { kind: "stuck" }, { now, thresholds: DEFAULT });
    expect(r.summary.stuck).toBe(demo.scenarios.stuckProcessing);
    expect(r.summary.stuck).toBeGreaterThan(0);
    expect(ids(await allPages({ kind: "stuck", limit: 2 }))).toEqual(ids(stuckBy(DEFAULT)));
    expect(rows.filter((x) => x.status === "processing").length).toBe(demo.scenarios.stuckProcessing + demo.scenarios.inFlight);

    // Per-operation thresholds: a 30 s threshold for orders makes some in-flight orders stuck.
    const strict = parseStuckThresholds("default=5m, create_order=30s");
    const strictItems = await allPages({ kind: "stuck" }, strict);
    expect(ids(strictItems)).toEqual(ids(stuckBy(strict)));
    expect(strictItems.length).toBeGreaterThan(demo.scenarios.stuckProcessing);
    for (const item of strictItems) expect(item.thresholdSeconds).toBe(item.operation === "create_order" ? 30 : 300);
    const lax = parseStuckThresholds("default=3d,capture_payment=1h");
    expect(ids(await allPages({ kind: "stuck" }, lax))).toEqual(ids(stuckBy(lax)));
    const laxSummary = (await stuckAndPending(db.sql, { kind: "stuck" }, { now, thresholds: lax })).summary;
    expect(laxSummary.stuck).toBe(stuckBy(lax).length);
    expect(laxSummary.oldestStuckSince).toEqual(stuckBy(lax)[0]?.updated_at ?? null);
  });

  it("pending: every pending record with its open reconciliation item (attempts, next check); oldest first", async () => {
    const items = await allPages({ kind: "pending", limit: 3 });
    const rows = (await raw()).filter((r) => r.status === "pending");
    expect(rows.length).toBe(demo.scenarios.pending);
    expect(ids(items)).toEqual(ids(rows));
    for (const item of items) {
      const [ri] = await db.sql.query<{ id: bigint; attempts: number; next_check_at: Date | null; state: string }>(
        `SELECT id, attempts, next_check_at, state FROM reconciliation_items WHERE record_id = ${db.dialect.param(1)} AND state IN ('open', 'checking', 'needs_manual')
          ORDER BY created_at DESC, id DESC LIMIT 1`,
        [item.id],
      );
      expect(item.reconciliation).toMatchObject({ id: ri.id, attempts: ri.attempts, nextCheckAt: ri.next_check_at, state: ri.state });
      expect(item.ageSeconds).toBe(Math.floor((now.getTime() - item.updatedAt.getTime()) / 1000));
      expect(item.kind).toBe("pending");
    }
    const { summary } = await stuckAndPending(db.sql, {}, { now, thresholds: DEFAULT });
    expect(summary.pending).toBe(rows.length);
    expect(summary.oldestPendingSince).toEqual(rows[0].updated_at);
    const [{ n }] = await db.sql.query<{ n: bigint }>(`SELECT count(*) AS n FROM reconciliation_items WHERE state IN ('open', 'checking', 'needs_manual')`);
    expect(summary.openReconciliation).toBe(Number(n));
  });

  it("an open reconciliation item on a record that is neither pending nor processing is listed too", async () => {
    const [done] = await db.sql.query<{ id: bigint }>(`SELECT id FROM idempotency_records WHERE status = 'completed' ORDER BY id LIMIT 1`);
    await db.sql.query(
      `INSERT INTO reconciliation_items (record_id, provider, state, attempts, next_check_at) VALUES (${db.dialect.param(1)}, 'mockpay', 'needs_manual', 7, NULL)`,
      [done.id],
    );
    const items = await allPages({ kind: "reconciliation" });
    expect(ids(items)).toEqual([done.id.toString()]);
    expect(items[0].reconciliation).toMatchObject({ state: "needs_manual", attempts: 7, nextCheckAt: null });
    const all = await allPages({ limit: 5 });
    expect(all.map((i) => i.kind).filter((k) => k === "reconciliation")).toHaveLength(1);
    // The tab's count is the same set the tab lists.
    expect((await queueSummary(db.sql, parseStuckThresholds(undefined), new Date())).reconciliationOther).toBe(1);
    // Records, not items: a second open item on that record, and on a pending one, change nothing.
    const [pending] = await db.sql.query<{ id: bigint }>(`SELECT id FROM idempotency_records WHERE status = 'pending' ORDER BY id LIMIT 1`);
    for (const id of [done.id, pending.id]) {
      await db.sql.query(`INSERT INTO reconciliation_items (record_id, provider, state, attempts) VALUES (${db.dialect.param(1)}, 'mockpay', 'open', 0)`, [id]);
    }
    const [{ n: other }] = await db.sql.query<{ n: bigint }>(
      `SELECT count(DISTINCT i.record_id) AS n FROM reconciliation_items i JOIN idempotency_records r ON r.id = i.record_id
        WHERE i.state IN ('open', 'checking', 'needs_manual') AND r.status NOT IN ('processing', 'pending')`,
    );
    expect(Number(other)).toBe(1);
    expect((await queueSummary(db.sql, parseStuckThresholds(undefined), new Date())).reconciliationOther).toBe(1);
    expect(ids(await allPages({ kind: "reconciliation" }))).toEqual([done.id.toString()]);
  });

  it("the reconciliation kind (found from the open items' side) is every settled record with an open item, filtered, in age order both ways, page by page", async () => {
    const p = (i: number) => db.dialect.param(i);
    // Settled records of every operation, some with two open items, one with a resolved item only.
    const settled = await db.sql.query<{ id: bigint }>(`SELECT id FROM idempotency_records WHERE status IN ('completed', 'failed') ORDER BY id DESC LIMIT 15`);
    for (const [k, { id }] of settled.entries()) {
      const state = k === 0 ? "resolved_succeeded" : ["open", "checking", "needs_manual"][k % 3];
      await db.sql.query(`INSERT INTO reconciliation_items (record_id, provider, state, attempts) VALUES (${p(1)}, 'mockpay', ${p(2)}, 0)`, [id, state]);
      if (k % 4 === 1)
        await db.sql.query(`INSERT INTO reconciliation_items (record_id, provider, state, attempts) VALUES (${p(1)}, 'mockpay', 'open', 1)`, [id]);
    }
    const expected = await db.sql.query<Raw>(
      `SELECT id, operation, status, scope, provider, updated_at FROM idempotency_records r
        WHERE r.status NOT IN ('processing', 'pending')
          AND EXISTS (SELECT 1 FROM reconciliation_items i WHERE i.record_id = r.id AND i.state IN ('open', 'checking', 'needs_manual'))
        ORDER BY updated_at, id`,
    );
    expect(expected.length).toBeGreaterThanOrEqual(14);
    expect(ids(await allPages({ kind: "reconciliation", limit: 3 }))).toEqual(ids(expected));
    expect(ids(await allPages({ kind: "reconciliation", limit: 3, sort: "age_asc" }))).toEqual(ids(expected).reverse());
    const one = expected[expected.length - 1];
    const withProvider = expected.find((r) => r.provider !== null);
    for (const [input, keep] of [
      [{ operation: one.operation }, (r: Raw) => r.operation === one.operation],
      [{ scope: one.scope }, (r: Raw) => r.scope === one.scope],
      ...(withProvider ? [[{ provider: withProvider.provider! }, (r: Raw) => r.provider === withProvider.provider] as const] : []),
    ] as const) {
      expect(ids(await allPages({ kind: "reconciliation", limit: 2, ...input }))).toEqual(ids(expected.filter(keep)));
    }
    const summary = await queueSummary(db.sql, DEFAULT, now);
    expect(summary.reconciliationOther).toBe(expected.length);
    expect((await allPages({ limit: 7 })).filter((i) => i.kind === "reconciliation").map((i) => i.id.toString())).toEqual(ids(expected));
  });

  it("sorts by age both ways, filters by operation, scope, status and provider; pages visit every row once", async () => {
    const rows = await raw();
    const queued = rows.filter((r) => (r.status === "processing" && now.getTime() - r.updated_at.getTime() > 300_000) || r.status === "pending");
    const all = await allPages({ limit: 4 });
    const withoutRecon = all.filter((i) => i.kind !== "reconciliation");
    expect(ids(withoutRecon)).toEqual(ids(queued));
    const newest = await allPages({ sort: "age_asc", limit: 4 });
    expect(ids(newest)).toEqual(ids(all).reverse());

    const pick = queued.find((r) => r.provider !== null)!;
    const match = (f: (r: Raw) => boolean) => ids(queued.filter(f));
    expect(ids(await allPages({ operation: pick.operation, limit: 2 })).filter((id) => withoutRecon.some((i) => i.id.toString() === id))).toEqual(
      match((r) => r.operation === pick.operation),
    );
    expect(ids(await allPages({ scope: pick.scope, status: "pending" }))).toEqual(match((r) => r.scope === pick.scope && r.status === "pending"));
    expect(ids(await allPages({ provider: pick.provider!, kind: "pending" }))).toEqual(match((r) => r.provider === pick.provider && r.status === "pending"));
    expect(ids(await allPages({ status: "processing" }))).toEqual(match((r) => r.status === "processing"));
    expect(await allPages({ status: "processing", kind: "pending" })).toEqual([]);
  });
});

describe("GET /api/v1/queue", () => {
  it("answers the queue as of now, with the thresholds it used; 400 problem+json on bad parameters", async () => {
    const route = await import("@/app/api/v1/queue/route");
    const { token } = await tokenFor(db, ["viewer"]);
    const res = await call(route.GET, "/api/v1/queue?kind=pending&limit=2", token);
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body.thresholds).toEqual({ default: "5m" });
    expect(body.items).toHaveLength(2);
    expect(body.items[0]).toMatchObject({ kind: "pending", id: expect.stringMatching(/^\d+$/) });
    expect(typeof body.nextCursor).toBe("string");
    expect(body.summary.pending).toBe(demo.scenarios.pending);
    expect(Date.parse(body.asOf)).not.toBeNaN();
    const next = await json(await call(route.GET, `/api/v1/queue?kind=pending&limit=2&cursor=${body.nextCursor}`, token));
    expect(next.items[0].id).not.toBe(body.items[1].id);

    for (const qs of ["kind=done", "sort=age", "status=completed", "limit=0", "limit=1000", "cursor=xyz", "provider=", "foo=bar", "operation=Bad Op"]) {
      const bad = await call(route.GET, `/api/v1/queue?${qs}`, token);
      if (qs === "provider=") {
        expect(bad.status, qs).toBe(200); // an empty form field is absent
        continue;
      }
      expect(bad.status, qs).toBe(400);
      expect(bad.headers.get("content-type")).toBe("application/problem+json");
    }
    expect((await call(route.DELETE, "/api/v1/queue", token, { method: "DELETE" })).status).toBe(405);
  });
});
