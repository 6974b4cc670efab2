// Per-operation stuck thresholds, read once per process on first use (set before any import uses them).
process.env.STUCK_THRESHOLDS = "default=5m,capture_payment=2m,issue_invoice=15m";

import { sessionLock, sessionUnlock } from "@/lib/db/locks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GET } from "@/app/api/v1/stats/overview/route";
import { provideDatabase } from "@/lib/db/client";
import { isServerMode } from "@/lib/db/config";
import { byDialect } from "@/lib/db/dialect";
import { generateDemoTraffic } from "@/lib/demo/traffic";
import { queueSummary } from "@/lib/records/queue";
import { readSideConfig } from "@/lib/records/config";
import { expiryStats } from "@/lib/stats/expiry";
import { EVENT_KINDS } from "@/lib/kernel/vocabulary";
import { overviewStats, PENDING_AGE_BUCKETS, seriesStep } from "@/lib/stats/overview";
import * as mysqlStats from "@/lib/stats/store.mysql";
import * as pgStats from "@/lib/stats/store.postgres";
import type { SqlExecutor } from "@/lib/db/sql";
import { censusVerifySecondsFromEnv, createRollupRefresher, refreshSecondsFromEnv } from "@/lib/stats/refresher";
import { countEvents, refreshRollups } from "@/lib/stats/rollups";
import { createTestToken, createTestUser, sessionCookie, useTestAuthEnv } from "./helpers/auth-fixtures";
import { createTestDatabase, type TestDatabase } from "./helpers/db";

/**
 * Every number GET /api/v1/stats/overview returns equals a direct SQL count over the raw
 * tables (idempotency_records, idempotency_events, reconciliation_items), computed here
 * independently at the response's asOf — with no rollups yet, after refreshRollups, and
 * after more traffic on top of the rollups (events above the watermark) and a partial
 * refresh. Plus: the same numbers as countEvents, expiryStats and queueSummary (the
 * modules the Conflicts, Expiry and Queue pages use), and the API's refusals. On MySQL/MariaDB
 * the truth is the same SQL in MySQL's spelling (truthSql).
 */

useTestAuthEnv();

let db: TestDatabase;
let viewerToken: string;
let viewerCookie: string;
let noStatsToken: string;
const DAY = 86_400_000;
const HOUR = 3_600_000;

beforeAll(async () => {
  db = await createTestDatabase();
  // Two independent months of traffic, ending now (the route reads at the real time).
  await generateDemoTraffic(db, { seed: 5, requests: 350, days: 30 });
  await generateDemoTraffic(db, { seed: 6, requests: 250, days: 10 });
  provideDatabase(db);
  const viewer = await createTestUser(db.prisma, { roles: ["viewer"] });
  viewerToken = await createTestToken(db.prisma, viewer.id, { scopes: ["stats.read"] });
  viewerCookie = await sessionCookie(viewer.id);
  noStatsToken = await createTestToken(db.prisma, viewer.id, { scopes: ["records.read"] });
}, 240_000);
afterAll(() => db?.drop());

async function get(query: string, headers: Record<string, string> = { authorization: `Bearer ${viewerToken}` }) {
  return GET(new Request(`http://console.test/api/v1/stats/overview${query}`, { headers }));
}

// The API's JSON (dates as ISO strings, bigints as strings).
type J = Record<string, any>;

interface Filter {
  from: Date;
  to: Date;
  operation?: string;
  scope?: string;
}

/**
 * The truth's statements in each dialect: [text, parameters]. `rf`/`ef` filter records/events by
 * the operation and scope filters (absent = all).
 */
