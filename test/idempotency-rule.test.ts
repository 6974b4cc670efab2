import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROUTE_MODULES } from "@/app/api/v1/openapi.json/route-modules";
import { buildOpenApiDocument, HTTP_METHODS } from "@/lib/api/openapi";
import { ROLES } from "@/lib/auth/permissions";
import { provideDatabase } from "@/lib/db/client";
import { byDialect } from "@/lib/db/dialect";
import { createTestDatabase, type TestDatabase } from "./helpers/db";
import { insertReturningId, queryBound } from "./helpers/sql";
import { call, json, tokenFor } from "./helpers/records-api";

/**
 * One rule for the API's mutations (issue 11): operator actions require an
 * Idempotency-Key; every other mutation (users, tokens, views, reveal, sessions)
 * accepts one and honours it — a retry with the same key replays the first
 * answer, the same key with another body is a 422 — and runs without one.
 * Answers that carry a secret shown once are stored without it.
 */

let db: TestDatabase;
let admin: { token: string; userId: bigint };
beforeAll(async () => {
  db = await createTestDatabase();
  provideDatabase(db);
  admin = await tokenFor(db, [...ROLES]);
});
afterAll(() => db?.drop());

const send = (body: unknown, key?: string, method = "POST") => ({
  method,
  headers: { "content-type": "application/json", ...(key ? { "idempotency-key": key } : {}) },
  body: JSON.stringify(body),
});

