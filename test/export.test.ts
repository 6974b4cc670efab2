import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseCsv } from "@/lib/kernel/csv";
import { provideDatabase } from "@/lib/db/client";
import { generateDemoTraffic, type DemoSummary } from "@/lib/demo/traffic";
import { IdempotencyStore } from "@/lib/idempotency";
import { collectExport, exportColumns, EXPORT_LISTS } from "@/lib/views/export";
import { createTestDatabase, type TestDatabase } from "./helpers/db";
import { call, json, tokenFor } from "./helpers/records-api";

/**
 * CSV export of the lists (/api/v1/export/{records,queue,duplicates,conflicts}):
 * the rows are those of the list API with the same filters, every page; permissioned
 * (records.export and the list's own permission) and audited; spreadsheet formulas
 * neutralised; stored responses never included.
 */

let db: TestDatabase;
let demo: DemoSummary;
let exportRoute: typeof import("@/app/api/v1/export/[list]/route");
let support: { token: string; userId: bigint };
const now = new Date();
const from = new Date(now.getTime() - 12 * 86_400_000).toISOString();
const to = new Date(now.getTime() + 60_000).toISOString();

const SECRET_CARD = "4111111111111111";
const SECRET_TEXT = "never-in-an-export-7f3a";
const FORMULA_KEYS = ['=HYPERLINK("http://evil.example","x")', "+1+2", "-3+cmd|'/Ccalc'!A0", "@SUM(A1:A9)", 'plain,with"quotes"'];

beforeAll(async () => {
  db = await createTestDatabase();
  demo = await generateDemoTraffic(db, { seed: 83, requests: 500, days: 10, now });
  provideDatabase(db);
  exportRoute = await import("@/app/api/v1/export/[list]/route");
  support = await tokenFor(db, ["support"]);
  // Keys a spreadsheet would run as formulas, with a stored response holding secrets.
  const store = new IdempotencyStore(db.prisma);
  for (const key of FORMULA_KEYS) {
    const r = await store.begin({ scope: "tenant:csv", operation: "capture_payment", key, payload: { key }, amountMinor: 1299, currency: "EUR" });
    if (r.outcome !== "owner") throw new Error("fixture: expected a new record");
    await store.complete(r.record.id, {
      code: 201,
      headers: [
        ["Content-Type", "application/json"],
        ["Set-Cookie", `sid=${SECRET_TEXT}`],
      ],
      body: JSON.stringify({ card_number: SECRET_CARD, note: SECRET_TEXT, email: "jane@example.com" }),
      providerReference: `ch_${key.length}`,
    });
  }
});
afterAll(() => db?.drop());

async function exportCsv(list: string, qs: string, token = support.token) {
  const res = await call(exportRoute.GET, `/api/v1/export/${list}${qs ? `?${qs}` : ""}`, token, {}, { list });
  const text = await res.text();
  return { res, text, rows: res.status === 200 ? parseCsv(text) : [] };
}

/** Every page of a list API, following nextCursor. */
async function apiPages<T = any>(
  route: { GET: Parameters<typeof call>[0] },
  path: string,
  qs: string,
  items: (body: any) => T[],
  next: (body: any) => string | null,
): Promise<T[]> {
  const out: T[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 500; i++) {
    const params = new URLSearchParams(qs);
    params.set("limit", "37");
    if (cursor) params.set("cursor", cursor);
    const res = await call(route.GET, `${path}?${params}`, support.token);
    expect(res.status, await res.clone().text()).toBe(200);
    const body = await json(res);
    out.push(...items(body));
    cursor = next(body);
    if (!cursor) return out;
  }
  throw new Error("too many pages");
}

/** The CSV rows as objects keyed by the header. */
function objects(rows: string[][]): Record<string, string>[] {
  const [header, ...data] = rows;
  return data.map((r) => Object.fromEntries(header.map((h, i) => [h, r[i]])));
}

const lastAudit = () => db.prisma.auditEntry.findFirst({ orderBy: { id: "desc" } });

