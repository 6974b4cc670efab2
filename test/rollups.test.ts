import { cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IdempotencyStore } from "@/lib/idempotency";
import { DEFAULT_MIGRATIONS_DIR, migrate } from "@/lib/db/migrate";
import { byDialect } from "@/lib/db/dialect";
import type { SqlExecutor } from "@/lib/db/sql";
import { COARSE_GRAINS, countEvents, planCounts, rebuildRollups, refreshRollups, ROLLUP_GRAINS, type Span } from "@/lib/stats/rollups";
import { eventCountsSql as mysqlEventCountsSql } from "@/lib/stats/rollup-store.mysql";
import { eventCountsSql as postgresEventCountsSql } from "@/lib/stats/rollup-store.postgres";
import { generateDemoTraffic } from "@/lib/demo/traffic";
import { mulberry32 } from "@/lib/demo/traffic-plan";
import { createEmptyTestDatabase, createTestDatabase, usingDatabaseServer, usingMysql, type TestDatabase } from "./helpers/db";

/**
 * The rollup tiers (minute, 15 minutes, hour, day) plus the raw remainder give exactly the
 * raw counts: for countEvents and for the per-bucket series of every chart step, over
 * fixed and random ranges (aligned, unaligned, across minute/hour/day edges, open-ended),
 * before any rollup, after incremental refreshes, with events above the watermark, after a
 * rebuild, with late commits (gaps, in both modes), and after the migration that added
 * the coarse tiers to a database already rolled up by the previous version. After every
 * step, every coarse tier equals the minute tier re-binned (and the raw events, once all
 * are rolled up). On MySQL/MariaDB too: the truth below is spelled there with
 * UNIX_TIMESTAMP in the tests' UTC sessions (the statements under test use other epoch
 * arithmetic), and real concurrent writers run on both servers.
 */

let db: TestDatabase;
const now = new Date("2026-11-30T12:00:00.000Z");
const MIN = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;
beforeAll(async () => {
  db = await createTestDatabase();
  await generateDemoTraffic(db, { seed: 11, requests: 400, days: 7, now });
}, 120_000);
afterAll(() => db?.drop());

/** The event-count statement builder of the database's dialect (the one countEvents runs). */
const eventCountsSql = (...args: Parameters<typeof postgresEventCountsSql>) =>
  byDialect(db, { postgres: postgresEventCountsSql, mysql: mysqlEventCountsSql })(...args);

type Row = { operation: string; kind: string; count: number };
const key = (r: Row) => `${r.operation}/${r.kind}`;
const asMap = (rows: Row[]) => Object.fromEntries(rows.map((r) => [key(r), r.count]));

/** The truth: a direct count over the raw events table, optionally per step bucket (epoch-aligned, computed without date_bin). */
async function rawCounts(sql: SqlExecutor, from: Date | null, to: Date | null, opts: { operation?: string; scope?: string; step?: number } = {}) {
  const rows = await byDialect(sql, {
    postgres: () =>
      sql.query<{ b: Date | null; operation: string; kind: string; n: bigint }>(
        `SELECT CASE WHEN $5::int IS NULL THEN NULL ELSE to_timestamp(floor(extract(epoch FROM occurred_at) / $5) * $5) END AS b,
            operation, kind, count(*)::bigint AS n FROM idempotency_events
      WHERE ($1::timestamptz IS NULL OR occurred_at >= $1) AND ($2::timestamptz IS NULL OR occurred_at < $2)
        AND ($3::text IS NULL OR operation = $3) AND ($4::text IS NULL OR scope = $4)
      GROUP BY 1, 2, 3`,
        [from, to, opts.operation ?? null, opts.scope ?? null, opts.step ?? null],
      ),
    mysql: () =>
      sql.query<{ b: Date | null; operation: string; kind: string; n: bigint }>(
        `SELECT ${opts.step ? `FROM_UNIXTIME(FLOOR(UNIX_TIMESTAMP(occurred_at) / ${opts.step}) * ${opts.step})` : "NULL"} AS b,
            operation, kind, COUNT(*) AS n FROM idempotency_events
      WHERE (? IS NULL OR occurred_at >= ?) AND (? IS NULL OR occurred_at < ?)
        AND (? IS NULL OR operation = ?) AND (? IS NULL OR scope = ?)
      GROUP BY b, operation, kind`,
        [from, from, to, to, opts.operation ?? null, opts.operation ?? null, opts.scope ?? null, opts.scope ?? null],
      ),
  })();
  return Object.fromEntries(rows.map((r) => [`${r.b ? `${r.b.toISOString()} ` : ""}${r.operation}/${r.kind}`, Number(r.n)]));
}

