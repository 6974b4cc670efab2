import { randomUUID } from "node:crypto";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { provideDatabase } from "@/lib/db/client";
import { healthReport } from "@/lib/db/health";
import { readLag } from "@/lib/db/replica";
import { stuckAndPending } from "@/lib/records/queue";
import { searchRecords } from "@/lib/records/search";
import { overviewStats } from "@/lib/stats/overview";
import { usingPostgres } from "./helpers/db";
import { pendingRecord } from "./helpers/pending-records";
import { call, json, tokenFor } from "./helpers/records-api";
import {
  createReplicatedTestDatabase,
  eventually,
  pauseReplay,
  replicaServerUrl,
  resumeReplay,
  waitForReplay,
  type ReplicatedTestDatabase,
} from "./helpers/replica";

/**
 * Reads off a real streaming replica (DATABASE_READ_URL, ADR 0013): .ci/run starts a PostgreSQL
 * standby of the CI server (pg_basebackup, another port) and runs this file against it. The read
 * routes must answer from the standby — proven by pausing its replay, so it is behind, and seeing
 * the routes not see what the primary already has — while authentication, audit entries and
 * actions (their version checks included) use the primary; the lag is reported on the overview,
 * /api/metrics and /api/health, and an idle, caught-up replica is not "behind".
 */

let db: ReplicatedTestDatabase;
let operator: { token: string };
let support: { token: string };

const overviewRoute = () => import("@/app/api/v1/stats/overview/route");
const recordsRoute = () => import("@/app/api/v1/records/route");
const recordRoute = () => import("@/app/api/v1/records/[id]/route");
const queueRoute = () => import("@/app/api/v1/queue/route");
const exportRoute = () => import("@/app/api/v1/export/[list]/route");
const metricsRoute = () => import("@/app/api/metrics/route");
const resolveRoute = () => import("@/app/api/v1/records/[id]/resolve/route");

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const day = () => {
  const to = new Date();
  return `from=${new Date(to.getTime() - 86_400_000).toISOString()}&to=${to.toISOString()}`;
};

async function searchByKey(key: string, token = operator.token) {
  const res = await call((await recordsRoute()).GET, `/api/v1/records?q=${encodeURIComponent(key)}&field=key`, token);
  expect(res.status).toBe(200);
  return (await json<{ items: { id: string }[] }>(res)).items;
}

async function detail(id: bigint) {
  return call((await recordRoute()).GET, `/api/v1/records/${id}`, operator.token, {}, { id: String(id) });
}

async function overview() {
  const res = await call((await overviewRoute()).GET, `/api/v1/stats/overview?${day()}`, operator.token);
  expect(res.status).toBe(200);
  return json(res);
}

async function resolve(id: bigint, expectedVersion: number) {
  return call(
    (await resolveRoute()).POST,
    `/api/v1/records/${id}/resolve`,
    operator.token,
    {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": randomUUID() },
      body: JSON.stringify({
        outcome: "completed",
        providerReference: `ch_${randomUUID().slice(0, 8)}`,
        reason: "statement shows the charge",
        expectedVersion,
      }),
    },
    { id: String(id) },
  );
}

/** A writer's change on the primary: a new version of the record. */
const bumpVersion = (id: bigint) => db.sql.query("UPDATE idempotency_records SET version = version + 1, updated_at = now() WHERE id = $1", [id]);