describe("CSV export equals the list API", () => {
  it("records (search): same rows, same order, every column, for a listing and a prefix search", async () => {
    const records = await import("@/app/api/v1/records/route");
    const [sample] = await db.sql.query<{ k: string }>(
      `SELECT idempotency_key AS k FROM idempotency_records WHERE scope <> 'tenant:csv' ORDER BY id LIMIT 1 OFFSET 11`,
    );
    for (const qs of ["", `q=${encodeURIComponent(sample.k.slice(0, 2))}&field=key&match=prefix`, "status=pending", "q=tenant%3Aacme&field=scope"]) {
      const { res, rows } = await exportCsv("records", qs);
      expect(res.status).toBe(200);
      expect(rows[0]).toEqual(exportColumns("records"));
      const api = await apiPages(
        records,
        "/api/v1/records",
        qs,
        (b) => b.items,
        (b) => b.nextCursor,
      );
      expect(api.length, qs).toBeGreaterThan(0);
      const csv = objects(rows);
      expect(
        csv.map((r) => r.id),
        qs,
      ).toEqual(api.map((r: any) => r.id));
      for (const [i, r] of api.entries()) {
        expect(csv[i]).toMatchObject({
          created_at: r.createdAt,
          updated_at: r.updatedAt,
          status: r.status,
          scope: r.scope,
          operation: r.operation,
          amount_minor: r.amountMinor ?? "",
          currency: r.currency ?? "",
          provider_reference: r.providerReference ?? "",
          correlation_id: r.correlationId ?? "",
          matched: r.matched.join(";"),
        });
        if (!/^[=+\-@]/.test(r.idempotencyKey)) expect(csv[i].idempotency_key).toBe(r.idempotencyKey);
      }
      expect(res.headers.get("x-export-rows")).toBe(String(api.length));
      expect(res.headers.get("x-export-truncated")).toBeNull();
    }
  });

  it("queue: same rows (kind, age, reconciliation) across pages", async () => {
    const queue = await import("@/app/api/v1/queue/route");
    for (const qs of ["", "kind=pending&sort=age_asc", "kind=stuck"]) {
      const { res, rows } = await exportCsv("queue", qs);
      expect(res.status).toBe(200);
      const api = await apiPages(
        queue,
        "/api/v1/queue",
        qs,
        (b) => b.items,
        (b) => b.nextCursor,
      );
      expect(api.length, qs).toBeGreaterThan(0);
      const csv = objects(rows);
      expect(
        csv.map((r) => [r.id, r.kind, r.reconciliation_state, r.reconciliation_attempts]),
        qs,
      ).toEqual(api.map((r: any) => [r.id, r.kind, r.reconciliation?.state ?? "", r.reconciliation ? String(r.reconciliation.attempts) : ""]));
    }
  });

  it("duplicates: one row per record of each cluster, clusters in the API's order", async () => {
    const duplicates = await import("@/app/api/v1/duplicates/route");
    const qs = `from=${from}&to=${to}`;
    const { res, rows } = await exportCsv("duplicates", qs);
    expect(res.status).toBe(200);
    const apiRes = await call(duplicates.GET, `/api/v1/duplicates?${qs}&limit=500`, support.token);
    const api = await json(apiRes);
    expect(api.clusters.length).toBeGreaterThanOrEqual(demo.scenarios.doubleSubmitPairs);
    expect(api.clusters.length).toBeGreaterThan(0);
    const expected = api.clusters.flatMap((c: any, i: number) =>
      c.records.map((r: any) => [String(i + 1), r.id, r.providerReference ?? "", c.basis.join(";")]),
    );
    expect(objects(rows).map((r) => [r.cluster, r.id, r.provider_reference, r.cluster_basis])).toEqual(expected);
  });

  it("conflicts: the drill-down events, both hashes, across pages", async () => {
    const conflicts = await import("@/app/api/v1/conflicts/route");
    const qs = `from=${from}&to=${to}`;
    const { res, rows } = await exportCsv("conflicts", qs);
    expect(res.status).toBe(200);
    const api = await apiPages(
      conflicts,
      "/api/v1/conflicts",
      qs,
      (b) => b.events.items,
      (b) => b.events.nextCursor,
    );
    expect(api.length).toBe(demo.scenarios.conflicts);
    expect(objects(rows).map((r) => [r.event_id, r.idempotency_key, r.expected_payload_hash, r.received_payload_hash])).toEqual(
      api.map((e: any) => [e.id, e.idempotencyKey, e.expectedPayloadHash ?? "", e.receivedPayloadHash ?? ""]),
    );
  });

  it("stops at the cap and says so; an exact fit is not truncated", async () => {
    const all = await collectExport(db, "records", {});
    expect(all.truncated).toBe(false);
    const capped = await collectExport(db, "records", {}, { maxRows: 7, pageSize: 3 });
    expect(capped).toMatchObject({ rows: 7, truncated: true, maxRows: 7 });
    const allLines = all.chunks.join("").split("\r\n");
    expect(capped.chunks.join("").split("\r\n").slice(0, 8)).toEqual(allLines.slice(0, 8));
    const exact = await collectExport(db, "records", { status: "pending" });
    const fit = await collectExport(db, "records", { status: "pending" }, { maxRows: exact.rows, pageSize: 2 });
    expect(fit).toMatchObject({ rows: exact.rows, truncated: false });
    const dup = await collectExport(db, "duplicates", { from, to }, { maxRows: 3 });
    expect(dup).toMatchObject({ rows: 3, truncated: true });
  });
});