/** The builder's answer in the same shape. */
async function builderCounts(sql: SqlExecutor, from: Date | null, to: Date | null, opts: { operation?: string; scope?: string; step?: number } = {}) {
  const q = eventCountsSql({ from, to, operation: opts.operation, scope: opts.scope }, { stepSeconds: opts.step });
  const rows = await sql.query<{ b?: Date; operation: string; kind: string; n: bigint }>(q.text, q.values);
  return Object.fromEntries(rows.filter((r) => r.n > 0n).map((r) => [`${r.b ? `${r.b.toISOString()} ` : ""}${r.operation}/${r.kind}`, Number(r.n)]));
}

async function rolledTotal(sql: SqlExecutor = db.sql) {
  const [r] = await sql.query<{ n: bigint | null }>(
    byDialect(sql, { postgres: `SELECT sum(count)::bigint AS n FROM event_rollups`, mysql: `SELECT CAST(SUM(count) AS SIGNED) AS n FROM event_rollups` }),
  );
  return Number(r.n ?? 0);
}

/**
 * Every coarse tier row equals the minute tier re-binned, and nothing more (rows that
 * differ, as text, for a readable failure). With `raw`, also the minute tier equals the
 * raw events (when everything is rolled up: no lag, no gaps).
 */
async function tierDifferences(sql: SqlExecutor, opts: { raw?: boolean } = {}): Promise<string[]> {
  if (sql.dialect.name === "mysql") return mysqlTierDifferences(sql, opts);
  const want = `SELECT g.s AS grain_seconds, to_timestamp(floor(extract(epoch FROM r.bucket) / g.s) * g.s) AS bucket, r.operation, r.scope, r.kind, sum(r.count)::bigint AS count
                  FROM event_rollups r CROSS JOIN unnest($1::int[]) AS g(s) GROUP BY 1, 2, 3, 4, 5`;
  const have = `SELECT grain_seconds, bucket, operation, scope, kind, count FROM event_rollup_tiers`;
  const rows = await sql.query<{ d: string }>(
    `SELECT 'missing ' || x::text AS d FROM ((${want}) EXCEPT ALL (${have})) x
     UNION ALL SELECT 'extra ' || y::text FROM ((${have}) EXCEPT ALL (${want})) y`,
    [COARSE_GRAINS],
  );
  const out = rows.map((r) => r.d);
  // The totals over every scope (ADR 0019): each grain's rows summed over the scopes, the minute tier's too.
  const wantTotals = `SELECT 60 AS grain_seconds, bucket, operation, kind, sum(count)::bigint AS count FROM event_rollups GROUP BY 2, 3, 4
                      UNION ALL SELECT grain_seconds, bucket, operation, kind, sum(count)::bigint FROM event_rollup_tiers GROUP BY 1, 2, 3, 4`;
  const haveTotals = `SELECT grain_seconds, bucket, operation, kind, count FROM event_rollup_totals`;
  const totals = await sql.query<{ d: string }>(
    `SELECT 'totals missing ' || x::text AS d FROM ((${wantTotals}) EXCEPT ALL (${haveTotals})) x
     UNION ALL SELECT 'totals extra ' || y::text FROM ((${haveTotals}) EXCEPT ALL (${wantTotals})) y`,
  );
  out.push(...totals.map((r) => r.d));
  if (opts.raw) {
    const minutes = `SELECT bucket, operation, scope, kind, count FROM event_rollups`;
    const events = `SELECT date_trunc('minute', occurred_at), operation, scope, kind, count(*)::bigint FROM idempotency_events GROUP BY 1, 2, 3, 4`;
    const m = await sql.query<{ d: string }>(
      `SELECT 'minute tier without raw ' || x::text AS d FROM ((${minutes}) EXCEPT ALL (${events})) x
       UNION ALL SELECT 'raw without minute tier ' || y::text FROM ((${events}) EXCEPT ALL (${minutes})) y`,
    );
    out.push(...m.map((r) => r.d));
  }
  return out;
}

