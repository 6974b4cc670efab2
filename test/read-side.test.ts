import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { ROUTE_MODULES } from "@/app/api/v1/openapi.json/route-modules";
import { apiRoute } from "@/lib/api/handler";
import { openDatabase, type Database } from "@/lib/db/client";
import { databaseConfigFromEnv } from "@/lib/db/config";
import { healthReport } from "@/lib/db/health";
import { readLag } from "@/lib/db/replica";
import { createTestDatabase, usingDatabaseServer, usingMysql, type TestDatabase } from "./helpers/db";

/**
 * The read side's handle (DATABASE_READ_URL, ADR 0013) in every database mode: the configuration,
 * which routes may read it, the primary as the read side when it is unset, and — on a server,
 * PostgreSQL or MySQL — a second, read-only handle opened from the URL, its lag and its health.
 * The standby itself (reads really from the replica, its lag, version checks on the primary) is
 * test/replica.test.ts, which .ci/run runs against a real streaming replica.
 */

describe("DATABASE_READ_URL", () => {
  it("names a replica of the DATABASE_URL server: the same kind of server, and never without it", () => {
    const env = (vars: Record<string, string>) => vars as NodeJS.ProcessEnv;
    const pg = "postgresql://console@db:5432/payments";
    const replica = "postgresql://console@db-replica:5432/payments";
    expect(databaseConfigFromEnv(env({ DATABASE_URL: pg, DATABASE_READ_URL: replica }))).toEqual({ mode: "postgres", url: pg, readUrl: replica });
    expect(databaseConfigFromEnv(env({ DATABASE_URL: pg, DATABASE_READ_URL: "  " }))).toEqual({ mode: "postgres", url: pg });
    expect(databaseConfigFromEnv(env({ DATABASE_URL: "mysql://c@db/p", DATABASE_READ_URL: "mariadb://c@replica/p" }))).toMatchObject({
      mode: "mysql",
      readUrl: "mariadb://c@replica/p",
    });
    expect(() => databaseConfigFromEnv(env({ DATABASE_URL: pg, DATABASE_READ_URL: "mysql://c@replica/p" }))).toThrow(/replica of the DATABASE_URL server/);
    expect(() => databaseConfigFromEnv(env({ DATABASE_READ_URL: replica }))).toThrow(/set DATABASE_URL too/);
  });
});

describe("the routes that read the replica", () => {
  it("are the read side's — overview, metrics, lists, search, the record page, exports — and each only reads", () => {
    const replicaRoutes: string[] = [];
    for (const { path, module } of ROUTE_MODULES) {
      for (const [method, handler] of Object.entries(module)) {
        const spec = (handler as { spec?: { reads?: string; body?: unknown; idempotent?: boolean } }).spec;
        if (spec?.reads !== "replica") continue;
        replicaRoutes.push(`${method} ${path}`);
        expect(method, path).toBe("GET");
        expect(spec.body, path).toBeUndefined();
        expect(spec.idempotent, path).toBeFalsy();
      }
    }
    expect(replicaRoutes.sort()).toEqual(
      [
        "GET /api/metrics",
        "GET /api/v1/compensations",
        "GET /api/v1/compensations/[id]",
        "GET /api/v1/conflicts",
        "GET /api/v1/duplicates",
        "GET /api/v1/expiry",
        "GET /api/v1/export/[list]",
        "GET /api/v1/queue",
        "GET /api/v1/records",
        "GET /api/v1/records/[id]",
        "GET /api/v1/stats/overview",
      ].sort(),
    );
  });

  it("a route with a body or an operator action cannot declare it", () => {
    const handle = async () => new Response(null);
    expect(() => apiRoute({ access: "stats.read", reads: "replica", body: z.object({ reason: z.string() }) }, handle)).toThrow(/only reads/);
    expect(() => apiRoute({ access: "records.resolve", reads: "replica", action: "records.resolve", idempotent: true }, handle)).toThrow(/only reads/);
  });
});

describe("without DATABASE_READ_URL", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db?.drop());

  it("the read side is the primary: its own handles, never behind, not in the health report", async () => {
    expect(db.read.replica).toBe(false);
    expect(db.read.sql).toBe(db.sql);
    expect(db.read.prisma).toBe(db.prisma);
    const now = new Date();
    expect(await readLag(db.read, db.read.sql, now)).toEqual({ replica: false, replicating: false, lagSeconds: 0, asOf: now });
    const health = await healthReport(async () => db);
    expect(health.status).toBe("ok");
    expect(health.replica).toBeUndefined();
  });
});

describe.skipIf(!usingDatabaseServer)("a read URL opens a second, read-only handle (PostgreSQL or MySQL)", () => {
  let db: TestDatabase;
  let withRead: Database;
  beforeAll(async () => {
    db = await createTestDatabase();
    // The same database as its own "replica": a second pool, read-only sessions, not replicating.
    withRead = await openDatabase({ mode: db.mode, url: db.url!, readUrl: db.url! }, { poolSize: 2 });
  });
  afterAll(async () => {
    await withRead?.close();
    await db?.drop();
  });

  it("reads what the primary wrote, refuses every write, and reports no lag", async () => {
    expect(withRead.read.replica).toBe(true);
    expect(withRead.read.sql).not.toBe(withRead.sql);
    await withRead.prisma.retentionPolicy.create({ data: { operation: "read_side_probe", keepRecordsDays: 30, keepEventsDays: 30 } });
    expect(await withRead.read.prisma.retentionPolicy.count({ where: { operation: "read_side_probe" } })).toBe(1);

    const insert = "INSERT INTO retention_policies (operation, keep_records_days, keep_events_days) VALUES ('refused_write', 1, 1)";
    // PostgreSQL: 25006 (read-only transaction); MySQL: 1792 (ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION).
    await expect(withRead.read.sql.query(insert)).rejects.toMatchObject(usingMysql ? { errno: 1792 } : { code: "25006" });
    await expect(
      withRead.read.prisma.retentionPolicy.create({ data: { operation: "refused_prisma", keepRecordsDays: 1, keepEventsDays: 1 } }),
    ).rejects.toThrow();
    await expect(withRead.read.withSession((s) => s.query(insert))).rejects.toBeTruthy();
    expect(await withRead.prisma.retentionPolicy.count({ where: { operation: { in: ["refused_write", "refused_prisma"] } } })).toBe(0);

    const lag = await readLag(withRead.read);
    expect(lag).toMatchObject({ replica: true, replicating: false, lagSeconds: 0 });
    const health = await healthReport(async () => withRead);
    expect(health.status).toBe("ok");
    expect(health.replica).toMatchObject({ reachable: true, replicating: false, lagSeconds: 0, engine: expect.any(String) });
  });

  it("a replica that does not answer makes the health degraded (the primary still serves actions and sign-in)", async () => {
    const url = new URL(db.url!);
    url.port = "1";
    const unreachable = await openDatabase({ mode: db.mode, url: db.url!, readUrl: url.toString() }, { poolSize: 1 });
    try {
      const health = await healthReport(async () => unreachable);
      expect(health.status).toBe("degraded");
      expect(health.database.reachable).toBe(true);
      expect(health.replica).toMatchObject({ reachable: false, error: expect.any(String) });
    } finally {
      await unreachable.close();
    }
  });
});