describe("every mutation takes an Idempotency-Key", () => {
  it("POST /api/v1/users: replayed under its key (one user), a changed body under the same key is a 422, no key simply runs", async () => {
    const { POST } = await import("@/app/api/v1/users/route");
    const key = randomUUID();
    const body = { email: "ida@example.test", roles: ["viewer"], reason: "new colleague" };
    const first = await call(POST, "/api/v1/users", admin.token, send(body, key));
    expect(first.status).toBe(201);
    const again = await call(POST, "/api/v1/users", admin.token, send(body, key));
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    const replayed = await json(again);
    expect(replayed).toEqual(await json(first));
    expect(await db.prisma.consoleUser.count({ where: { email: "ida@example.test" } })).toBe(1);
    expect(await db.prisma.auditEntry.count({ where: { action: "users.create", outcome: "done", targetId: replayed.user.id } })).toBe(1);
    expect((await call(POST, "/api/v1/users", admin.token, send({ ...body, roles: ["admin"] }, key))).status).toBe(422);
    // Without a key: it runs (here: refused as a duplicate email, a 409 of its own).
    expect((await call(POST, "/api/v1/users", admin.token, send(body))).status).toBe(409);
    expect((await call(POST, "/api/v1/users", admin.token, send({ ...body, email: "jo@example.test" }))).status).toBe(201);
  });

  it("POST /api/v1/views and DELETE /api/v1/views/{id} honour the key too", async () => {
    const views = await import("@/app/api/v1/views/route");
    const key = randomUUID();
    const body = { page: "/records", name: "mine", query: "status=pending" };
    const a = await call(views.POST, "/api/v1/views", admin.token, send(body, key));
    const b = await call(views.POST, "/api/v1/views", admin.token, send(body, key));
    expect([a.status, b.status, b.headers.get("idempotent-replayed")]).toEqual([201, 201, "true"]);
    expect(await db.prisma.savedView.count({ where: { userId: admin.userId } })).toBe(1);
    const id = (await json(a)).view.id;
    const one = await import("@/app/api/v1/views/[id]/route");
    const delKey = randomUUID();
    const d1 = await call(one.DELETE, `/api/v1/views/${id}`, admin.token, { method: "DELETE", headers: { "idempotency-key": delKey } }, { id });
    const d2 = await call(one.DELETE, `/api/v1/views/${id}`, admin.token, { method: "DELETE", headers: { "idempotency-key": delKey } }, { id });
    expect([d1.status, d2.status, d2.headers.get("idempotent-replayed")]).toEqual([200, 200, "true"]);
  });

  it("POST /api/v1/tokens: a replay does not carry the token again (never stored), and creates no second token", async () => {
    const { POST } = await import("@/app/api/v1/tokens/route");
    const key = randomUUID();
    const body = { name: "ci", scopes: ["stats.read"], reason: "dashboards" };
    const first = await call(POST, "/api/v1/tokens", admin.token, send(body, key));
    expect(first.status).toBe(201);
    const created = await json(first);
    const plaintext = created.token as string;
    expect(plaintext).toMatch(/^ic_/);
    const replay = await call(POST, "/api/v1/tokens", admin.token, send(body, key));
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    const replayed = await json(replay);
    expect(replayed).toMatchObject({ token: null, withheld: ["token"], apiToken: created.apiToken });
    expect(await db.prisma.apiToken.count({ where: { name: "ci" } })).toBe(1);
    // The plaintext is in no stored answer (whichever table keeps the console's stored answers).
    const tables = await db.sql.query<{ t: string }>(
      `SELECT table_name AS t FROM information_schema.columns WHERE table_schema = ${byDialect(db, { postgres: "'public'", mysql: "DATABASE()" })} AND column_name = 'response_body'`,
    );
    expect(tables.length).toBeGreaterThan(0);
    for (const { t } of tables) {
      const [{ n }] = await queryBound<{ n: number }>(
        db.sql,
        byDialect(db, {
          postgres: `SELECT count(*)::int AS n FROM "${t}" WHERE response_body LIKE '%' || $1 || '%'`,
          mysql: `SELECT CAST(COUNT(*) AS SIGNED) AS n FROM "${t}" WHERE response_body LIKE CONCAT('%', $1, '%')`,
        }),
        [plaintext],
      );
      expect(Number(n), t).toBe(0);
    }
  });

  it("POST /api/v1/records/{id}/reveal: a replay withholds the revealed response; the reveal is audited once", async () => {
    const id = await insertReturningId(
      db.sql,
      `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, response_code, response_body, expires_at)
       VALUES ('tenant:r', 'capture_payment', 'k-reveal', repeat('a', 64), 'completed', 200, '{"card":"4242424242424242"}', ${byDialect(db, { postgres: "now() + interval '1 day'", mysql: "NOW(6) + INTERVAL 1 DAY" })})`,
    );
    const { POST } = await import("@/app/api/v1/records/[id]/reveal/route");
    const key = randomUUID();
    const first = await call(POST, `/api/v1/records/${id}/reveal`, admin.token, send({ reason: "customer dispute" }, key), { id: String(id) });
    expect(first.status).toBe(200);
    expect(JSON.stringify(await json(first))).toContain("4242424242424242");
    const replay = await call(POST, `/api/v1/records/${id}/reveal`, admin.token, send({ reason: "customer dispute" }, key), { id: String(id) });
    const body = await json(replay);
    expect(body).toMatchObject({ response: null, withheld: ["response"] });
    expect(JSON.stringify(body)).not.toContain("4242424242424242");
    expect(await db.prisma.auditEntry.count({ where: { action: "records.reveal", outcome: "done", targetId: String(id) } })).toBe(1);
  });

  it("the OpenAPI document says so: required on operator actions, optional on every other mutation", () => {
    const doc = buildOpenApiDocument(ROUTE_MODULES);
    let mutations = 0;
    for (const route of ROUTE_MODULES) {
      for (const method of HTTP_METHODS) {
        const handler = route.module[method];
        if (method === "GET" || typeof handler !== "function" || !handler.spec) continue;
        mutations++;
        const op = (doc.paths as Record<string, Record<string, { parameters?: { name: string; required: boolean }[] }>>)[
          route.path.replace(/\[(\w+)\]/g, "{$1}")
        ][method.toLowerCase()];
        const key = op.parameters?.find((p) => p.name === "Idempotency-Key");
        expect(key, `${method} ${route.path}`).toBeTruthy();
        expect(key!.required, `${method} ${route.path}`).toBe(!!handler.spec.idempotent);
      }
    }
    expect(mutations).toBeGreaterThan(20);
  });
});