/** tierDifferences on MySQL/MariaDB (EXCEPT ALL from MariaDB 10.5 and MySQL 8.0.31; UTC sessions: UNIX_TIMESTAMP is UTC). */
async function mysqlTierDifferences(sql: SqlExecutor, opts: { raw?: boolean }): Promise<string[]> {
  const grains = COARSE_GRAINS.map((g) => `SELECT ${g} AS s`).join(" UNION ALL ");
  // (GROUP BY resolves a name to a column before an alias on MySQL: the re-binned bucket gets its own name first.)
  const want = `SELECT w.grain_seconds, w.b AS bucket, w.operation, w.scope, w.kind, CAST(SUM(w.count) AS SIGNED) AS count FROM (
                  SELECT g.s AS grain_seconds, FROM_UNIXTIME(FLOOR(UNIX_TIMESTAMP(r.bucket) / g.s) * g.s) AS b, r.operation, r.scope, r.kind, r.count
                    FROM event_rollups r CROSS JOIN (${grains}) g) w
                GROUP BY w.grain_seconds, w.b, w.operation, w.scope, w.kind`;
  const have = `SELECT grain_seconds, bucket, operation, scope, kind, count FROM event_rollup_tiers`;
  const text = (x: string) => `CONCAT_WS(' ', ${x}.grain_seconds, ${x}.bucket, ${x}.operation, ${x}.scope, ${x}.kind, ${x}.count)`;
  const rows = await sql.query<{ d: string }>(
    `SELECT CONCAT('missing ', ${text("x")}) AS d FROM ((${want}) EXCEPT ALL (${have})) x
     UNION ALL SELECT CONCAT('extra ', ${text("y")}) FROM ((${have}) EXCEPT ALL (${want})) y`,
  );
  const out = rows.map((r) => r.d);
  const wantTotals = `SELECT 60 AS grain_seconds, bucket, operation, kind, CAST(SUM(count) AS SIGNED) AS count FROM event_rollups GROUP BY bucket, operation, kind
                      UNION ALL SELECT grain_seconds, bucket, operation, kind, CAST(SUM(count) AS SIGNED) FROM event_rollup_tiers GROUP BY grain_seconds, bucket, operation, kind`;
  const haveTotals = `SELECT grain_seconds, bucket, operation, kind, count FROM event_rollup_totals`;
  const totalsText = (x: string) => `CONCAT_WS(' ', ${x}.grain_seconds, ${x}.bucket, ${x}.operation, ${x}.kind, ${x}.count)`;
  const totals = await sql.query<{ d: string }>(
    `SELECT CONCAT('totals missing ', ${totalsText("x")}) AS d FROM ((${wantTotals}) EXCEPT ALL (${haveTotals})) x
     UNION ALL SELECT CONCAT('totals extra ', ${totalsText("y")}) FROM ((${haveTotals}) EXCEPT ALL (${wantTotals})) y`,
  );
  out.push(...totals.map((r) => r.d));
  if (opts.raw) {
    const minutes = `SELECT bucket, operation, scope, kind, count FROM event_rollups`;
    const events = `SELECT CAST(DATE_FORMAT(occurred_at, '%Y-%m-%d %H:%i:00') AS DATETIME(6)) AS bucket, operation, scope, kind, COUNT(*) AS count
                      FROM idempotency_events GROUP BY bucket, operation, scope, kind`;
    const row = (x: string) => `CONCAT_WS(' ', ${x}.bucket, ${x}.operation, ${x}.scope, ${x}.kind, ${x}.count)`;
    const m = await sql.query<{ d: string }>(
      `SELECT CONCAT('minute tier without raw ', ${row("x")}) AS d FROM ((${minutes}) EXCEPT ALL (${events})) x
       UNION ALL SELECT CONCAT('raw without minute tier ', ${row("y")}) FROM ((${events}) EXCEPT ALL (${minutes})) y`,
    );
    out.push(...m.map((r) => r.d));
  }
  return out;
}

const hourEdge = new Date(now.getTime() - 5 * HOUR); // 07:00
const dayEdge = new Date(Date.UTC(2026, 10, 28)); // 2026-11-28T00:00Z, inside the traffic
const fixedRanges: [string, Date | null, Date | null][] = [
  ["everything", new Date("2026-01-01T00:00:00Z"), new Date("2027-01-01T00:00:00Z")],
  ["all time (open ends)", null, null],
  ["from a moment on (open end)", new Date(now.getTime() - 3 * DAY + 12_345), null],
  ["up to a moment (open start)", null, new Date(now.getTime() - 2 * DAY - 54_321)],
  ["last 24 h, unaligned", new Date(now.getTime() - DAY + 17_123), new Date(now.getTime() - 5_432)],
  ["inside one minute", new Date(now.getTime() - 3 * HOUR + 5_000), new Date(now.getTime() - 3 * HOUR + 40_000)],
  ["7 days", new Date(now.getTime() - 7 * DAY), now],
  ["across an hour edge, within 2 minutes", new Date(hourEdge.getTime() - 61_500), new Date(hourEdge.getTime() + 59_500)],
  ["one whole hour", hourEdge, new Date(hourEdge.getTime() + HOUR)],
  ["an hour and a minute, unaligned", new Date(hourEdge.getTime() - 30_000), new Date(hourEdge.getTime() + HOUR + 30_001)],
  ["across a day edge, 3 h, unaligned", new Date(dayEdge.getTime() - 90 * MIN - 7_777), new Date(dayEdge.getTime() + 90 * MIN + 3_333)],
  ["one whole day", dayEdge, new Date(dayEdge.getTime() + DAY)],
  ["a day and two hours, quarter-aligned", new Date(dayEdge.getTime() - 45 * MIN), new Date(dayEdge.getTime() + DAY + 75 * MIN)],
];