describe("permissions, audit and safety", () => {
  it("writes one audit entry per export: action records.export, the list, the filters and the row count", async () => {
    const before = await db.prisma.auditEntry.count();
    const { res, rows } = await exportCsv("records", "status=failed&limit=5&cursor=ignored");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    expect(res.headers.get("content-disposition")).toMatch(/^attachment; filename="records-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}Z\.csv"$/);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(await db.prisma.auditEntry.count()).toBe(before + 1);
    const entry = await lastAudit();
    expect(entry).toMatchObject({ action: "records.export", outcome: "done", actorId: String(support.userId) });
    expect(entry!.detail).toMatchObject({ list: "records", format: "csv", filters: { status: "failed" }, rows: rows.length - 1, truncated: false });
  });

  it("403 without records.export (viewer, or a token whose scopes omit it), audited as a refusal; 403 without the list's own permission", async () => {
    const viewer = await tokenFor(db, ["viewer"]);
    for (const list of EXPORT_LISTS) {
      const res = await call(exportRoute.GET, `/api/v1/export/${list}`, viewer.token, {}, { list });
      expect(res.status).toBe(403);
      expect(res.headers.get("content-type")).toMatch(/problem\+json/);
      expect(await lastAudit()).toMatchObject({ action: "records.export", outcome: "refused", actorId: String(viewer.userId) });
    }
    const narrow = await tokenFor(db, ["support"], ["records.read"]);
    expect((await call(exportRoute.GET, "/api/v1/export/records", narrow.token, {}, { list: "records" })).status).toBe(403);
    // records.export without stats.read cannot export conflicts (the conflicts list needs stats.read).
    const noStats = await tokenFor(db, ["support"], ["records.export", "records.read"]);
    const res = await call(exportRoute.GET, "/api/v1/export/conflicts", noStats.token, {}, { list: "conflicts" });
    expect(res.status).toBe(403);
    expect((await json(res)).detail).toMatch(/stats\.read/);
    expect(await lastAudit()).toMatchObject({ action: "records.export", outcome: "refused", detail: { list: "conflicts" } });
    expect((await call(exportRoute.GET, "/api/v1/export/queue", noStats.token, {}, { list: "queue" })).status).toBe(200);
    expect((await call(exportRoute.GET, "/api/v1/export/records", null, {}, { list: "records" })).status).toBe(401);
  });

  it("refuses unknown lists (404) and filters the list API would refuse (400), exporting nothing", async () => {
    const before = await db.prisma.auditEntry.count({ where: { action: "records.export", outcome: "done" } });
    const unknown = await exportCsv("users", "");
    expect(unknown.res.status).toBe(404);
    for (const [list, qs, message] of [
      ["records", "status=bogus", /status/],
      ["records", "field=key", /field needs q/],
      ["queue", "kind=everything", /kind/],
      ["duplicates", "window=2d", /window/],
      ["conflicts", "from=yesterday", /from/],
      ["records", "unknown=1", /unknown/],
    ] as const) {
      const { res, text } = await exportCsv(list, qs);
      expect(res.status, `${list}?${qs}`).toBe(400);
      expect(JSON.parse(text).detail).toMatch(message);
    }
    expect(await db.prisma.auditEntry.count({ where: { action: "records.export", outcome: "done" } })).toBe(before);
  });

  it("neutralises spreadsheet formulas and quotes per RFC 4180", async () => {
    const { rows, text } = await exportCsv("records", "q=tenant%3Acsv&field=scope");
    const keys = objects(rows)
      .map((r) => r.idempotency_key)
      .sort();
    expect(keys).toEqual(FORMULA_KEYS.map((k) => (/^[=+\-@]/.test(k) ? `'${k}` : k)).sort());
    expect(text).toContain(`"'=HYPERLINK(""http://evil.example"",""x"")"`);
    expect(text).toContain(`"plain,with""quotes"""`);
    for (const line of text.split("\r\n").slice(1)) expect(line).not.toMatch(/(^|,)[=+\-@]/);
  });

  it("never exports stored responses (no response header or body columns; secrets absent)", async () => {
    for (const [list, qs] of [
      ["records", "q=tenant%3Acsv&field=scope"],
      ["records", ""],
      ["duplicates", `from=${from}&to=${to}`],
    ] as const) {
      const { text, rows } = await exportCsv(list, qs);
      expect(rows[0].some((h) => /response_(body|headers)/.test(h))).toBe(false);
      expect(text).not.toContain(SECRET_CARD);
      expect(text).not.toContain(SECRET_TEXT);
      expect(text).not.toContain("jane@example.com");
    }
  });
});