function truthSql(f: Filter, asOf: Date) {
  const t = readSideConfig().stuck;
  const thresholdCase = `CASE r.operation ${Object.entries(t.byOperation)
    .map(([op, s]) => `WHEN '${op}' THEN ${s}`)
    .join(" ")} ELSE ${t.defaultSeconds} END`;
  const step = seriesStep(f.from, f.to).seconds;
  const op = f.operation ?? null;
  const scope = f.scope ?? null;
  type Q = [string, unknown[]];
  const postgres = () => {
    const params = [op, scope];
    const rf = `($1::text IS NULL OR r.operation = $1) AND ($2::text IS NULL OR r.scope = $2)`;
    const ef = `($1::text IS NULL OR e.operation = $1) AND ($2::text IS NULL OR e.scope = $2)`;
    return {
      status: [`SELECT status, count(*)::bigint AS n FROM idempotency_records r WHERE ${rf} GROUP BY 1`, params] as Q,
      events: [
        `SELECT operation, kind, count(*)::bigint AS n FROM idempotency_events e
      WHERE occurred_at >= $3 AND occurred_at < $4 AND ${ef} GROUP BY 1, 2`,
        [...params, f.from, f.to],
      ] as Q,
      series: [
        `SELECT to_timestamp(floor(extract(epoch FROM occurred_at) / $5) * $5) AS b, operation, kind, count(*)::bigint AS n
       FROM idempotency_events e WHERE occurred_at >= $3 AND occurred_at < $4 AND ${ef} GROUP BY 1, 2, 3`,
        [...params, f.from, f.to, step],
      ] as Q,
      active: [
        `SELECT operation,
            count(*) FILTER (WHERE status = 'processing')::bigint AS processing,
            count(*) FILTER (WHERE status = 'processing' AND updated_at < $3::timestamptz - (${thresholdCase}) * interval '1 second')::bigint AS stuck,
            min(updated_at) FILTER (WHERE status = 'processing' AND updated_at < $3::timestamptz - (${thresholdCase}) * interval '1 second') AS oldest_stuck,
            count(*) FILTER (WHERE status = 'pending')::bigint AS pending,
            min(updated_at) FILTER (WHERE status = 'pending') AS oldest_pending
       FROM idempotency_records r WHERE ${rf} GROUP BY 1`,
        [...params, asOf],
      ] as Q,
      pendingTimes: [`SELECT updated_at FROM idempotency_records r WHERE status = 'pending' AND ${rf}`, params] as Q,
      open: [
        `SELECT count(*)::bigint AS n FROM reconciliation_items i JOIN idempotency_records r ON r.id = i.record_id
      WHERE i.state IN ('open', 'checking', 'needs_manual') AND ${rf}`,
        params,
      ] as Q,
      expiring: [
        `SELECT count(*)::bigint AS n FROM idempotency_records r WHERE expires_at >= $3 AND expires_at < $3::timestamptz + interval '24 hours' AND ${rf}`,
        [...params, asOf],
      ] as Q,
      forecast: (a: Date, b: Date): Q => [
        `SELECT count(*)::bigint AS n FROM idempotency_records r WHERE expires_at >= $3 AND expires_at < $4 AND ${rf}`,
        [...params, a, b],
      ],
      expired: [`SELECT operation, count(*)::bigint AS n FROM idempotency_records r WHERE expires_at < $3 AND ${rf} GROUP BY 1`, [...params, asOf]] as Q,
      watermark: [`SELECT COALESCE(max(watermark), 0)::bigint AS watermark FROM rollup_state WHERE name = 'events'`, []] as Q,
      lag: (watermark: bigint): Q => [`SELECT count(*)::bigint AS n FROM idempotency_events WHERE id > $1`, [watermark]],
    };
  };
  const mysql = () => {
    const fp = [op, op, scope, scope];
    const rf = `(? IS NULL OR r.operation = ?) AND (? IS NULL OR r.scope = ?)`;
    const ef = `(? IS NULL OR e.operation = ?) AND (? IS NULL OR e.scope = ?)`;
    const stuck = `status = 'processing' AND updated_at < ? - INTERVAL (${thresholdCase}) SECOND`;
    return {
      status: [`SELECT status, COUNT(*) AS n FROM idempotency_records r WHERE ${rf} GROUP BY status`, fp] as Q,
      events: [
        `SELECT operation, kind, COUNT(*) AS n FROM idempotency_events e WHERE occurred_at >= ? AND occurred_at < ? AND ${ef} GROUP BY operation, kind`,
        [f.from, f.to, ...fp],
      ] as Q,
      // UNIX_TIMESTAMP in the tests' UTC sessions (the statements under test use other epoch arithmetic).
      series: [
        `SELECT FROM_UNIXTIME(FLOOR(UNIX_TIMESTAMP(occurred_at) / ${step}) * ${step}) AS b, operation, kind, COUNT(*) AS n
       FROM idempotency_events e WHERE occurred_at >= ? AND occurred_at < ? AND ${ef} GROUP BY b, operation, kind`,
        [f.from, f.to, ...fp],
      ] as Q,
      active: [
        `SELECT operation,
            CAST(SUM(status = 'processing') AS SIGNED) AS processing,
            CAST(SUM(${stuck}) AS SIGNED) AS stuck,
            MIN(CASE WHEN ${stuck} THEN updated_at END) AS oldest_stuck,
            CAST(SUM(status = 'pending') AS SIGNED) AS pending,
            MIN(CASE WHEN status = 'pending' THEN updated_at END) AS oldest_pending
       FROM idempotency_records r WHERE ${rf} GROUP BY operation`,
        [asOf, asOf, ...fp],
      ] as Q,
      pendingTimes: [`SELECT updated_at FROM idempotency_records r WHERE status = 'pending' AND ${rf}`, fp] as Q,
      open: [
        `SELECT COUNT(*) AS n FROM reconciliation_items i JOIN idempotency_records r ON r.id = i.record_id
      WHERE i.state IN ('open', 'checking', 'needs_manual') AND ${rf}`,
        fp,
      ] as Q,
      expiring: [
        `SELECT COUNT(*) AS n FROM idempotency_records r WHERE expires_at >= ? AND expires_at < ? + INTERVAL 24 HOUR AND ${rf}`,
        [asOf, asOf, ...fp],
      ] as Q,
      forecast: (a: Date, b: Date): Q => [`SELECT COUNT(*) AS n FROM idempotency_records r WHERE expires_at >= ? AND expires_at < ? AND ${rf}`, [a, b, ...fp]],
      expired: [`SELECT operation, COUNT(*) AS n FROM idempotency_records r WHERE expires_at < ? AND ${rf} GROUP BY operation`, [asOf, ...fp]] as Q,
      watermark: [`SELECT CAST(COALESCE(MAX(watermark), 0) AS SIGNED) AS watermark FROM rollup_state WHERE name = 'events'`, []] as Q,
      lag: (watermark: bigint): Q => [`SELECT COUNT(*) AS n FROM idempotency_events WHERE id > ?`, [watermark]],
    };
  };
  return { step, ...byDialect(db, { postgres, mysql })() };
}