/** Random ranges around hour and day edges of the traffic (deterministic). */
function randomRanges(seed: number, n: number): [string, Date, Date][] {
  const rnd = mulberry32(seed);
  const lengths = [30_000, 10 * MIN, 59 * MIN, 61 * MIN, 3 * HOUR, 25 * HOUR, 3 * DAY];
  return Array.from({ length: n }, (_, i) => {
    const edge = Math.floor(now.getTime() / HOUR) * HOUR - Math.floor(rnd() * 160) * HOUR;
    const from = edge + Math.round((rnd() - 0.5) * 3 * HOUR);
    const len = lengths[Math.floor(rnd() * lengths.length)] + Math.round((rnd() - 0.5) * 2 * MIN);
    return [`random #${i}`, new Date(from), new Date(from + Math.max(1, len))];
  });
}

const STEPS = [60, 900, 3600, 86400];

async function expectExact(label: string, opts: { series?: boolean } = {}) {
  for (const [name, from, to] of [...fixedRanges, ...randomRanges(label.length, 12)]) {
    const what = `${label}: ${name}`;
    if (from && to) expect(asMap(await db.withSession((s) => countEvents(s, { from, to }))), what).toEqual(await rawCounts(db.sql, from, to));
    expect(await builderCounts(db.sql, from, to), what).toEqual(await rawCounts(db.sql, from, to));
    if (opts.series === false || !from || !to) continue;
    for (const step of STEPS) {
      if ((to.getTime() - from.getTime()) / (step * 1000) > 5000) continue;
      expect(await builderCounts(db.sql, from, to, { step }), `${what}, step ${step} s`).toEqual(await rawCounts(db.sql, from, to, { step }));
    }
  }
  const from = new Date(now.getTime() - 7 * DAY + 12_345);
  const to = new Date(now.getTime() - 1_000);
  for (const f of [{ operation: "capture_payment" }, { scope: "tenant:acme" }, { operation: "create_order", scope: "tenant:globex" }]) {
    expect(asMap(await db.withSession((s) => countEvents(s, { from, to, ...f }))), `${label}: ${JSON.stringify(f)}`).toEqual(
      await rawCounts(db.sql, from, to, f),
    );
    expect(await builderCounts(db.sql, from, to, { ...f, step: 3600 }), `${label}: ${JSON.stringify(f)} hourly`).toEqual(
      await rawCounts(db.sql, from, to, { ...f, step: 3600 }),
    );
  }
}

