import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { apiRoute } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { reasonSchema } from "@/lib/kernel/input";
import { buildOpenApiDocument, HTTP_METHODS } from "@/lib/api/openapi";
import { provideDatabase } from "@/lib/db/client";
import { GET as openApiGet } from "@/app/api/v1/openapi.json/route";
import { ROUTE_MODULES } from "@/app/api/v1/openapi.json/route-modules";
// @ts-expect-error plain ESM script without types
import { manifestSource } from "../scripts/route-manifest.mjs";
import { createTestDatabase, type TestDatabase } from "./helpers/db";
import { call, json, tokenFor } from "./helpers/records-api";
import { StateConflictError } from "@/lib/kernel/errors";
import { byDialect } from "@/lib/db/dialect";
import { queryBound } from "./helpers/sql";

const ROOT = path.resolve(import.meta.dirname, "..");

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
  provideDatabase(db);
});
afterAll(() => db?.drop());

describe("OpenAPI document", () => {
  it("lists every API route module (the generated manifest is fresh: npm run routes:manifest)", () => {
    expect(readFileSync(path.join(ROOT, "app/api/v1/openapi.json/route-modules.ts"), "utf8")).toBe(manifestSource());
  });

  it("is served as OpenAPI 3.1, describes every apiRoute operation with its permission, schemas and idempotency", async () => {
    const res = await call(openApiGet as never, "/api/v1/openapi.json", null);
    expect(res.status).toBe(200);
    const doc = await json(res);
    expect(doc.openapi).toBe("3.1.0");
    let operations = 0;
    for (const route of ROUTE_MODULES) {
      for (const method of HTTP_METHODS) {
        const handler = route.module[method];
        if (typeof handler !== "function" || !handler.spec) continue;
        const p = route.path.replace(/\[(\w+)\]/g, "{$1}");
        const op = doc.paths[p]?.[method.toLowerCase()];
        expect(op, `${method} ${p}`).toBeTruthy();
        operations++;
        expect(op["x-permission"]).toBe(handler.access);
        expect(op.summary, `${method} ${p} needs a summary in its apiRoute spec`).not.toMatch(/^(GET|POST|PUT|PATCH|DELETE) /);
        for (const name of p.match(/\{(\w+)\}/g) ?? []) {
          expect(
            op.parameters.some((x: { in: string; name: string }) => x.in === "path" && `{${x.name}}` === name),
            `${method} ${p} documents ${name}`,
          ).toBe(true);
        }
        if (handler.spec.idempotent) {
          expect(
            op.parameters.some((x: { in: string; name: string; required: boolean }) => x.in === "header" && x.name === "Idempotency-Key" && x.required),
          ).toBe(true);
          expect(op.responses["422"]).toBeTruthy();
        }
        if (handler.spec.body) expect(op.requestBody.content["application/json"].schema.type).toBe("object");
        if (handler.access !== "public") expect(op.security.length).toBeGreaterThan(0);
      }
    }
    expect(operations).toBeGreaterThan(20);
    // Every mutation of the operator actions (issue 5) is idempotent.
    const operatorActions = Object.values(doc.paths)
      .flatMap((ops: any) => Object.values(ops))
      .filter((op: any) => /^(records\.(resolve|reconcile|legal_hold)|compensations\.|purges\.|retention\.|legal_holds\.)/.test(op["x-audit-action"] ?? ""));
    for (const op of operatorActions as any[]) expect(op["x-idempotent"], op.operationId).toBe(true);
  });

  it("turns zod schemas into JSON Schema for inputs (query, path, body)", () => {
    const handler = apiRoute(
      {
        access: "records.resolve",
        summary: "test",
        params: z.object({ id: z.string().regex(/^\d+$/) }),
        query: z.object({ limit: z.coerce.number().int().min(1).max(100).optional() }),
        body: z.object({ reason: reasonSchema, outcome: z.enum(["completed", "failed"]) }),
        action: "records.resolve",
        idempotent: true,
      },
      async () => new Response(null),
    );
    const doc = buildOpenApiDocument([{ path: "/api/v1/things/[id]", module: { POST: handler } }]);
    const op = (doc.paths as any)["/api/v1/things/{id}"].post;
    expect(op.parameters.map((p: any) => `${p.in}:${p.name}`)).toEqual(["path:id", "query:limit", "header:Idempotency-Key"]);
    expect(op.requestBody.content["application/json"].schema.properties.outcome.enum).toEqual(["completed", "failed"]);
    expect(op.requestBody.content["application/json"].schema.required).toEqual(["reason", "outcome"]);
  });
});