/** The truth at `asOf`, straight from the raw tables. */
async function truth(f: Filter, asOf: Date) {
  const num = (rows: { n: bigint }[]) => Number(rows[0]?.n ?? 0);
  const sql = truthSql(f, asOf);
  const q = <T>([text, params]: [string, unknown[]]) => db.sql.query<T>(text, params);

  const status = await q<{ status: string; n: bigint }>(sql.status);
  const events = await q<{ operation: string; kind: string; n: bigint }>(sql.events);
  const step = sql.step;
  const series = await q<{ b: Date; operation: string; kind: string; n: bigint }>(sql.series);
  const active = await q<{
    operation: string;
    stuck: bigint;
    oldest_stuck: Date | null;
    pending: bigint;
    oldest_pending: Date | null;
    processing: bigint;
  }>(sql.active);
  const pendingTimes = await q<{ updated_at: Date }>(sql.pendingTimes);
  const open = await q<{ n: bigint }>(sql.open);
  const expiring = await q<{ n: bigint }>(sql.expiring);
  // The forecast: from asOf to the next UTC midnight, then six whole UTC days.
  const forecast = [];
  const midnight = Math.floor(asOf.getTime() / DAY) * DAY;
  for (let i = 0; i < 7; i++) {
    const from = i === 0 ? asOf : new Date(midnight + i * DAY);
    forecast.push(num(await q<{ n: bigint }>(sql.forecast(from, new Date(midnight + (i + 1) * DAY)))));
  }
  const expired = await q<{ operation: string; n: bigint }>(sql.expired);
  const [state] = await q<{ watermark: bigint }>(sql.watermark);
  const lag = await q<{ n: bigint }>(sql.lag(state.watermark));
  const operations = await db.sql.query<{ operation: string }>(`SELECT DISTINCT operation FROM idempotency_events ORDER BY 1`);
  return {
    status,
    events,
    series,
    step,
    active,
    pendingTimes,
    open: num(open),
    expiring: num(expiring),
    forecast,
    expired,
    watermark: state.watermark,
    lag: num(lag),
    operations,
  };
}

const REQUEST = new Set(["reserved", "replayed", "conflict", "in_progress"]);
const FIELD: Record<string, string> = {
  reserved: "reserved",
  replayed: "replays",
  conflict: "conflicts",
  in_progress: "inProgress",
  completed: "completed",
  failed: "failed",
  pending: "pending",
  reconciled: "reconciled",
};

function expectedTotals(rows: { kind: string; n: bigint }[]) {
  const t: Record<string, number> = { requests: 0, reserved: 0, replays: 0, conflicts: 0, inProgress: 0, completed: 0, failed: 0, pending: 0, reconciled: 0 };
  for (const r of rows) {
    t[FIELD[r.kind]] += Number(r.n);
    if (REQUEST.has(r.kind)) t.requests += Number(r.n);
  }
  return { ...t, replayRate: t.requests ? t.replays / t.requests : null, conflictRate: t.requests ? t.conflicts / t.requests : null };
}

const iso = (d: Date | null | undefined) => (d ? d.toISOString() : null);