describe("planCounts: how a range is split between the tiers and the raw events", () => {
  /** Every part, with its source; they must tile [from, to) exactly, each aligned to its tier. */
  function expectTiles(fromMs: number, toMs: number, grains: readonly number[]) {
    const plan = planCounts(fromMs, toMs, grains);
    const parts: { span: Span; grain: number | null }[] = [
      ...plan.raw.map((span) => ({ span, grain: null })),
      ...plan.tiers.flatMap((t) => t.spans.map((span) => ({ span, grain: t.grainSeconds }))),
    ].sort((a, b) => a.span[0] - b.span[0]);
    const where = `[${fromMs}, ${toMs}) over ${grains}`;
    if (fromMs >= toMs) return expect(parts, where).toEqual([]);
    expect(parts[0].span[0], where).toBe(fromMs);
    expect(parts[parts.length - 1].span[1], where).toBe(toMs);
    for (let i = 0; i < parts.length; i++) {
      const [lo, hi] = parts[i].span;
      expect(lo < hi, where).toBe(true);
      if (i > 0) expect(lo, where).toBe(parts[i - 1].span[1]);
      const g = parts[i].grain;
      if (g !== null) {
        expect(grains).toContain(g);
        for (const b of [lo, hi]) if (Number.isFinite(b)) expect(((b % (g * 1000)) + g * 1000) % (g * 1000), where).toBe(0);
      } else {
        expect(hi - lo < 2 * 60_000, `${where}: raw parts are partial minutes`).toBe(true);
      }
    }
    // The tiers cover one contiguous span; the raw remainder of not-rolled-up events is added there.
    const tiered = parts.filter((p) => p.grain !== null);
    expect(plan.unrolled, where).toEqual(tiered.length ? [tiered[0].span[0], tiered[tiered.length - 1].span[1]] : null);
    // Each tier but the top one only fills the edges: fewer buckets than the next grain holds, per side.
    for (const t of plan.tiers.slice(0, -1)) {
      const next = grains[grains.indexOf(t.grainSeconds) + 1];
      for (const [lo, hi] of t.spans) expect((hi - lo) / 1000 < next, where).toBe(true);
    }
    return plan;
  }

  it("tiles every range exactly, aligned, coarsest tier in the middle (random ranges, open ends, steps)", () => {
    const rnd = mulberry32(99);
    const base = Date.UTC(2026, 10, 1);
    for (let i = 0; i < 3000; i++) {
      const from = base + Math.round((rnd() - 0.5) * 10 * DAY);
      const to = from + Math.round(rnd() ** 3 * 40 * DAY) - (i % 50 === 0 ? 1000 : 0);
      for (const grains of [ROLLUP_GRAINS, [60, 900], [60, 900, 3600], [60]]) expectTiles(from, to, grains);
    }
    const open = expectTiles(-Infinity, Infinity, ROLLUP_GRAINS);
    expect(open).toEqual({ tiers: [{ grainSeconds: 86400, spans: [[-Infinity, Infinity]] }], raw: [], unrolled: [-Infinity, Infinity] });
    expectTiles(base + 1234, Infinity, ROLLUP_GRAINS);
    expectTiles(-Infinity, base - 1, ROLLUP_GRAINS);
    // A 30-day unaligned range: 29 days, ≤ 46 hours, ≤ 6 quarters and ≤ 28 minutes at the edges.
    const p = planCounts(base + 7 * HOUR + 13 * MIN + 1500, base + 30 * DAY + 5 * HOUR + 49 * MIN + 10);
    expect(p.tiers.map((t) => [t.grainSeconds, t.spans.reduce((s, [lo, hi]) => s + (hi - lo) / (t.grainSeconds * 1000), 0)])).toEqual([
      [60, 1 + 4],
      [900, 3 + 3],
      [3600, 16 + 5],
      [86400, 29],
    ]);
  });

  it("uses only the tiers whose grain divides the chart step", () => {
    const from = new Date(Date.UTC(2026, 10, 1, 3, 7, 11));
    const to = new Date(from.getTime() + 5 * DAY);
    const used = (step?: number) => eventCountsSql({ from, to }, { stepSeconds: step }).plan.tiers.map((t) => t.grainSeconds);
    expect(used()).toEqual([60, 900, 3600, 86400]);
    expect(used(86400)).toEqual([60, 900, 3600, 86400]);
    expect(used(3600)).toEqual([60, 900, 3600]);
    expect(used(900)).toEqual([60, 900]);
    expect(used(60)).toEqual([60]);
    expect(used(1800)).toEqual([60, 900]);
    expect(() => eventCountsSql({ from, to }, { stepSeconds: 90 })).toThrow(/minutes/);
  });
});