describe("idempotent console mutations (lib/api/idempotent.ts through apiRoute)", () => {
  let executions = 0;
  const handler = apiRoute(
    {
      access: "records.resolve",
      summary: "test",
      action: "records.test_action",
      idempotent: true,
      body: z.object({ reason: reasonSchema, n: z.number().int() }),
    },
    async ({ body }) => {
      executions++;
      await new Promise((r) => setTimeout(r, 50));
      if (body.n < 0) throw new StateConflictError("negative", { n: body.n });
      return jsonResponse({ done: body.n, execution: executions }, { status: 201 });
    },
  );
  const post = (token: string, key: string | null, body: unknown) =>
    call(handler as never, "/api/v1/test", token, {
      method: "POST",
      headers: { "content-type": "application/json", ...(key === null ? {} : { "idempotency-key": key }) },
      body: JSON.stringify(body),
    });

  it("400 without a key; replays the stored answer for the same key; 422 for another body; keys are per user", async () => {
    const { token } = await tokenFor(db, ["operator"]);
    const other = await tokenFor(db, ["operator"]);
    executions = 0;
    const missing = await post(token, null, { reason: "because", n: 1 });
    expect(missing.status).toBe(400);
    expect((await json(missing)).type).toMatch(/idempotency-key-missing/);
    expect(executions).toBe(0);

    const first = await post(token, "k-1", { reason: "because", n: 1 });
    expect(first.status).toBe(201);
    const firstBody = await first.text();
    const again = await post(token, "k-1", { reason: "because", n: 1 });
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await again.text()).toBe(firstBody);
    expect(executions).toBe(1);

    const changed = await post(token, "k-1", { reason: "because", n: 2 });
    expect(changed.status).toBe(422);
    expect(executions).toBe(1);

    // Another user's identical key is their own.
    expect((await post(other.token, "k-1", { reason: "because", n: 1 })).status).toBe(201);
    expect(executions).toBe(2);

    const rows = await db.sql.query<{ scope: string; operation: string; status: string }>(
      `SELECT user_id AS scope, action AS operation, status FROM console_requests WHERE action = 'records.test_action' ORDER BY id`,
    );
    expect(rows.map((r) => r.status)).toEqual(["completed", "completed"]);
    expect(new Set(rows.map((r) => r.scope)).size).toBe(2);
    // The console's own requests never land in the writers' tables.
    const shared = await db.sql.query(`SELECT 1 FROM idempotency_records UNION ALL SELECT 1 FROM idempotency_events`);
    expect(shared).toEqual([]);
  });

  it("stores refusals too: a retry of a refused attempt replays the 409", async () => {
    const { token } = await tokenFor(db, ["operator"]);
    executions = 0;
    const a = await post(token, "neg", { reason: "because", n: -1 });
    expect(a.status).toBe(409);
    const b = await post(token, "neg", { reason: "because", n: -1 });
    expect(b.status).toBe(409);
    expect(b.headers.get("idempotent-replayed")).toBe("true");
    expect(b.headers.get("content-type")).toMatch(/problem\+json/);
    expect(executions).toBe(1);
  });

  it("a key left processing by a process that died is taken over after the lease by the same request, never by another", async () => {
    const { token, userId } = await tokenFor(db, ["operator"]);
    executions = 0;
    const first = await post(token, "died", { reason: "because", n: 3 });
    expect(first.status).toBe(201);
    // As if the process had died between the action and storing its answer, 10 minutes ago.
    await queryBound(
      db.sql,
      `UPDATE console_requests SET status = 'processing', response_code = NULL, response_body = NULL, updated_at = ${byDialect(db, { postgres: "now() - interval '10 minutes'", mysql: "UTC_TIMESTAMP(6) - INTERVAL 10 MINUTE" })} WHERE user_id = $1 AND idempotency_key = 'died'`,
      [userId],
    );
    expect((await post(token, "died", { reason: "because", n: 4 })).status).toBe(422); // another request: still refused
    const again = await post(token, "died", { reason: "because", n: 3 });
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBeNull();
    expect(executions).toBe(2);
    // Within the lease, a retry is told the first is still in progress.
    await queryBound(
      db.sql,
      `UPDATE console_requests SET status = 'processing', updated_at = ${byDialect(db, { postgres: "now()", mysql: "UTC_TIMESTAMP(6)" })} WHERE user_id = $1 AND idempotency_key = 'died'`,
      [userId],
    );
    expect((await post(token, "died", { reason: "because", n: 3 })).status).toBe(409);
  });

  it("concurrent requests with one key execute once; the others replay or get 409 in progress", async () => {
    const { token } = await tokenFor(db, ["operator"]);
    executions = 0;
    const answers = await Promise.all(Array.from({ length: 20 }, () => post(token, "same", { reason: "because", n: 7 })));
    expect(executions).toBe(1);
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 201).length).toBeGreaterThanOrEqual(1);
    for (const r of answers) {
      if (r.status === 201) continue;
      expect(r.status).toBe(409);
      expect((await json(r)).type).toMatch(/idempotency-request-in-progress/);
    }
    const fresh = answers.filter((r) => r.status === 201 && r.headers.get("idempotent-replayed") !== "true");
    expect(fresh.length).toBe(1);
  });
});