/** Calls the API and checks every number against the raw tables. Returns the body. */
async function expectExact(label: string, f: Filter): Promise<J> {
  const qs = new URLSearchParams({ from: f.from.toISOString(), to: f.to.toISOString() });
  if (f.operation) qs.set("operation", f.operation);
  if (f.scope) qs.set("scope", f.scope);
  const res = await get(`?${qs}`);
  expect(res.status, label).toBe(200);
  const body = (await res.json()) as J;
  const asOf = new Date(body.asOf);
  expect(body.from).toBe(f.from.toISOString());
  expect(body.to).toBe(f.to.toISOString());
  expect(body.filters).toEqual({ operation: f.operation ?? null, scope: f.scope ?? null });
  const x = await truth(f, asOf);

  // Records by status.
  const byStatus = { processing: 0, pending: 0, completed: 0, failed: 0, ...Object.fromEntries(x.status.map((s) => [s.status, Number(s.n)])) };
  expect(body.records.byStatus, `${label}: by status`).toEqual(byStatus);
  expect(body.records.total).toBe(Object.values(byStatus).reduce((a, b) => a + b, 0));

  // Requests, replays, conflicts, rates: per operation and overall.
  expect(body.events.total, `${label}: event totals`).toEqual(expectedTotals(x.events));
  const ops = [...new Set(x.events.map((e) => e.operation))].sort();
  expect(body.events.byOperation.map((o: J) => o.operation)).toEqual(ops);
  for (const o of body.events.byOperation) {
    const { operation, ...rest } = o;
    expect(rest, `${label}: ${operation}`).toEqual(expectedTotals(x.events.filter((e) => e.operation === operation)));
  }

  // Series: events by kind per bucket, conflict rate per operation per bucket.
  expect(body.series.step.seconds).toBe(x.step);
  const stepMs = x.step * 1000;
  const firstBucket = Math.floor(f.from.getTime() / stepMs) * stepMs;
  expect(body.series.transitions.length).toBe(Math.ceil((f.to.getTime() - firstBucket) / stepMs));
  expect(body.series.transitions[0].start).toBe(new Date(firstBucket).toISOString());
  const want = new Map<string, Record<string, number>>();
  const wantRate = new Map<string, Record<string, { requests: number; conflicts: number }>>();
  for (const r of x.series) {
    const k = r.b.toISOString();
    const m = want.get(k) ?? {};
    m[r.kind] = (m[r.kind] ?? 0) + Number(r.n);
    want.set(k, m);
    const c = wantRate.get(k) ?? {};
    c[r.operation] ??= { requests: 0, conflicts: 0 };
    if (REQUEST.has(r.kind)) c[r.operation].requests += Number(r.n);
    if (r.kind === "conflict") c[r.operation].conflicts += Number(r.n);
    wantRate.set(k, c);
  }
  let seriesSum = 0;
  for (const [i, b] of body.series.transitions.entries()) {
    const expected = Object.fromEntries(EVENT_KINDS.map((k) => [k, want.get(b.start)?.[k] ?? 0]));
    expect(b.counts, `${label}: transitions at ${b.start}`).toEqual(expected);
    expect(b.total).toBe(Object.values(expected).reduce((a, n) => a + n, 0));
    seriesSum += b.total;
    const rates = body.series.conflictRate[i];
    expect(rates.start).toBe(b.start);
    for (const op of ops) {
      const w = wantRate.get(b.start)?.[op] ?? { requests: 0, conflicts: 0 };
      expect(rates.byOperation[op], `${label}: conflict rate ${op} at ${b.start}`).toEqual({ ...w, rate: w.requests ? w.conflicts / w.requests : null });
    }
  }
  expect(seriesSum).toBe(x.events.reduce((s, e) => s + Number(e.n), 0));

  // Stuck (per-operation thresholds), pending, oldest pending age.
  const stuck = x.active.reduce((s, a) => s + Number(a.stuck), 0);
  const pending = x.active.reduce((s, a) => s + Number(a.pending), 0);
  const minOf = (ds: (Date | null)[]) => ds.filter((d): d is Date => d !== null).sort((a, b) => a.getTime() - b.getTime())[0] ?? null;
  const oldestStuck = minOf(x.active.map((a) => a.oldest_stuck));
  const oldestPending = minOf(x.active.map((a) => a.oldest_pending));
  expect(body.stuck.count, `${label}: stuck`).toBe(stuck);
  expect(body.stuck.oldestSince).toBe(iso(oldestStuck));
  expect(body.pending.count, `${label}: pending`).toBe(pending);
  expect(body.pending.oldestSince).toBe(iso(oldestPending));
  expect(body.pending.oldestAgeSeconds).toBe(oldestPending ? Math.floor((asOf.getTime() - oldestPending.getTime()) / 1000) : null);
  for (const o of body.operations) {
    const a = x.active.find((r) => r.operation === o.operation);
    const e = x.expired.find((r) => r.operation === o.operation);
    expect(
      [o.processing, o.stuck, o.oldestStuckSince, o.pending, o.oldestPendingSince, o.expiredNotPurged, o.stuckThresholdSeconds],
      `${label}: ${o.operation}`,
    ).toEqual([
      Number(a?.processing ?? 0),
      Number(a?.stuck ?? 0),
      iso(a?.oldest_stuck),
      Number(a?.pending ?? 0),
      iso(a?.oldest_pending),
      Number(e?.n ?? 0),
      readSideConfig().stuck.byOperation[o.operation] ?? readSideConfig().stuck.defaultSeconds,
    ]);
  }
  expect(body.stuck.thresholds).toEqual({ default: "5m", capture_payment: "2m", issue_invoice: "15m" });

  // Pending age distribution (bucketed here in JS).
  const ages = PENDING_AGE_BUCKETS.map(() => 0);
  for (const { updated_at } of x.pendingTimes) {
    const age = (asOf.getTime() - updated_at.getTime()) / 1000;
    let i = 0;
    while (i + 1 < PENDING_AGE_BUCKETS.length && age >= PENDING_AGE_BUCKETS[i + 1].minSeconds) i++;
    ages[i]++;
  }
  expect(
    body.pendingAges.map((b: J) => b.count),
    `${label}: pending ages`,
  ).toEqual(ages);

  // Reconciliation, expiry.
  expect(body.reconciliation.open, `${label}: open reconciliation`).toBe(x.open);
  expect(body.expiry.expiringNext24h, `${label}: expiring`).toBe(x.expiring);
  expect(
    body.expiry.forecast.map((b: J) => b.count),
    `${label}: forecast`,
  ).toEqual(x.forecast);
  expect(body.expiry.forecast[0].start).toBe(asOf.toISOString());
  expect(body.expiry.expiredNotPurged).toBe(x.expired.reduce((s, e) => s + Number(e.n), 0));

  // Rollup state and the filter lists.
  expect(body.rollups.watermark).toBe(String(x.watermark));
  expect(body.rollups.lagEvents).toBe(x.lag);
  expect(body.known.operations).toEqual(x.operations.map((o) => o.operation));

  // The same numbers as the modules behind the other pages.
  const ce = await db.withSession((s) => countEvents(s, f));
  expect(Object.fromEntries(ce.map((c) => [`${c.operation}/${c.kind}`, c.count]))).toEqual(
    Object.fromEntries(x.events.map((e) => [`${e.operation}/${e.kind}`, Number(e.n)])),
  );
  const ex = await expiryStats(db, { operation: f.operation, scope: f.scope, now: asOf });
  expect(body.expiry.expiringNext24h).toBe(ex.expiringNext24h);
  expect(body.expiry.expiredNotPurged).toBe(ex.expired.total);
  expect(body.expiry.forecast.map((b: J) => b.count)).toEqual(ex.next30d.slice(0, 7).map((b) => b.count));
  if (!f.operation && !f.scope) {
    const qs2 = await queueSummary(db.sql, readSideConfig().stuck, asOf);
    expect([body.stuck.count, body.pending.count, body.reconciliation.open, body.pending.oldestSince]).toEqual([
      qs2.stuck,
      qs2.pending,
      qs2.openReconciliation,
      iso(qs2.oldestPendingSince),
    ]);
  }
  return body;
}

