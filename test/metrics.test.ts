process.env.STUCK_THRESHOLDS = "default=5m,capture_payment=2m";

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GET } from "@/app/api/metrics/route";
import { provideDatabase } from "@/lib/db/client";
import { byDialect } from "@/lib/db/dialect";
import { generateDemoTraffic } from "@/lib/demo/traffic";
import { refreshRollups } from "@/lib/stats/rollups";
import { createTestToken, createTestUser, useTestAuthEnv } from "./helpers/auth-fixtures";
import { createTestDatabase, type TestDatabase } from "./helpers/db";

/**
 * GET /api/metrics: a valid Prometheus text exposition whose every value equals a direct
 * SQL count over the raw tables (at the instant the exposition says it read them), and
 * which needs a token with stats.read. (On MySQL/MariaDB the SQL is spelled for it where it differs.)
 */

useTestAuthEnv();

let db: TestDatabase;
let token: string;

beforeAll(async () => {
  db = await createTestDatabase();
  await generateDemoTraffic(db, { seed: 21, requests: 300, days: 30 });
  provideDatabase(db);
  const viewer = await createTestUser(db.prisma, { roles: ["viewer"] });
  token = await createTestToken(db.prisma, viewer.id, { scopes: ["stats.read"] });
}, 240_000);
afterAll(() => db?.drop());

interface Family {
  help: string;
  type: string;
  samples: { labels: Record<string, string>; value: number }[];
}

/** A strict parser for the Prometheus text format 0.0.4 (what prom-client writes). */
function parseExposition(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const name = /[a-zA-Z_:][a-zA-Z0-9_:]*/.source;
  for (const line of text.split("\n")) {
    if (line === "") continue;
    let m = new RegExp(`^# (HELP|TYPE) (${name}) (.*)$`).exec(line);
    if (m) {
      const f = families.get(m[2]) ?? { help: "", type: "", samples: [] };
      if (m[1] === "HELP") f.help = m[3];
      else {
        expect(["counter", "gauge", "histogram", "summary", "untyped"]).toContain(m[3]);
        f.type = m[3];
      }
      families.set(m[2], f);
      continue;
    }
    m = new RegExp(`^(${name})(?:\\{(.*)\\})? (\\S+)$`).exec(line);
    if (!m) throw new Error(`not a valid exposition line: ${line}`);
    const labels: Record<string, string> = {};
    if (m[2]) {
      const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/y;
      let pos = 0;
      while (pos < m[2].length) {
        re.lastIndex = pos;
        const l = re.exec(m[2]);
        if (!l) throw new Error(`bad labels in: ${line}`);
        labels[l[1]] = l[2].replace(/\\(.)/g, (_, c) => (c === "n" ? "\n" : c));
        pos = re.lastIndex;
      }
    }
    const value = Number(m[3]);
    if (Number.isNaN(value) && m[3] !== "NaN") throw new Error(`bad value in: ${line}`);
    const f = families.get(m[1]);
    if (!f) throw new Error(`sample before its # HELP/# TYPE: ${line}`);
    f.samples.push({ labels, value });
  }
  for (const [n, f] of families) {
    expect(f.help, n).not.toBe("");
    expect(f.type, n).not.toBe("");
    if (f.type === "counter") expect(n).toMatch(/_total$/);
  }
  return families;
}

async function scrape(headers: Record<string, string> = { authorization: `Bearer ${token}` }) {
  return GET(new Request("http://console.test/api/metrics", { headers }));
}

const byOp = (f: Family | undefined) => Object.fromEntries((f?.samples ?? []).map((s) => [s.labels.operation, s.value]));