describe.skipIf(!replicaServerUrl || !usingPostgres)("reads off a streaming replica (DATABASE_READ_URL)", () => {
  beforeAll(async () => {
    db = await createReplicatedTestDatabase();
    provideDatabase(db);
    operator = await tokenFor(db, ["operator"]);
    support = await tokenFor(db, ["support"]);
    await waitForReplay(db);
  });
  afterEach(() => resumeReplay(db));
  afterAll(() => db?.drop());

  it("the read side is the standby — another server, in recovery, read-only — and the primary is not", async () => {
    expect(db.read.replica).toBe(true);
    const [primary] = await db.sql.query<{ recovery: boolean; port: number }>("SELECT pg_is_in_recovery() AS recovery, inet_server_port() AS port");
    const [read] = await db.read.sql.query<{ recovery: boolean; port: number }>("SELECT pg_is_in_recovery() AS recovery, inet_server_port() AS port");
    expect(primary.recovery).toBe(false);
    expect(read.recovery).toBe(true);
    expect(read.port).not.toBe(primary.port);
    await expect(db.read.sql.query("CREATE TABLE ic_never_created (x int)")).rejects.toMatchObject({ code: "25006" }); // read-only transaction
  });

  it("every route that reads the replica answers from the standby (none of them writes: a standby refuses writes)", async () => {
    const rec = await pendingRecord(db);
    await waitForReplay(db);
    const paths: [() => Promise<{ GET: Parameters<typeof call>[0] }>, string, Record<string, string>?][] = [
      [overviewRoute, `/api/v1/stats/overview?${day()}`],
      [metricsRoute, "/api/metrics"],
      [queueRoute, "/api/v1/queue"],
      [recordsRoute, "/api/v1/records"],
      [recordRoute, `/api/v1/records/${rec.id}`, { id: String(rec.id) }],
      [() => import("@/app/api/v1/duplicates/route"), "/api/v1/duplicates"],
      [() => import("@/app/api/v1/conflicts/route"), `/api/v1/conflicts?${day()}`],
      [() => import("@/app/api/v1/expiry/route"), "/api/v1/expiry"],
      [() => import("@/app/api/v1/compensations/route"), "/api/v1/compensations"],
      ...(["records", "queue", "duplicates", "conflicts"] as const).map(
        (list) => [exportRoute, `/api/v1/export/${list}`, { list }] as [typeof exportRoute, string, Record<string, string>],
      ),
    ];
    for (const [route, path, params] of paths) {
      const res = await call((await route()).GET, path, support.token, {}, params ?? {});
      expect(res.status, `${path}: ${res.status === 200 ? "" : await res.text()}`).toBe(200);
    }
    const missing = await call(
      (await import("@/app/api/v1/compensations/[id]/route")).GET,
      "/api/v1/compensations/999999",
      support.token,
      {},
      { id: "999999" },
    );
    expect(missing.status).toBe(404);
  });

  it("a record written on the primary reaches the read API once the replica has replayed it", async () => {
    const rec = await pendingRecord(db);
    await eventually(async () => (await searchByKey(rec.key)).length === 1, "the record on the replica");
    expect((await detail(rec.id)).status).toBe(200);
  });

  it("while replay is paused the read routes answer from the replica: what only the primary has is not there, and the lag is reported", async () => {
    await waitForReplay(db);
    await pauseReplay(db);
    const before = await overviewStats(db.sql, { from: new Date(Date.now() - 86_400_000), to: new Date() }, { snapshot: false });
    const rec = await pendingRecord(db); // committed on the primary only
    await sleep(1_100);

    // The primary has it; the read side does not — search, the record's page, the queue.
    expect((await searchRecords(db.sql, { q: rec.key, field: "key" })).items).toHaveLength(1);
    expect(await searchByKey(rec.key)).toHaveLength(0);
    expect((await detail(rec.id)).status).toBe(404);
    const onPrimary = await stuckAndPending(db.sql, { kind: "pending", limit: 200 });
    expect(onPrimary.items.map((i) => i.idempotencyKey)).toContain(rec.key);
    const queue = await json<{ items: { idempotencyKey: string }[] }>(
      await call((await queueRoute()).GET, "/api/v1/queue?kind=pending&limit=200", operator.token),
    );
    expect(queue.items.length).toBeGreaterThan(0);
    expect(queue.items.map((i) => i.idempotencyKey)).not.toContain(rec.key);

    // The overview: the replica's counts (one pending record fewer than the primary now has), its lag, and data as of now − lag.
    const asked = Date.now();
    const ov = await overview();
    expect(ov.pending.count).toBe(before.pending.count);
    expect(ov.replica.replicating).toBe(true);
    expect(ov.replica.lagSeconds).toBeGreaterThanOrEqual(1);
    expect(Date.parse(ov.asOf)).toBeLessThanOrEqual(asked - 1000);
    const lag = await readLag(db.read);
    expect(lag.lagSeconds).toBeGreaterThanOrEqual(1);

    // An export reads the replica (the record is not in it) and audits on the primary (the replica refuses writes).
    const exp = await call((await exportRoute()).GET, `/api/v1/export/records?q=${rec.key}&field=key`, support.token, {}, { list: "records" });
    expect(exp.status).toBe(200);
    expect(await exp.text()).not.toContain(rec.key);
    const [audited] = await db.sql.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM audit_log WHERE action = 'records.export' AND detail->'filters'->>'q' = $1",
      [rec.key],
    );
    expect(audited.n).toBe(1);

    // /api/metrics and /api/health report the lag.
    const metrics = await (await call((await metricsRoute()).GET, "/api/metrics", operator.token)).text();
    const m = /^idempotency_console_read_replica_lag_seconds (\S+)$/m.exec(metrics);
    expect(Number(m?.[1])).toBeGreaterThanOrEqual(1);
    const health = await healthReport(async () => db);
    expect(health.status).toBe("ok");
    expect(health.replica).toMatchObject({ reachable: true, replicating: true, engine: "PostgreSQL" });
    expect(health.replica!.lagSeconds).toBeGreaterThanOrEqual(1);

    // A token made on the primary while the replica is behind authenticates (sign-in and sessions read the primary).
    const fresh = await tokenFor(db, ["viewer"]);
    expect((await call((await overviewRoute()).GET, `/api/v1/stats/overview?${day()}`, fresh.token)).status).toBe(200);

    await resumeReplay(db);
    await eventually(async () => (await searchByKey(rec.key)).length === 1, "the record after replay resumed");
    expect((await overview()).pending.count).toBe(before.pending.count + 1);
  });

  it("caught up and idle, the replica is not behind, however long ago the primary last committed", async () => {
    await waitForReplay(db);
    await sleep(2_000); // this database committed nothing meanwhile
    // Other databases of the server may commit meanwhile (the standby replays the whole cluster): a
    // reading taken while it replays one of their transactions is briefly not 0, so take a few.
    await eventually(
      async () => {
        const ov = await overview();
        if (ov.replica.lagSeconds !== 0) return false;
        expect(ov.replica).toEqual({ replicating: true, lagSeconds: 0 });
        expect(Math.abs(Date.parse(ov.asOf) - Date.now())).toBeLessThan(1_000);
        return true;
      },
      "a caught-up reading",
      10_000,
    );
    await eventually(async () => (await healthReport(async () => db)).replica!.lagSeconds === 0, "health: caught up", 10_000);
  });

  it("an action's version check reads the primary, even while the replica shows an older version", async () => {
    const rec = await pendingRecord(db);
    await waitForReplay(db);
    await pauseReplay(db);
    await bumpVersion(rec.id); // a writer changed the record: only the primary knows version + 1

    const seen = await json((await detail(rec.id)) as Response);
    expect(seen.record.version).toBe(rec.version); // the record's page (replica) shows the old version

    // Acting on what only the replica showed is refused with the primary's current state …
    const stale = await resolve(rec.id, rec.version);
    expect(stale.status).toBe(409);
    expect((await json(stale)).current).toMatchObject({ status: "pending", version: rec.version + 1 });
    // … and the primary's version is accepted though the replica has never seen it.
    const ok = await resolve(rec.id, rec.version + 1);
    expect(ok.status).toBe(200);
    expect((await json(ok)).record).toMatchObject({ status: "completed", version: rec.version + 2 });

    // A record only the primary has can be acted on (found on the primary, not 404 from the replica).
    const unseen = await pendingRecord(db);
    expect((await detail(unseen.id)).status).toBe(404);
    expect((await resolve(unseen.id, unseen.version)).status).toBe(200);

    // The replica still shows the old state until it replays.
    expect((await json((await detail(rec.id)) as Response)).record).toMatchObject({ status: "pending", version: rec.version });
    await resumeReplay(db);
    await eventually(async () => (await json((await detail(rec.id)) as Response)).record.status === "completed", "the resolution on the replica");
  });
});