function cases(): [string, Filter][] {
  const now = Date.now();
  return [
    ["last 24 h, unaligned", { from: new Date(now - DAY + 12_345), to: new Date(now - 678) }],
    ["30 days (daily buckets)", { from: new Date(now - 30 * DAY - 1), to: new Date(now + 1000) }],
    ["7 days, capture_payment (hourly buckets)", { from: new Date(now - 7 * DAY + 59_999), to: new Date(now), operation: "capture_payment" }],
    ["36 h, tenant:acme (15-minute buckets)", { from: new Date(now - 36 * HOUR + 1), to: new Date(now - 1), scope: "tenant:acme" }],
    [
      "2 h, minute buckets, both filters",
      { from: new Date(now - 2 * HOUR + 30_500), to: new Date(now - 20_250), operation: "create_order", scope: "tenant:globex" },
    ],
    ["inside one minute", { from: new Date(Math.floor(now / 60_000) * 60_000 - 50_000), to: new Date(Math.floor(now / 60_000) * 60_000 - 10_000) }],
    [
      "straddling one minute boundary",
      { from: new Date(Math.floor(now / 60_000) * 60_000 - 90_000), to: new Date(Math.floor(now / 60_000) * 60_000 - 50_000) },
    ],
    ["a range with nothing in it", { from: new Date("2020-01-01T00:00:00Z"), to: new Date("2020-01-02T00:00:00Z") }],
  ];
}

