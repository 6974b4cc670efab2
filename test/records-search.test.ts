import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { provideDatabase } from "@/lib/db/client";
import { generateDemoTraffic } from "@/lib/demo/traffic";
import { IdempotencyStore } from "@/lib/idempotency";
import { searchRecords, type SearchInput } from "@/lib/records/search";
import { SEARCH_FIELDS, type SearchField } from "@/lib/records/vocabulary";
import { createTestDatabase, type TestDatabase } from "./helpers/db";
import { call, json, tokenFor } from "./helpers/records-api";
import { decodeCursor } from "@/lib/db/paging";
import { paramList } from "@/lib/db/params";

let db: TestDatabase;
const now = new Date("2026-11-30T12:00:00.000Z");
const FIELDS = Object.keys(SEARCH_FIELDS) as SearchField[];

beforeAll(async () => {
  db = await createTestDatabase();
  await generateDemoTraffic(db, { seed: 31, requests: 500, days: 10, now });
  provideDatabase(db);
});
afterAll(() => db?.drop());

/** Every page, following nextCursor; checks the order and that no row repeats. */
async function allPages(input: SearchInput): Promise<string[]> {
  const ids: string[] = [];
  let cursor: SearchInput["cursor"];
  let last: { t: number; id: bigint } | null = null;
  for (let page = 0; page < 1000; page++) {
    const r = await searchRecords(db.sql, { ...input, cursor });
    for (const item of r.items) {
      // One field searched: that field matched; the listing matches none.
      if (input.field) expect(item.matched).toEqual([input.field]);
      if (input.q === undefined) expect(item.matched).toEqual([]);
      const here = { t: item.createdAt.getTime(), id: item.id };
      if (last) expect(here.t < last.t || (here.t === last.t && here.id < last.id)).toBe(true);
      last = here;
      ids.push(item.id.toString());
    }
    if (!r.nextCursor) return ids;
    expect(r.items).toHaveLength(input.limit ?? 50);
    cursor = decodeCursor(r.nextCursor)!;
  }
  throw new Error("too many pages");
}

/** The truth: the raw table, ordered like the API. `where` takes its placeholders from `ph` (PostgreSQL's $n, MySQL's ?). */
async function sqlIds(where: string | ((ph: (value: unknown) => string) => string), params: unknown[] = []): Promise<string[]> {
  if (typeof where === "function") {
    const p = paramList(db.dialect);
    where = where((value) => p.add(value));
    params = p.values;
  }
  const rows = await db.sql.query<{ id: bigint }>(`SELECT id FROM idempotency_records WHERE ${where} ORDER BY created_at DESC, id DESC`, params);
  return rows.map((r) => r.id.toString());
}

/** A few real values of a column: the most frequent ones and some rare ones. */
async function samples(column: string): Promise<string[]> {
  const rows = await db.sql.query<{ v: string }>(
    `(SELECT ${column} AS v FROM idempotency_records WHERE ${column} IS NOT NULL GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 2)
     UNION
     (SELECT ${column} FROM idempotency_records WHERE ${column} IS NOT NULL ORDER BY id LIMIT 2 OFFSET 37)`,
  );
  return rows.map((r) => r.v);
}