describe("event rollups (minute, 15 min, hour, day)", () => {
  it("counts are exact before any rollup (all raw), after a refresh, and after incremental updates", async () => {
    await expectExact("raw");
    const first = await db.withSession((s) => refreshRollups(s, { batchSize: 500 }));
    expect(first.batches).toBeGreaterThan(1);
    const [{ n }] = await db.sql.query<{ n: bigint }>(`SELECT count(*) AS n FROM idempotency_events`);
    expect(await rolledTotal()).toBe(Number(n));
    expect(await tierDifferences(db.sql, { raw: true })).toEqual([]);
    const [tiers] = await byDialect(db, {
      postgres: () => db.sql.query<{ grains: number[] }>(`SELECT array_agg(DISTINCT grain_seconds ORDER BY grain_seconds) AS grains FROM event_rollup_tiers`),
      mysql: async () => [
        { grains: (await db.sql.query<{ g: number }>(`SELECT DISTINCT grain_seconds AS g FROM event_rollup_tiers ORDER BY g`)).map((r) => r.g) },
      ],
    })();
    expect(tiers.grains).toEqual([900, 3600, 86400]);
    await expectExact("rolled");

    // More traffic arrives (late, backdated events included); counts stay exact before and after the next refresh.
    await generateDemoTraffic(db, { seed: 12, requests: 150, days: 7, now });
    await expectExact("above the watermark", { series: false });
    await db.withSession((s) => refreshRollups(s, { batchSize: 97 })); // several small batches
    expect(await tierDifferences(db.sql, { raw: true })).toEqual([]);
    await expectExact("incremental");
    const again = await db.withSession((s) => refreshRollups(s));
    expect(again.eventsCounted).toBe(0); // nothing counted twice
  }, 240_000);

  it("a rebuild gives the same rollups, every tier, as the incremental path", async () => {
    await db.withSession((s) => refreshRollups(s));
    const all = `SELECT 60 AS grain_seconds, bucket, operation, scope, kind, count FROM event_rollups
                 UNION ALL SELECT grain_seconds, bucket, operation, scope, kind, count FROM event_rollup_tiers ORDER BY 1, 2, 3, 4, 5`;
    const before = await db.sql.query(all);
    const rebuilt = await db.withSession((s) => rebuildRollups(s, { batchSize: 700 }));
    expect(rebuilt.gapsOpen).toBe(0);
    expect(await db.sql.query(all)).toEqual(before);
    await expectExact("rebuilt", { series: false });
  }, 120_000);

  it("a late commit (an id below the watermark that appears later) is counted raw, then rolled into every tier", async () => {
    // Two ids handed out in order; the later one commits first, across an hour edge from the earlier one.
    // (MySQL has no sequence to take ids from: the next two ids above every one in the table.)
    const [{ a }] = await db.sql.query<{ a: bigint }>(
      byDialect(db, {
        postgres: `SELECT nextval(pg_get_serial_sequence('idempotency_events', 'id')) AS a`,
        mysql: `SELECT CAST(COALESCE(MAX(id), 0) + 1 AS SIGNED) AS a FROM idempotency_events`,
      }),
    );
    const [{ b }] = await db.sql.query<{ b: bigint }>(
      byDialect(db, { postgres: `SELECT nextval(pg_get_serial_sequence('idempotency_events', 'id')) AS b`, mysql: `SELECT CAST(${a} + 1 AS SIGNED) AS b` }),
    );
    const insert = (id: bigint, at: Date, k: string) =>
      db.sql.query(
        byDialect(db, {
          postgres: `INSERT INTO idempotency_events (id, scope, operation, idempotency_key, kind, occurred_at) VALUES ($1, 'tenant:late', 'capture_payment', $2, 'reserved', $3)`,
          mysql: `INSERT INTO idempotency_events (id, scope, operation, idempotency_key, kind, occurred_at) VALUES (?, 'tenant:late', 'capture_payment', ?, 'reserved', ?)`,
        }),
        [id, k, at],
      );
    await insert(b, new Date(hourEdge.getTime() - 1), "late-b");
    const gap = async () =>
      (
        await db.sql.query(
          byDialect(db, { postgres: `SELECT 1 FROM rollup_gaps WHERE event_id = $1`, mysql: `SELECT 1 FROM rollup_gaps WHERE event_id = ?` }),
          [a],
        )
      ).length === 1;
    const r1 = await db.withSession((s) => refreshRollups(s));
    expect(r1.gapsOpen).toBeGreaterThanOrEqual(1);
    expect(await gap()).toBe(true);
    expect(await tierDifferences(db.sql)).toEqual([]);
    await insert(a, hourEdge, "late-a"); // the late commit
    await expectExact("gap open", { series: false });
    const edge = await builderCounts(db.sql, new Date(hourEdge.getTime() - HOUR), new Date(hourEdge.getTime() + HOUR), { scope: "tenant:late", step: 3600 });
    expect(edge).toEqual({
      [`${new Date(hourEdge.getTime() - HOUR).toISOString()} capture_payment/reserved`]: 1,
      [`${hourEdge.toISOString()} capture_payment/reserved`]: 1,
    });
    const r2 = await db.withSession((s) => refreshRollups(s));
    expect(await gap()).toBe(false);
    expect(r2.eventsCounted).toBe(1);
    expect(await tierDifferences(db.sql, { raw: true })).toEqual([]);
    await expectExact("gap closed");
  }, 120_000);

  it("a gap is waited for through its grace; gapGraceSeconds 0 forgets one an earlier refresh noted", async () => {
    // An id skipped for good (a rolled-back insert; a bulk load's holes are the same to the refresher).
    const insert = (s: SqlExecutor, key: string) =>
      s.query(
        `INSERT INTO idempotency_events (scope, operation, idempotency_key, kind, occurred_at) VALUES ('tenant:hole', 'capture_payment', ${s.dialect.param(1)}, 'reserved', ${s.dialect.param(2)})`,
        [key, new Date()],
      );
    await db.withSession(async (s) => {
      await s.exec("BEGIN");
      await insert(s, "hole-a");
      await s.exec("ROLLBACK");
    });
    await insert(db.sql, "hole-b");
    const gaps = async () => Number((await db.sql.query<{ n: bigint }>(`SELECT COUNT(*) AS n FROM rollup_gaps`))[0].n);
    await db.withSession((s) => refreshRollups(s));
    const noted = await gaps();
    expect(noted).toBeGreaterThanOrEqual(1);
    expect((await db.withSession((s) => refreshRollups(s))).gapsOpen).toBe(noted);
    expect((await db.withSession((s) => refreshRollups(s, { gapGraceSeconds: 0 }))).gapsOpen).toBe(0);
    await expectExact("holes forgotten");
  }, 120_000);

  it.skipIf(!usingDatabaseServer)(
    "an event committed after the watermark passed its id is still counted (gap, real concurrent writers)",
    async () => {
      // Writer A takes an id and keeps its transaction open; writer B commits a later id; the refresh runs.
      const store = new IdempotencyStore(db.prisma);
      await db.withSession(async (writerA) => {
        await writerA.exec("BEGIN");
        await writerA.query(
          `INSERT INTO idempotency_events (scope, operation, idempotency_key, kind, occurred_at) VALUES ('tenant:gap', 'capture_payment', 'gap-a', 'reserved', ${writerA.dialect.param(1)})`,
          [new Date(dayEdge.getTime() - 1)],
        );
        await store.begin({ scope: "tenant:gap", operation: "capture_payment", key: "gap-b", payload: { n: 1 } });
        const r = await db.withSession((s) => refreshRollups(s));
        expect(r.gapsOpen).toBe(1);
        await writerA.exec("COMMIT");
      });
      await expectExact("concurrent gap open", { series: false }); // exact even before the next refresh: the gap is counted raw
      const r = await db.withSession((s) => refreshRollups(s));
      expect(r.gapsOpen).toBe(0);
      const [{ n }] = await db.sql.query<{ n: bigint }>(`SELECT count(*) AS n FROM idempotency_events`);
      expect(await rolledTotal()).toBe(Number(n));
      expect(await tierDifferences(db.sql, { raw: true })).toEqual([]);
      await expectExact("concurrent gap closed", { series: false });
    },
    120_000,
  );

  it.skipIf(!usingDatabaseServer)(
    "two refreshers at once never count an event twice, in any tier",
    async () => {
      await generateDemoTraffic(db, { seed: 13, requests: 100, days: 2, now });
      await Promise.all([db.withSession((s) => refreshRollups(s, { batchSize: 200 })), db.withSession((s) => refreshRollups(s, { batchSize: 300 }))]);
      const [{ n }] = await db.sql.query<{ n: bigint }>(`SELECT count(*) AS n FROM idempotency_events`);
      expect(await rolledTotal()).toBe(Number(n));
      expect(await tierDifferences(db.sql, { raw: true })).toEqual([]);
    },
    120_000,
  );

  // PostgreSQL's guard is a statement trigger naming the writers; MySQL's (ADR 0012) is per row and passes TRUNCATE: its counterpart follows.
  it.skipIf(usingMysql)("only refreshRollups/rebuildRollups may write the rollup tables (a guard keeps the tiers in step)", async () => {
    const refused = [
      `INSERT INTO event_rollups (bucket, operation, scope, kind, count) VALUES ('2026-11-01T00:00:00Z', 'x', 'y', 'reserved', 1)`,
      `UPDATE event_rollups SET count = count + 1 WHERE FALSE`,
      `DELETE FROM event_rollup_tiers`,
      `UPDATE event_rollup_totals SET count = count + 1`,
      `TRUNCATE event_rollups`,
    ];
    for (const sql of refused) await expect(db.sql.query(sql), sql).rejects.toThrow(/refreshRollups/);
    expect(await tierDifferences(db.sql)).toEqual([]);
  });

  it.skipIf(!usingMysql)("MySQL: only the rollup writers may write the rollup tables (a row guard; TRUNCATE passes it, ADR 0012)", async () => {
    const refused = [
      `INSERT INTO event_rollups (bucket, operation, scope, kind, count) VALUES ('2026-11-01 00:00:00', 'x', 'y', 'reserved', 1)`,
      `UPDATE event_rollups SET count = count + 1`,
      `UPDATE event_rollup_tiers SET count = count + 1`,
      `DELETE FROM event_rollup_tiers`,
      `UPDATE event_rollup_totals SET count = count + 1`,
    ];
    for (const sql of refused) await expect(db.sql.query(sql), sql).rejects.toThrow(/written only by the console's rollup writers/);
    expect(await tierDifferences(db.sql)).toEqual([]);
  });
});

// PostgreSQL's migration history: the MySQL migrations begin at today's schema (ADR 0012), with no earlier rollups to migrate from.
describe.skipIf(usingMysql)("migration 20261130060000_rollup_hours on a database rolled up by the previous version", () => {
  const dirs: string[] = [];
  afterAll(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

  it("backfills the coarse tiers from the minute tier; counts stay exact; the old refresh is refused; the new one carries on", async () => {
    const dir = path.join(await mkdtemp(path.join(tmpdir(), "ic-rollup-tiers-")), "migrations");
    dirs.push(path.dirname(dir));
    // The migrations before it (the ones after it are applied with it below).
    const later = (name: string) => /^\d{14}_/.test(name) && name >= "20261130060000";
    await cp(DEFAULT_MIGRATIONS_DIR, dir, { recursive: true, filter: (src) => !later(path.basename(src)) });
    const old = await createEmptyTestDatabase();
    try {
      await old.withSession((s) => migrate(s, { dir }));
      expect((await old.sql.query<{ t: string | null }>(`SELECT to_regclass('event_rollup_tiers')::text AS t`))[0].t).toBeNull();
      // Events over four days, and the previous version's refresh: minute rollups + watermark only.
      const events = (seed: number, n: number) =>
        old.sql.query(
          `INSERT INTO idempotency_events (scope, operation, idempotency_key, kind, occurred_at)
           SELECT 'tenant:' || (i % 3), CASE WHEN i % 2 = 0 THEN 'capture_payment' ELSE 'create_order' END, 'k-' || $1 || '-' || i,
                  (ARRAY['reserved', 'replayed', 'conflict', 'completed'])[1 + i % 4], $2::timestamptz - make_interval(secs => (i * 7919) % 345600 + (i % 1000) / 1000.0)
             FROM generate_series(1, $3::int) AS i`,
          [String(seed), now, n],
        );
      await events(1, 3000);
      await old.sql.exec(`
        INSERT INTO event_rollups (bucket, operation, scope, kind, count)
        SELECT date_trunc('minute', occurred_at), operation, scope, kind, count(*) FROM idempotency_events GROUP BY 1, 2, 3, 4;
        INSERT INTO rollup_state (name, watermark) SELECT 'events', max(id) FROM idempotency_events;`);
      await events(2, 500); // above the watermark

      const applied = await old.withSession((s) => migrate(s));
      expect(applied.applied.slice(0, 2)).toEqual(["20261130060000_rollup_hours", "20261130070000_record_census"]);
      expect(applied.applied.every(later)).toBe(true);
      expect(await tierDifferences(old.sql)).toEqual([]);
      for (const [from, to] of [
        [null, null],
        [new Date(now.getTime() - 3 * DAY - 12_345), new Date(now.getTime() - 7_777)],
      ] as [Date | null, Date | null][]) {
        expect(await builderCounts(old.sql, from, to)).toEqual(await rawCounts(old.sql, from, to));
        if (from && to) expect(await builderCounts(old.sql, from, to, { step: 3600 })).toEqual(await rawCounts(old.sql, from, to, { step: 3600 }));
      }
      // A console still on the previous version: its refresh statement is refused.
      await expect(
        old.sql.query(`INSERT INTO event_rollups (bucket, operation, scope, kind, count) VALUES (date_trunc('minute', now()), 'x', 'y', 'reserved', 1)`),
      ).rejects.toThrow(/refreshRollups/);
      const r = await old.withSession((s) => refreshRollups(s));
      expect(r.eventsCounted).toBe(500);
      expect(await tierDifferences(old.sql, { raw: true })).toEqual([]);
      expect(await builderCounts(old.sql, null, null)).toEqual(await rawCounts(old.sql, null, null));
    } finally {
      await old.drop();
    }
  }, 120_000);
});