describe("GET /api/v1/stats/overview", () => {
  it("every number equals a direct SQL count, before any rollup", async () => {
    const [{ n }] = await db.sql.query<{ n: bigint }>(`SELECT count(*) AS n FROM event_rollups`);
    expect(n).toBe(0n);
    for (const [label, f] of cases()) await expectExact(`raw: ${label}`, f);
  }, 120_000);

  it("… after refreshRollups, and with more traffic on top of the rollups and a partial refresh", async () => {
    await db.withSession((s) => refreshRollups(s));
    const rolled = await expectExact("rolled: last 24 h", cases()[0][1]);
    expect(rolled.rollups.lagEvents).toBe(0);
    expect(rolled.events.total.requests).toBeGreaterThan(0);
    for (const [label, f] of cases()) await expectExact(`rolled: ${label}`, f);

    // More traffic (a third seed): its events sit above the watermark until rolled up.
    await generateDemoTraffic(db, { seed: 7, requests: 150, days: 3 });
    const mixed = await expectExact("above the watermark: last 24 h", cases()[0][1]);
    expect(mixed.rollups.lagEvents).toBeGreaterThan(0);
    for (const [label, f] of cases()) await expectExact(`above the watermark: ${label}`, f);

    // Part of it rolled up: one small batch, the rest still raw.
    await db.withSession((s) => refreshRollups(s, { batchSize: 100 }));
    for (const [label, f] of cases()) await expectExact(`partially rolled: ${label}`, f);
  }, 240_000);

  it("defaults to the last 24 hours; has the data it promises", async () => {
    const res = await get("");
    expect(res.status).toBe(200);
    const body = (await res.json()) as J;
    const from = new Date(body.from).getTime();
    const to = new Date(body.to).getTime();
    expect(to - from).toBe(DAY);
    expect(Math.abs(new Date(body.asOf).getTime() - to)).toBeLessThan(10_000);
    expect(body.series.step).toEqual({ name: "15m", seconds: 900 });
    expect(body.series.transitions).toHaveLength(Math.ceil((to - Math.floor(from / 900_000) * 900_000) / 900_000));
    // The demo traffic has every situation the overview reports.
    expect(body.records.byStatus.pending).toBeGreaterThan(0);
    expect(body.stuck.count).toBeGreaterThan(0);
    expect(body.reconciliation.open).toBeGreaterThan(0);
    expect(body.expiry.expiringNext24h).toBeGreaterThan(0);
    expect(body.expiry.expiredNotPurged).toBeGreaterThan(0);
    expect(body.events.total.conflicts).toBeGreaterThanOrEqual(0);
    expect(body.known.operations).toContain("capture_payment");
    expect(body.known.scopes).toContain("tenant:acme");
    expect(res.headers.get("cache-control")).toBe("no-store");
  });

  it("viewers may read it (stats.read), with a token or a session; others get 401/403", async () => {
    expect((await get("", { cookie: viewerCookie })).status).toBe(200);
    const none = await get("", {});
    expect(none.status).toBe(401);
    expect(none.headers.get("content-type")).toContain("application/problem+json");
    const noScope = await get("", { authorization: `Bearer ${noStatsToken}` });
    expect(noScope.status).toBe(403);
    expect((await noScope.json()).detail).toContain("stats.read");
  });

  it("refuses bad parameters with 400 problem+json naming the problem", async () => {
    const bad: [string, string][] = [
      ["?from=2026-11-02T00:00:00Z&to=2026-11-01T00:00:00Z", "before"],
      ["?from=2026-11-01T00:00:00Z&to=2026-11-01T00:00:00Z", "before"],
      ["?from=2024-01-01T00:00:00Z&to=2026-01-01T00:00:00Z", "400d"],
      ["?from=yesterday", "ISO 8601"],
      ["?to=2026-13-45T00:00:00Z", "ISO 8601"],
      ["?operation=Capture%20Payment", "operation"],
      ["?scope=tenant%20acme", "scope"],
      ["?bucket=1h", "bucket"],
      ["?from=2026-11-01T00:00:00Z&from=2026-11-02T00:00:00Z", "more than once"],
    ];
    for (const [query, mention] of bad) {
      const res = await get(query);
      expect(res.status, query).toBe(400);
      expect(res.headers.get("content-type")).toContain("application/problem+json");
      const problem = (await res.json()) as J;
      expect(problem.status).toBe(400);
      expect(problem.detail, query).toContain(mention);
    }
    // Exactly 400 days is allowed; empty values mean "absent".
    expect((await get("?from=2025-10-01T00:00:00Z&to=2026-11-05T00:00:00Z")).status).toBe(200);
    expect((await get("?operation=&scope=")).status).toBe(200);
  });

  it("a scope's open reconciliation items come from the cheaper side, and count the same from either", async () => {
    // A tenant of one record with an open item, beside the demo traffic's open items: fewer records than open items.
    const record = await db.prisma.idempotencyRecord.create({
      data: {
        scope: "tenant:tiny",
        operation: "capture_payment",
        idempotencyKey: "tiny-1",
        payloadHash: "a".repeat(64),
        status: "completed", // not pending: its item is one whose record is read by itself (neither processing nor pending)
        expiresAt: new Date(Date.now() + DAY),
      },
    });
    await db.prisma.reconciliationItem.create({ data: { recordId: record.id, provider: "demo", state: "needs_manual" } });
    try {
      const stats = byDialect<Pick<typeof pgStats, "openReconciliationSql" | "OPEN_ITEM_COST">>(db.sql, { postgres: pgStats, mysql: mysqlStats });
      const count = async (q: { text: string; values: unknown[] }) => Number((await db.sql.query<{ n: bigint }>(q.text, q.values))[0].n);
      const [{ n: openItems }] = await db.sql.query<{ n: bigint }>(stats.openReconciliationSql({}).text, stats.openReconciliationSql({}).values);
      // With an operation alone too: the items' side finds the tiny tenant's item through its record (completed, so not among the unsettled).
      for (const f of [
        { scope: "tenant:tiny" },
        { scope: "tenant:acme" },
        { scope: "tenant:globex", operation: "create_order" },
        { scope: "tenant:none" },
        { operation: "capture_payment" },
        { scope: "tenant:tiny", operation: "capture_payment" },
      ] as { scope?: string; operation?: string }[]) {
        const label = JSON.stringify(f);
        const items = await count(stats.openReconciliationSql(f, "items"));
        expect(await count(stats.openReconciliationSql(f, "records")), label).toBe(items);
        const p = db.sql.dialect.param;
        const where = [...(f.scope ? ["r.scope"] : []), ...(f.operation ? ["r.operation"] : [])].map((c, i) => ` AND ${c} = ${p(i + 1)}`).join("");
        const [raw] = await db.sql.query<{ n: bigint }>(
          `SELECT COUNT(*) AS n FROM reconciliation_items i JOIN idempotency_records r ON r.id = i.record_id
            WHERE i.state IN ('open', 'checking', 'needs_manual')${where}`,
          [f.scope, f.operation].filter((x) => x !== undefined),
        );
        expect(items, label).toBe(Number(raw.n));
      }
      expect(await count(stats.openReconciliationSql({ scope: "tenant:tiny" }, "items"))).toBe(1);

      // Which one the overview runs: the records' side for the tiny tenant, the items' for acme (far more records than open items).
      const [{ n: acmeRecords }] = await db.sql.query<{ n: bigint }>(`SELECT COUNT(*) AS n FROM idempotency_records WHERE scope = 'tenant:acme'`);
      expect(Number(acmeRecords)).toBeGreaterThan(stats.OPEN_ITEM_COST * Number(openItems));
      for (const [scope, side] of [
        ["tenant:tiny", "records"],
        ["tenant:acme", "items"],
      ] as const) {
        const sent: string[] = [];
        await db.withSession(async (s) => {
          const recording: SqlExecutor = { ...s, query: (text, params) => (sent.push(text), s.query(text, params)) };
          const o = await overviewStats(recording, { from: new Date(Date.now() - DAY), to: new Date(), scope });
          const q = stats.openReconciliationSql({ scope }, "items"); // on the session: embedded mode has one connection
          expect(o.reconciliation.open, scope).toBe(Number((await s.query<{ n: bigint }>(q.text, q.values))[0].n));
        });
        expect(sent, `${scope}: the ${side}' side`).toContain(stats.openReconciliationSql({ scope }, side).text);
        expect(sent, scope).not.toContain(stats.openReconciliationSql({ scope }, side === "records" ? "items" : "records").text);
      }
      await expectExact("a tenant of one record", { from: new Date(Date.now() - DAY), to: new Date(), scope: "tenant:tiny" });
    } finally {
      await db.prisma.reconciliationItem.deleteMany({ where: { recordId: record.id } });
      await db.prisma.idempotencyRecord.delete({ where: { id: record.id } });
    }
  });

  it("answers POST with 405", async () => {
    const { POST } = await import("@/app/api/v1/stats/overview/route");
    const res = await POST(new Request("http://console.test/api/v1/stats/overview", { method: "POST" }));
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("GET");
  });
});