async function expectEqualsSql() {
  const res = await scrape();
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
  const m = parseExposition(await res.text());
  const asOf = new Date(m.get("idempotency_stats_as_of_timestamp_seconds")!.samples[0].value * 1000);
  expect(Math.abs(asOf.getTime() - Date.now())).toBeLessThan(60_000);

  const ops = (await db.sql.query<{ operation: string }>(`SELECT DISTINCT operation FROM idempotency_events ORDER BY 1`)).map((r) => r.operation);
  const zeros = Object.fromEntries(ops.map((o) => [o, 0]));
  const group = async (sql: string, params: unknown[] = []) => ({
    ...zeros,
    ...Object.fromEntries((await db.sql.query<{ operation: string; n: number }>(sql, params)).map((r) => [r.operation, Number(r.n)])),
  });
  const threshold = `CASE operation WHEN 'capture_payment' THEN 120 ELSE 300 END`;
  // MySQL's spelling where it differs (ADR 0012).
  const p1 = db.dialect.param(1);

  expect(byOp(m.get("idempotency_records_processing_stuck"))).toEqual(
    await group(
      byDialect(db, {
        postgres: `SELECT operation, count(*) AS n FROM idempotency_records WHERE status = 'processing' AND updated_at < $1::timestamptz - ${threshold} * interval '1 second' GROUP BY 1`,
        mysql: `SELECT operation, count(*) AS n FROM idempotency_records WHERE status = 'processing' AND updated_at < ? - INTERVAL (${threshold}) SECOND GROUP BY 1`,
      }),
      [asOf],
    ),
  );
  expect(byOp(m.get("idempotency_stuck_threshold_seconds"))).toEqual(Object.fromEntries(ops.map((o) => [o, o === "capture_payment" ? 120 : 300])));
  expect(byOp(m.get("idempotency_records_pending"))).toEqual(
    await group(`SELECT operation, count(*) AS n FROM idempotency_records WHERE status = 'pending' GROUP BY 1`),
  );
  const ages = await group(
    byDialect(db, {
      postgres: `SELECT operation, extract(epoch FROM $1::timestamptz - min(updated_at))::float8 AS n FROM idempotency_records WHERE status = 'pending' GROUP BY 1`,
      mysql: `SELECT operation, TIMESTAMPDIFF(MICROSECOND, MIN(updated_at), ?) / 1000000 AS n FROM idempotency_records WHERE status = 'pending' GROUP BY 1`,
    }),
    [asOf],
  );
  const exposedAges = byOp(m.get("idempotency_oldest_pending_age_seconds"));
  expect(Object.keys(exposedAges).sort()).toEqual(Object.keys(ages).sort());
  for (const op of Object.keys(ages)) expect(exposedAges[op], op).toBeCloseTo(ages[op], 2);
  expect(Object.values(ages).some((a) => a > 0)).toBe(true);
  expect(byOp(m.get("idempotency_records_expired_not_purged"))).toEqual(
    await group(`SELECT operation, count(*) AS n FROM idempotency_records WHERE expires_at < ${p1} GROUP BY 1`, [asOf]),
  );
  const [open] = await db.sql.query<{ n: bigint }>(`SELECT count(*) AS n FROM reconciliation_items WHERE state IN ('open', 'checking', 'needs_manual')`);
  expect(m.get("idempotency_reconciliation_items_open")!.samples).toEqual([{ labels: {}, value: Number(open.n) }]);

  // Counters: all-time totals, from the rollups (+ the raw remainder), equal to the raw events.
  expect(m.get("idempotency_requests_total")!.type).toBe("counter");
  expect(byOp(m.get("idempotency_requests_total"))).toEqual(
    await group(`SELECT operation, count(*) AS n FROM idempotency_events WHERE kind IN ('reserved', 'replayed', 'conflict', 'in_progress') GROUP BY 1`),
  );
  expect(byOp(m.get("idempotency_replays_total"))).toEqual(
    await group(`SELECT operation, count(*) AS n FROM idempotency_events WHERE kind = 'replayed' GROUP BY 1`),
  );
  expect(byOp(m.get("idempotency_conflicts_total"))).toEqual(
    await group(`SELECT operation, count(*) AS n FROM idempotency_events WHERE kind = 'conflict' GROUP BY 1`),
  );
  const kinds = await db.sql.query<{ operation: string; kind: string; n: bigint }>(
    `SELECT operation, kind, count(*) AS n FROM idempotency_events GROUP BY 1, 2`,
  );
  expect(Object.fromEntries(m.get("idempotency_events_total")!.samples.map((s) => [`${s.labels.operation}/${s.labels.kind}`, s.value]))).toEqual(
    Object.fromEntries(kinds.map((k) => [`${k.operation}/${k.kind}`, Number(k.n)])),
  );

  const [state] = await db.sql.query<{ w: bigint }>(
    byDialect(db, {
      postgres: `SELECT COALESCE(max(watermark), 0)::bigint AS w FROM rollup_state WHERE name = 'events'`,
      mysql: `SELECT CAST(COALESCE(MAX(watermark), 0) AS SIGNED) AS w FROM rollup_state WHERE name = 'events'`,
    }),
  );
  const [lag] = await db.sql.query<{ n: bigint }>(`SELECT count(*) AS n FROM idempotency_events WHERE id > ${p1}`, [state.w]);
  expect(m.get("idempotency_rollup_lag_events")!.samples[0].value).toBe(Number(lag.n));
  return m;
}

const sum = (f: Family | undefined) => (f?.samples ?? []).reduce((s, x) => s + x.value, 0);

describe("GET /api/metrics", () => {
  it("parses, and every value equals SQL — all raw, rolled up, partly rolled up; counters only grow", async () => {
    const raw = await expectEqualsSql();
    expect(raw.get("idempotency_rollup_lag_events")!.samples[0].value).toBeGreaterThan(0);
    expect(raw.get("idempotency_rollup_last_refresh_timestamp_seconds")!.samples[0].value).toBe(0);

    await db.withSession((s) => refreshRollups(s));
    const rolled = await expectEqualsSql();
    expect(rolled.get("idempotency_rollup_lag_events")!.samples[0].value).toBe(0);
    expect(sum(rolled.get("idempotency_requests_total"))).toBe(sum(raw.get("idempotency_requests_total")));

    await generateDemoTraffic(db, { seed: 22, requests: 80, days: 2 });
    await db.withSession((s) => refreshRollups(s, { batchSize: 50 }));
    const more = await expectEqualsSql();
    for (const name of ["idempotency_requests_total", "idempotency_replays_total", "idempotency_conflicts_total"]) {
      const before = byOp(rolled.get(name));
      const after = byOp(more.get(name));
      for (const op of Object.keys(before)) expect(after[op], `${name} ${op}`).toBeGreaterThanOrEqual(before[op]);
    }
    expect(sum(more.get("idempotency_requests_total"))).toBeGreaterThan(sum(rolled.get("idempotency_requests_total")));
  }, 120_000);

  it("needs a token (or session) with stats.read: 401 without, 401 with a bad one", async () => {
    const none = await scrape({});
    expect(none.status).toBe(401);
    expect(none.headers.get("content-type")).toContain("application/problem+json");
    expect((await scrape({ authorization: "Bearer ic_nope" })).status).toBe(401);
    expect((await scrape({ authorization: "Basic YTpi" })).status).toBe(401);
    const viewer = await createTestUser(db.prisma, { roles: ["viewer"] });
    const noStats = await createTestToken(db.prisma, viewer.id, { scopes: ["records.read"] });
    expect((await scrape({ authorization: `Bearer ${noStats}` })).status).toBe(403);
  });

  it("takes no query parameters", async () => {
    const res = await GET(new Request("http://console.test/api/metrics?name[]=x", { headers: { authorization: `Bearer ${token}` } }));
    expect(res.status).toBe(400);
  });
});