describe("record search", () => {
  it("exact search by each field equals a direct lookup in the raw table, across pages", async () => {
    for (const field of FIELDS) {
      const column = SEARCH_FIELDS[field];
      const values = await samples(column);
      expect(values.length, field).toBeGreaterThan(0);
      for (const v of values) {
        const expected = await sqlIds((ph) => `${column} = ${ph(v)}`);
        expect(expected.length).toBeGreaterThan(0);
        expect(await allPages({ q: v, field, limit: 7 }), `${field} = ${v}`).toEqual(expected);
      }
    }
    expect(await allPages({ q: "no-such-value", field: "key" })).toEqual([]);
  });

  it("prefix search equals starts-with over the raw table", async () => {
    for (const field of FIELDS) {
      const column = SEARCH_FIELDS[field];
      for (const v of await samples(column)) {
        for (const n of [3, Math.max(4, v.length - 3)]) {
          const prefix = v.slice(0, n);
          const expected = await sqlIds((ph) => `left(${column}, ${ph(prefix.length)}) = ${ph(prefix)}`);
          expect(await allPages({ q: prefix, field, match: "prefix", limit: 50 }), `${field} ^${prefix}`).toEqual(expected);
        }
      }
    }
  });

  it("matches %, _ and \\ in a prefix literally", async () => {
    const store = new IdempotencyStore(db.prisma);
    const keys = ["lit%1", "lit_1", "litX1", "lit\\1", "lit%%", "litA%"];
    for (const key of keys) {
      const r = await store.begin({ scope: "tenant:wild", operation: "create_order", key, payload: { key } });
      expect(r.outcome).toBe("owner");
    }
    const keysOf = async (q: string) => (await searchRecords(db.sql, { q, field: "key", match: "prefix" })).items.map((i) => i.idempotencyKey).sort();
    expect(await keysOf("lit%")).toEqual(["lit%%", "lit%1"]);
    expect(await keysOf("lit_")).toEqual(["lit_1"]);
    expect(await keysOf("lit\\")).toEqual(["lit\\1"]);
    expect(await keysOf("lit")).toEqual([...keys].sort());
    expect(await keysOf("litA%")).toEqual(["litA%"]);
  });

  it("without a field, searches all six and says which matched", async () => {
    const [ref] = await db.sql.query<{ v: string }>(
      `SELECT provider_reference AS v FROM idempotency_records WHERE provider_reference IS NOT NULL
        GROUP BY 1 HAVING count(*) > 1 ORDER BY 1 LIMIT 1`,
    );
    const expected = await sqlIds((ph) => FIELDS.map((f) => `${SEARCH_FIELDS[f]} = ${ph(ref.v)}`).join(" OR "));
    expect(expected.length).toBeGreaterThan(1); // the capture and its webhook
    const r = await searchRecords(db.sql, { q: ref.v });
    expect(r.items.map((i) => i.id.toString())).toEqual(expected);
    for (const item of r.items) expect(item.matched).toContain("provider_reference");

    const [cor] = await db.sql.query<{ v: string }>(
      `SELECT correlation_id AS v FROM idempotency_records WHERE correlation_id LIKE 'cor_%' ORDER BY id LIMIT 1`,
    );
    const prefix = cor.v.slice(0, 10);
    const any = (ph: (value: unknown) => string) => FIELDS.map((f) => `left(${SEARCH_FIELDS[f]}, ${ph(prefix.length)}) = ${ph(prefix)}`).join(" OR ");
    expect(await allPages({ q: prefix, match: "prefix", limit: 3 })).toEqual(await sqlIds(any));
  });

  it("filters by status and operation; without q lists the newest first", async () => {
    expect(await allPages({ status: "pending", limit: 2 })).toEqual(await sqlIds(`status = 'pending'`, []));
    expect(await allPages({ operation: "capture_payment", status: "completed", limit: 40 })).toEqual(
      await sqlIds(`operation = 'capture_payment' AND status = 'completed'`, []),
    );
    expect(await allPages({ q: "tenant:acme", field: "scope", operation: "issue_invoice", limit: 25 })).toEqual(
      await sqlIds(`scope = 'tenant:acme' AND operation = 'issue_invoice'`, []),
    );
    expect(await allPages({ limit: 200 })).toEqual(await sqlIds("TRUE", []));
  });
});

describe("GET /api/v1/records", () => {
  it("answers JSON: ids and amounts as strings, times in ISO 8601, a cursor that continues", async () => {
    const route = await import("@/app/api/v1/records/route");
    const { token } = await tokenFor(db, ["viewer"]);
    const res = await call(route.GET, "/api/v1/records?q=tenant%3Aglobex&field=scope&limit=5", token);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    const body = await json(res);
    expect(body.items).toHaveLength(5);
    const item = body.items[0];
    expect(typeof item.id).toBe("string");
    expect(item.amountMinor === null || /^\d+$/.test(item.amountMinor)).toBe(true);
    expect(item.createdAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(item).not.toHaveProperty("responseBody");
    expect(item).not.toHaveProperty("responseHeaders");
    const next = await json(await call(route.GET, `/api/v1/records?q=tenant%3Aglobex&field=scope&limit=5&cursor=${body.nextCursor}`, token));
    const expected = await sqlIds(`scope = 'tenant:globex'`, []);
    expect([...body.items, ...next.items].map((i: { id: string }) => i.id)).toEqual(expected.slice(0, 10));
  });

  it("refuses bad query parameters with 400 problem+json naming them", async () => {
    const route = await import("@/app/api/v1/records/route");
    const { token } = await tokenFor(db, ["viewer"]);
    const bad: [string, RegExp][] = [
      ["?q=x&bogus=1", /bogus/],
      ["?q=x&limit=0", /limit/],
      ["?q=x&limit=201", /limit/],
      ["?q=x&limit=ten", /limit/],
      ["?q=x&match=fuzzy", /match/],
      ["?q=x&field=email", /field/],
      ["?field=key", /field needs q/],
      ["?q=x&cursor=not-a-cursor", /cursor/],
      ["?q=x&status=lost", /status/],
      ["?q=x&operation=Capture", /operation/],
      ["?q=a&q=b", /more than once/],
      [`?q=${"k".repeat(256)}`, /q/],
    ];
    for (const [qs, detail] of bad) {
      const res = await call(route.GET, `/api/v1/records${qs}`, token);
      expect(res.status, qs).toBe(400);
      expect(res.headers.get("content-type")).toBe("application/problem+json");
      const problem = await json(res);
      expect(problem).toMatchObject({ status: 400, title: "Invalid input", instance: "/api/v1/records" });
      expect(problem.detail, qs).toMatch(detail);
    }
  });

  it("needs authentication and records.read; other methods get 405", async () => {
    const route = await import("@/app/api/v1/records/route");
    expect((await call(route.GET, "/api/v1/records?q=x", null)).status).toBe(401);
    const { token } = await tokenFor(db, ["viewer"], ["stats.read"]);
    const forbidden = await call(route.GET, "/api/v1/records?q=x", token);
    expect(forbidden.status).toBe(403);
    expect(forbidden.headers.get("content-type")).toBe("application/problem+json");
    const post = await call(route.POST, "/api/v1/records", null, { method: "POST", body: "{}" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET");
  });
});