describe("the background rollup refresher (lib/stats/refresher.ts)", () => {
  const quiet = { log: () => {}, warn: () => {} };
  const lag = async () => {
    const [r] = await db.sql.query<{ n: bigint }>(
      `SELECT count(*) AS n FROM idempotency_events WHERE id > COALESCE((SELECT watermark FROM rollup_state WHERE name = 'events'), 0)`,
    );
    return Number(r.n);
  };

  it("rolls up new events on its interval, is idle when there is nothing new, and stops", async () => {
    await generateDemoTraffic(db, { seed: 8, requests: 60, days: 1 });
    expect(await lag()).toBeGreaterThan(0);
    const r = createRollupRefresher({ database: async () => db, intervalSeconds: 0.05, sweepRecords: 0, log: quiet });
    try {
      await expect.poll(lag, { timeout: 20_000, interval: 50 }).toBe(0);
      // The timer's own tick may still be finishing the refresh that got the lag to 0 ("busy").
      let once = await r.runOnce();
      for (let i = 0; once.status === "busy" && i < 100; i++) once = await new Promise((res) => setTimeout(res, 20)).then(() => r.runOnce());
      expect(once).toEqual({ status: "idle" });
      await expectExact("after the refresher", cases()[0][1]);
    } finally {
      await r.stop();
    }
    expect(await r.runOnce()).toEqual({ status: "stopped" });
  }, 60_000);

  it("never throws: a failing database is reported as a failed tick, logged once, and the next tick recovers", async () => {
    const warnings: string[] = [];
    const logs: string[] = [];
    let fail = true;
    const r = createRollupRefresher({
      database: async () => {
        if (fail) throw new Error("connection refused");
        return db;
      },
      intervalSeconds: 0,
      log: { log: (m: string) => logs.push(m), warn: (m: string) => warnings.push(m) },
    });
    const first = await r.runOnce();
    expect(first.status).toBe("failed");
    expect((await r.runOnce()).status).toBe("failed");
    expect(warnings).toHaveLength(1); // rate-limited
    expect(warnings[0]).toContain("connection refused");
    fail = false;
    await generateDemoTraffic(db, { seed: 9, requests: 20, days: 1 });
    const ok = await r.runOnce();
    expect(ok.status).toBe("refreshed");
    expect(logs.some((l) => l.includes("works again"))).toBe(true);
    expect(await lag()).toBe(0);
    await r.stop();
  }, 60_000);

  it("skips a tick while another session holds the refresher lock (another server process)", async () => {
    if (!isServerMode(db.mode)) return; // one connection in embedded mode: there is no other process
    await generateDemoTraffic(db, { seed: 10, requests: 10, days: 1 });
    await db.withSession(async (other) => {
      await sessionLock(other, "refresher");
      try {
        const r = createRollupRefresher({ database: async () => db, intervalSeconds: 0, log: quiet });
        expect(await r.runOnce()).toEqual({ status: "locked" });
        await r.stop();
      } finally {
        await sessionUnlock(other, "refresher");
      }
    });
    const r = createRollupRefresher({ database: async () => db, intervalSeconds: 0, log: quiet });
    expect((await r.runOnce()).status).toBe("refreshed");
    await r.stop();
  }, 60_000);

  it("checks the record census every CENSUS_VERIFY_HOURS: not at its first tick; then repairs drift and warns", async () => {
    await db.sql.exec(`DELETE FROM rollup_state WHERE name = 'census_verified'`);
    const warnings: string[] = [];
    const r = createRollupRefresher({
      database: async () => db,
      intervalSeconds: 0,
      censusVerifySeconds: 3600,
      sweepRecords: 0,
      log: { log: () => {}, warn: (m: string) => warnings.push(m) },
    });
    try {
      expect(["idle", "refreshed"]).toContain((await r.runOnce()).status); // starts the clock, no check
      const [{ at }] = await db.sql.query<{ at: Date }>(`SELECT updated_at AS at FROM rollup_state WHERE name = 'census_verified'`);
      expect(at).toBeInstanceOf(Date);
      expect(await r.runOnce()).toEqual({ status: "idle" });
      // Due (an hour ago), with a record deleted behind the console's back.
      await db.sql.exec(
        byDialect(db, {
          postgres: `UPDATE rollup_state SET updated_at = now() - interval '61 minutes' WHERE name = 'census_verified'`,
          mysql: `UPDATE rollup_state SET updated_at = UTC_TIMESTAMP(6) - INTERVAL 61 MINUTE WHERE name = 'census_verified'`,
        }),
      );
      // (MySQL cannot name the deleted table in a subquery: the id is read first.)
      const [{ first }] = await db.sql.query<{ first: bigint }>(`SELECT min(id) AS first FROM idempotency_records WHERE status = 'completed'`);
      await db.sql.query(`DELETE FROM idempotency_records WHERE id = ${db.dialect.param(1)}`, [first]);
      const checked = await r.runOnce();
      expect(checked).toMatchObject({ status: "verified", census: { driftHours: 1, driftRecords: 1 } });
      expect(warnings.join("\n")).toContain("off by 1 record(s)");
      expect(await r.runOnce()).toEqual({ status: "idle" }); // not due again for an hour
      await expectExact("after the census check", cases()[1][1]);
      // The overview says what the check found, and when it ran (the banner reads this).
      const res = await get("");
      expect(res.status).toBe(200);
      const census = ((await res.json()) as J).census;
      expect(census.lastCheckDrift).toBe(1);
      expect(Date.parse(census.verifiedAt)).toBeGreaterThan(Date.now() - 60_000);
      expect(census.departures).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ kind: "deleted_outside", records: 1, description: expect.stringMatching(/other than the console's purge/) }),
        ]),
      );
    } finally {
      await r.stop();
    }
  }, 60_000);

  it("reads CENSUS_VERIFY_HOURS (default 24, 0 = off, garbage → default with a warning)", () => {
    const warn = { warn: () => {} };
    expect(censusVerifySecondsFromEnv({}, warn)).toBe(86_400);
    expect(censusVerifySecondsFromEnv({ CENSUS_VERIFY_HOURS: "0" }, warn)).toBe(0);
    expect(censusVerifySecondsFromEnv({ CENSUS_VERIFY_HOURS: "6" }, warn)).toBe(21_600);
    expect(censusVerifySecondsFromEnv({ CENSUS_VERIFY_HOURS: "1d" }, warn)).toBe(86_400);
  });

  it("reads ROLLUP_REFRESH_SECONDS (default 15, 0 = off, garbage → default with a warning)", () => {
    const warn = { warn: () => {} };
    expect(refreshSecondsFromEnv({}, warn)).toBe(15);
    expect(refreshSecondsFromEnv({ ROLLUP_REFRESH_SECONDS: "0" }, warn)).toBe(0);
    expect(refreshSecondsFromEnv({ ROLLUP_REFRESH_SECONDS: " 60 " }, warn)).toBe(60);
    expect(refreshSecondsFromEnv({ ROLLUP_REFRESH_SECONDS: "5m" }, warn)).toBe(15);
  });
});
