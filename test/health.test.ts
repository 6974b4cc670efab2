import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiRoute } from "@/lib/api/handler";
import { healthReport } from "@/lib/db/health";
import { byDialect } from "@/lib/db/dialect";
import { createEmptyTestDatabase, createTestDatabase, usingPostgres, type TestDatabase } from "./helpers/db";

let migrated: TestDatabase;
let empty: TestDatabase;
beforeAll(async () => {
  [migrated, empty] = await Promise.all([createTestDatabase(), createEmptyTestDatabase()]);
});
afterAll(async () => {
  await Promise.all([migrated?.drop(), empty?.drop()]);
});

describe.skipIf(!usingPostgres)("the console's Postgres connections", () => {
  it("run with JIT off on every connection of the pool, raw SQL, sessions and Prisma alike (lib/db/client.ts)", async () => {
    const jit = async (q: Promise<{ jit: string }[]>) => (await q)[0].jit;
    const many = await Promise.all(Array.from({ length: 6 }, () => jit(migrated.sql.query(`SELECT current_setting('jit') AS jit, pg_sleep(0.05)`))));
    expect(new Set(many)).toEqual(new Set(["off"]));
    expect(await migrated.withSession((s) => jit(s.query(`SELECT current_setting('jit') AS jit`)))).toBe("off");
    expect(await jit(migrated.prisma.$queryRawUnsafe(`SELECT current_setting('jit') AS jit`))).toBe("off");
  });
});

describe("healthReport", () => {
  it("ok with the mode and migration state of a migrated database", async () => {
    const report = await healthReport(async () => migrated);
    expect(report.status).toBe("ok");
    expect(report.database).toMatchObject({ mode: migrated.mode, reachable: true });
    expect(report.migrations).toMatchObject({ state: "up_to_date", pending: [], modified: [], failed: [] });
    expect(report.migrations!.applied).toBeGreaterThan(0);
  });

  it("names the engine that answers: PGlite embedded, PostgreSQL, MariaDB or MySQL", async () => {
    const report = await healthReport(async () => migrated);
    const engines = { embedded: ["PGlite"], postgres: ["PostgreSQL"], mysql: ["MariaDB", "MySQL"] }[migrated.mode];
    expect(engines).toContain(report.database.engine);
    expect(report.database.version).toMatch(/^\d+(\.\d+)+/);
  });

  it("degraded with the pending migrations on an unmigrated database, and writes nothing", async () => {
    const report = await healthReport(async () => empty);
    expect(report.status).toBe("degraded");
    expect(report.migrations!.state).toBe("pending");
    expect(report.migrations!.pending.length).toBeGreaterThan(0);
    const [t] = await empty.sql.query<{ t: string | null }>(
      byDialect(empty, {
        postgres: `SELECT to_regclass('"_prisma_migrations"')::text AS t`,
        mysql: `SELECT (SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '_prisma_migrations') AS t`,
      }),
    );
    expect(t.t).toBeNull();
  });

  it("unavailable when the database cannot be opened, without leaking connection details", async () => {
    const report = await healthReport(async () => {
      throw Object.assign(new Error("connect ECONNREFUSED 10.1.2.3:5432 password=secret"), { code: "ECONNREFUSED" });
    });
    expect(report.status).toBe("unavailable");
    expect(JSON.stringify(report)).not.toMatch(/10\.1\.2\.3|secret/);
  });
});

describe("GET /api/health", () => {
  it("refuses unknown or repeated query parameters and other methods with problem+json, before touching the database", async () => {
    const route = await import("@/app/api/health/route");
    for (const url of ["http://x/api/health?verbose=1", "http://x/api/health?a=1&a=2"]) {
      const res = await route.GET(new Request(url));
      expect(res.status).toBe(400);
      expect(res.headers.get("content-type")).toBe("application/problem+json");
      const problem = await res.json();
      expect(problem).toMatchObject({ status: 400, title: "Invalid input", instance: "/api/health" });
      expect(problem.detail).toMatch(/verbose|more than once/);
    }
    const post = await route.POST(new Request("http://x/api/health", { method: "POST", body: "{}" }));
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET");
    expect((await post.json()).type).toMatch(/method-not-allowed$/);
  });

  it("maps unexpected errors to a 500 problem without internals", async () => {
    const handler = apiRoute({ access: "public" }, async () => {
      throw new Error("relation secret_table does not exist");
    });
    const res = await handler(new Request("http://x/api/thing"));
    expect(res.status).toBe(500);
    const body = await res.text();
    expect(body).not.toContain("secret_table");
    expect(res.headers.get("x-request-id")).toBeTruthy();
  });
});
