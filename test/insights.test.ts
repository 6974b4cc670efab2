import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { POST as ACK } from "@/app/api/v1/insights/alerts/acknowledge/route";
import { GET as ALERTS } from "@/app/api/v1/insights/alerts/route";
import { GET as KEY_QUALITY } from "@/app/api/v1/insights/key-quality/route";
import { GET as RETENTION } from "@/app/api/v1/insights/retention/route";
import { GET as STORY } from "@/app/api/v1/records/[id]/story/route";
import { provideDatabase } from "@/lib/db/client";
import { COUNTER_RESET, COUNTER_SCOPE, LATE_RETRIES, LATE_SCOPE } from "@/lib/demo/insight-cases";
import { generateDemoTraffic, type DemoSummary } from "@/lib/demo/traffic";
import { IdempotencyStore } from "@/lib/idempotency";
import { computeAlerts, evaluateAlerts } from "@/lib/insights/alerts";
import { DEFAULT_THRESHOLDS, parseInsightsConfig } from "@/lib/insights/config";
import { keyQuality } from "@/lib/insights/key-quality";
import { counterOf, keyShapes, looksLikeTimestamp, positionalEntropyBits } from "@/lib/insights/keys";
import { retentionAdvice } from "@/lib/insights/retention";
import { insightsStore } from "@/lib/insights/store";
import { formatTime } from "@/lib/insights/story";
import { refreshRollups } from "@/lib/stats/rollups";
import { useTestAuthEnv } from "./helpers/auth-fixtures";
import { createTestDatabase, type TestDatabase } from "./helpers/db";
import { call, json, tokenFor } from "./helpers/records-api";
import { queryBound } from "./helpers/sql";

/**
 * The insights (issue 17) on the demo traffic with its planted cases: each insight finds
 * exactly what was planted — a client of one scope with counter keys (`ord-000042`) whose
 * redeploy restarted the counter (a conflict spike), retries after the key expired — and
 * nothing else; the numbers equal raw SQL over the whole tables; acknowledgement is a
 * permission-checked, reasoned, audited, idempotent mutation; the record page's story tells
 * the counter client's record.
 */

useTestAuthEnv();

const DAY = 86_400_000;
const HOUR = 3_600_000;
let db: TestDatabase;
let summary: DemoSummary;
let NOW: Date;

beforeAll(async () => {
  db = await createTestDatabase();
  provideDatabase(db);
  NOW = new Date(Math.floor(Date.now() / 1000) * 1000);
  summary = await generateDemoTraffic(db, { seed: 17, now: NOW, days: 30, requests: 1200, insightCases: true });
  await db.withSession((s) => refreshRollups(s));
}, 600_000);
afterAll(() => db?.drop());

describe("key shapes (no database)", () => {
  const uuids = Array.from({ length: 40 }, () => crypto.randomUUID());
  it("a counter is sequential, short and low in entropy; random UUIDs are nothing", () => {
    const counter = Array.from({ length: 40 }, (_, i) => `ord-${String(i + 1).padStart(6, "0")}`);
    expect(keyShapes(counter).map((s) => s.shape)).toEqual(["short", "sequential", "low_entropy"]);
    expect(keyShapes(uuids)).toEqual([]);
    expect(positionalEntropyBits(uuids)).toBeGreaterThan(100);
    expect(positionalEntropyBits(counter)).toBeLessThan(15);
  });
  it("a counter among random keys is found when it is a fifth of them; too few keys are not judged", () => {
    const mixed = [...uuids, ...uuids.map((u) => `${u}-b`), ...Array.from({ length: 20 }, (_, i) => `checkout-counter-${1000 + i}`)];
    expect(keyShapes(mixed).map((s) => s.shape)).toEqual(["sequential"]);
    expect(keyShapes(Array.from({ length: 19 }, (_, i) => `ord-${i}`))).toEqual([]);
  });
  it("timestamps, in seconds, milliseconds or as a date-time, are not counters", () => {
    const base = 1_764_000_000;
    const stamps = Array.from({ length: 30 }, (_, i) => `req-${base + i * 37}-${crypto.randomUUID()}`);
    expect(keyShapes(stamps).map((s) => s.shape)).toEqual(["timestamp"]);
    expect(looksLikeTimestamp("evt_1764000000123")).toBe(true);
    expect(looksLikeTimestamp("2026-12-01T10:00:00Z-a")).toBe(true);
    expect(looksLikeTimestamp("ord-000042")).toBe(false);
    expect(counterOf("bulk-1-77")).toEqual({ template: "bulk-1-#", value: 77, digits: 2 });
  });
  it("thresholds come from the environment and malformed ones are refused", () => {
    expect(parseInsightsConfig({}).alerts).toEqual(DEFAULT_THRESHOLDS);
    const c = parseInsightsConfig({
      INSIGHTS_CONFLICT_WINDOW: "30m",
      INSIGHTS_CONFLICT_FACTOR: "3",
      INSIGHTS_OLDEST_PENDING: "2h",
      INSIGHTS_WEBHOOK_URL: "http://x",
    });
    expect([c.alerts.conflictWindowSeconds, c.alerts.conflictFactor, c.alerts.oldestPendingSeconds, c.webhookUrl]).toEqual([1800, 3, 7200, "http://x"]);
    expect(() => parseInsightsConfig({ INSIGHTS_CONFLICT_MIN: "0.5" })).toThrow(/INSIGHTS_CONFLICT_MIN/);
    expect(() => parseInsightsConfig({ INSIGHTS_STUCK_WINDOW: "soon" })).toThrow(/INSIGHTS_STUCK_WINDOW/);
    expect(() => parseInsightsConfig({ INSIGHTS_WEBHOOK_URL: "ftp://x" })).toThrow(/INSIGHTS_WEBHOOK_URL/);
  });
});

describe("key quality", () => {
  it("flags the scope whose client makes keys from a counter, and only it", async () => {
    const r = await keyQuality(db.sql, { from: new Date(NOW.getTime() - 7 * DAY), to: NOW });
    expect(r.scopes.map((s) => s.scope)).toContain(COUNTER_SCOPE);
    expect(r.scopes.length).toBe(6); // the five demo tenants and the counter client
    expect([...new Set(r.findings.map((f) => `${f.scope} ${f.operation}`))]).toEqual([`${COUNTER_SCOPE} create_order`]);
    const kinds = r.findings.map((f) => f.kind);
    expect(kinds).toEqual(["short", "sequential", "low_entropy", "payload_reuse"]);
    const seq = r.findings.find((f) => f.kind === "sequential")!;
    expect(seq.evidence.examples.every((k) => /^ord-\d{6}$/.test(k))).toBe(true);
    expect(seq.evidence.count).toBe(48);
    expect(seq.evidence.note).toMatch(/ord-<n> with n from 1 to 48/);
    expect(seq.fix).toMatch(/UUID/);
    expect(seq.evidence.trafficShare).toBeGreaterThan(0.3);
    const reuse = r.findings.find((f) => f.kind === "payload_reuse")!;
    expect(reuse.evidence.count).toBe(COUNTER_RESET);
    // The same client's payments SDK makes random keys: nothing to say about them.
    const scope = r.scopes.find((s) => s.scope === COUNTER_SCOPE)!;
    expect(scope.operations.find((o) => o.operation === "capture_payment")).toMatchObject({ sampled: 48, findings: [] });
    expect(r.sampling.note).toMatch(/newest 1000 records per scope/);
  });

  it("GET /api/v1/insights/key-quality answers the same, for every role (stats.read), with filters", async () => {
    const { token } = await tokenFor(db, ["viewer"]);
    const res = await call(KEY_QUALITY, `/api/v1/insights/key-quality?scope=${encodeURIComponent(COUNTER_SCOPE)}`, token);
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body.scopes.map((s: { scope: string }) => s.scope)).toEqual([COUNTER_SCOPE]);
    expect(body.findings.length).toBe(4);
    const other = await json(await call(KEY_QUALITY, `/api/v1/insights/key-quality?scope=tenant:acme`, token));
    expect(other.findings).toEqual([]);
    expect((await call(KEY_QUALITY, `/api/v1/insights/key-quality?from=2026-01-01T00:00:00Z&to=2026-03-01T00:00:00Z`, token)).status).toBe(400);
  });
});

interface RawWindow {
  operation: string;
  keys: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

describe("retention advisor", () => {
  it("lists the retries after expiry that were planted, and no other", async () => {
    const r = await retentionAdvice(db, { from: new Date(NOW.getTime() - 30 * DAY), to: NOW });
    const late = r.operations.flatMap((o) => o.lateRetries.items);
    expect(late.map((l) => l.recordId.toString()).sort()).toEqual([...summary.insightCases!.lateRetries.recordIds].sort());
    expect(late.every((l) => l.scope === LATE_SCOPE && l.operation === "create_order" && l.kind === "replayed")).toBe(true);
    expect(late.map((l) => Math.round(l.lateBySeconds / 3600)).sort()).toEqual([2, 3, 4]);
    const flagged = r.operations.filter((o) => o.flags.some((f) => f.kind === "retries_after_expiry")).map((o) => o.operation);
    expect(flagged).toEqual(["create_order"]);
    const order = r.operations.find((o) => o.operation === "create_order")!;
    expect(order.lateRetries.count).toBe(LATE_RETRIES);
    expect(order.expiry.ttlSeconds).toBe(86400);
    expect(order.proposal.keepRecordsDays).toBeGreaterThanOrEqual(1);
    expect(order.proposal.serviceTtlSeconds).toBeGreaterThan(86400);
    expect(order.proposal.why).toMatch(/late retries/);
  });

  it("retry windows equal raw SQL over every retry event (the sample holds them all), and the storage flag follows its rule", async () => {
    const from = new Date(NOW.getTime() - 30 * DAY);
    const r = await retentionAdvice(db, { from, to: NOW });
    // MariaDB has percentile_cont as a window function only (MySQL 8 has none: this file runs on MariaDB).
    const raw = await queryBound<RawWindow>(
      db.sql,
      db.sql.dialect.name === "mysql"
        ? `SELECT DISTINCT operation, COUNT(*) OVER (PARTITION BY operation) AS "keys",
                  PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY w) OVER (PARTITION BY operation) AS p50,
                  PERCENTILE_CONT(0.95) WITHIN GROUP (ORDER BY w) OVER (PARTITION BY operation) AS p95,
                  PERCENTILE_CONT(0.99) WITHIN GROUP (ORDER BY w) OVER (PARTITION BY operation) AS p99,
                  MAX(w) OVER (PARTITION BY operation) AS "max"
             FROM (SELECT e.operation, e.record_id, TIMESTAMPDIFF(MICROSECOND, MIN(r.created_at), MAX(e.occurred_at)) / 1000000 AS w
                     FROM idempotency_events e JOIN idempotency_records r ON r.id = e.record_id
                    WHERE e.kind IN ('replayed', 'in_progress', 'conflict') AND e.occurred_at >= $1 AND e.occurred_at < $2
                    GROUP BY e.operation, e.record_id) k
            ORDER BY operation`
        : `SELECT operation, count(*)::int AS keys,
              percentile_cont(0.5) WITHIN GROUP (ORDER BY w) AS p50, percentile_cont(0.95) WITHIN GROUP (ORDER BY w) AS p95,
              percentile_cont(0.99) WITHIN GROUP (ORDER BY w) AS p99, max(w) AS max
         FROM (SELECT e.operation, e.record_id, extract(epoch FROM max(e.occurred_at) - min(r.created_at))::float8 AS w
                 FROM idempotency_events e JOIN idempotency_records r ON r.id = e.record_id
                WHERE e.kind IN ('replayed', 'in_progress', 'conflict') AND e.occurred_at >= $1 AND e.occurred_at < $2
                GROUP BY e.operation, e.record_id) k
        GROUP BY operation ORDER BY operation`,
      [from, NOW],
    ).then((rows) => rows.map((w) => ({ ...w, keys: Number(w.keys), p50: Number(w.p50), p95: Number(w.p95), p99: Number(w.p99), max: Number(w.max) })));
    expect(raw.length).toBeGreaterThan(3);
    for (const w of raw) {
      const o = r.operations.find((x) => x.operation === w.operation)!;
      expect(o.retries.sampled, w.operation).toBe(false);
      expect(o.retries.keys, w.operation).toBe(w.keys);
      expect(o.window.p50Seconds!).toBeCloseTo(w.p50, 3);
      expect(o.window.p95Seconds!).toBeCloseTo(w.p95, 3);
      expect(o.window.p99Seconds!).toBeCloseTo(w.p99, 3);
      expect(o.window.maxSeconds!).toBeCloseTo(w.max, 3);
      const tooLong = o.flags.some((f) => f.kind === "kept_too_long");
      expect(tooLong, w.operation).toBe(w.keys >= 20 && o.lateRetries.count === 0 && o.expiry.ttlSeconds! / Math.max(w.max, 1) >= r.sampling.storageFactor);
    }
  });

  it("a smaller sample says so", async () => {
    const range = { from: new Date(NOW.getTime() - 30 * DAY), to: NOW };
    const full = await retentionAdvice(db, range);
    const busiest = [...full.operations].sort((a, b) => b.retries.events - a.retries.events)[0];
    expect(busiest.retries.events).toBeGreaterThan(50);
    const r = await retentionAdvice(db, { ...range, sample: 100 });
    const sampled = r.operations.find((o) => o.operation === busiest.operation)!;
    expect(sampled.retries.sampled).toBe(true);
    expect(sampled.retries.events).toBeLessThanOrEqual(24 * Math.ceil(100 / 24));
    expect(sampled.retries.events).toBeLessThan(busiest.retries.events);
    expect(r.sampling.note).toMatch(/at most 100 retry events .* 24 equal slices/);
  });

  it("GET /api/v1/insights/retention: every role may read it; the policy and a proposal come with it", async () => {
    const { token } = await tokenFor(db, ["support"]);
    const res = await call(RETENTION, `/api/v1/insights/retention?operation=create_order`, token);
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body.operations.map((o: { operation: string }) => o.operation)).toEqual(["create_order"]);
    expect(body.operations[0].policy).toEqual({ source: "none", keepRecordsDays: null, keepEventsDays: null, enabled: false });
    expect(body.operations[0].proposal.operation).toBe("create_order");
  });
});

describe("alerts", () => {
  it("fire for exactly the planted cases (and the demo's old pending payments), nothing else", async () => {
    const { alerts } = await computeAlerts(db, { now: NOW });
    const by = (k: string) => alerts.filter((a) => a.kind === k).map((a) => `${a.scope ?? ""}|${a.operation ?? ""}`);
    expect(by("conflict_spike")).toEqual([`${COUNTER_SCOPE}|create_order`]);
    expect(by("replays_after_expiry")).toEqual(["|create_order"]);
    expect(by("stuck_growth")).toEqual([]);
    expect(new Set(by("new_key_finding"))).toEqual(new Set([`${COUNTER_SCOPE}|create_order`]));
    const oldPending = await queryBound<{ operation: string }>(
      db.sql,
      `SELECT operation FROM idempotency_records WHERE status = 'pending' GROUP BY operation HAVING min(updated_at) <= $1 ORDER BY 1`,
      [new Date(NOW.getTime() - 24 * HOUR)],
    );
    expect(summary.scenarios.pendingOld).toBeGreaterThan(0);
    expect(by("oldest_pending").sort()).toEqual(oldPending.map((o) => `|${o.operation}`));
    const spike = alerts.find((a) => a.kind === "conflict_spike")!;
    expect(spike.detail).toMatchObject({ conflicts: COUNTER_RESET, baselineConflicts: 0 });
  });

  it("thresholds decide: one conflict too few, or a baseline as high, and there is no spike; stuck growth fires at its count", async () => {
    const cfg = parseInsightsConfig({});
    const none = await computeAlerts(db, { now: NOW, config: { ...cfg, alerts: { ...cfg.alerts, conflictMinCount: COUNTER_RESET + 1 } } });
    expect(none.alerts.filter((a) => a.kind === "conflict_spike")).toEqual([]);
    // A baseline window that holds the spike itself: the rate is no longer 5× its own baseline.
    const later = new Date(NOW.getTime() + 30 * 60_000);
    const shifted = await computeAlerts(db, { now: later, config: { ...cfg, alerts: { ...cfg.alerts, conflictWindowSeconds: 600, conflictMinCount: 1 } } });
    expect(shifted.alerts.filter((a) => a.kind === "conflict_spike")).toEqual([]);
    const low = await computeAlerts(db, { now: NOW, config: { ...cfg, alerts: { ...cfg.alerts, stuckGrowth: 1, stuckWindowSeconds: (30 * DAY) / 1000 } } });
    const stuck = low.alerts.filter((a) => a.kind === "stuck_growth");
    expect(stuck.length).toBeGreaterThan(0);
    const [{ n }] = await queryBound<{ n: number }>(db.sql, `SELECT count(*) AS n FROM idempotency_records WHERE status = 'processing' AND updated_at < $1`, [
      new Date(NOW.getTime() - 5 * 60_000),
    ]);
    expect(stuck.reduce((s, a) => s + (a.detail.grew as number), 0)).toBe(Number(n));
  });

  it("acknowledgement: permission, reason, audit, idempotency", async () => {
    const operator = await tokenFor(db, ["operator"]);
    const viewer = await tokenFor(db, ["viewer"]);
    const list = await json(await call(ALERTS, "/api/v1/insights/alerts", viewer.token));
    const spike = list.alerts.find((a: { kind: string }) => a.kind === "conflict_spike");
    expect(spike).toMatchObject({ scope: COUNTER_SCOPE, acknowledged: null });
    const ack = (token: string, body: unknown, key: string | null) =>
      call(ACK, "/api/v1/insights/alerts/acknowledge", token, {
        method: "POST",
        body: JSON.stringify(body),
        headers: { "content-type": "application/json", ...(key ? { "idempotency-key": key } : {}) },
      });
    const body = { fingerprint: spike.fingerprint, reason: "client vandelay redeployed; their team is on it" };

    const refused = await ack(viewer.token, body, "k-viewer");
    expect(refused.status).toBe(403);
    expect(await db.prisma.auditEntry.count({ where: { action: "insights.alerts.acknowledge", outcome: "refused", actorId: String(viewer.userId) } })).toBe(1);
    expect((await ack(operator.token, { fingerprint: spike.fingerprint }, "k-1")).status).toBe(400);
    expect((await ack(operator.token, body, null)).status).toBe(400);

    const first = await ack(operator.token, body, "k-2");
    expect(first.status).toBe(200);
    const done = await json(first);
    expect(done.alert.acknowledged).toMatchObject({ by: `${operator.email} (token records test)`, reason: body.reason });
    const entry = await db.prisma.auditEntry.findFirstOrThrow({ where: { action: "insights.alerts.acknowledge", outcome: "done" } });
    expect(entry).toMatchObject({ reason: body.reason, actorId: String(operator.userId), targetTable: "insight_alerts" });
    expect(entry.after).toMatchObject({ acknowledged: { acknowledgedBy: done.alert.acknowledged.by, reason: body.reason } });

    const replay = await ack(operator.token, body, "k-2");
    expect(replay.status).toBe(200);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(await json(replay)).toEqual(done);
    expect(await db.prisma.auditEntry.count({ where: { action: "insights.alerts.acknowledge", outcome: "done" } })).toBe(1);
    expect((await ack(operator.token, { ...body, reason: "another reason" }, "k-2")).status).toBe(422);
    const again = await ack(operator.token, body, "k-3");
    expect(again.status).toBe(409);
    expect((await json(again)).current.acknowledged.acknowledgedBy).toBe(done.alert.acknowledged.by);
    expect((await ack(operator.token, { fingerprint: "conflict_spike|tenant:nobody|x|", reason: "nothing there" }, "k-4")).status).toBe(409);

    const after = await json(await call(ALERTS, "/api/v1/insights/alerts", viewer.token));
    expect(after.alerts.find((a: { fingerprint: string }) => a.fingerprint === spike.fingerprint).acknowledged.reason).toBe(body.reason);
    expect(after.counts.unacknowledged).toBe(after.counts.firing - 1);
  });

  it("the evaluator remembers alerts, keeps the acknowledgement while one fires and resolves what stopped", async () => {
    const cfg = { ...parseInsightsConfig({}), webhookUrl: null };
    const first = await evaluateAlerts(db, { config: cfg });
    expect(first.firing).toBeGreaterThan(3);
    const spike = await db.prisma.insightAlert.findFirstOrThrow({ where: { kind: "conflict_spike" } });
    expect(spike.acknowledgedAt).not.toBeNull();
    expect(await db.prisma.insightFinding.count({ where: { scope: COUNTER_SCOPE } })).toBe(4);
    const quiet = { ...cfg, alerts: { ...cfg.alerts, conflictMinCount: 1000 } };
    const second = await evaluateAlerts(db, { config: quiet });
    expect(second.resolved).toBe(1);
    expect((await db.prisma.insightAlert.findFirstOrThrow({ where: { kind: "conflict_spike" } })).resolvedAt).not.toBeNull();
    const third = await evaluateAlerts(db, { config: cfg });
    expect(third.opened).toBe(1);
    const reopened = await db.prisma.insightAlert.findFirstOrThrow({ where: { kind: "conflict_spike" } });
    expect([reopened.resolvedAt, reopened.acknowledgedAt]).toEqual([null, null]);
    // Findings first seen more than INSIGHTS_NEW_FINDING_HOURS ago are not new any more.
    await db.prisma.insightFinding.updateMany({ data: { firstSeenAt: new Date(NOW.getTime() - 2 * DAY) } });
    const { alerts } = await computeAlerts(db, { now: NOW });
    expect(alerts.filter((a) => a.kind === "new_key_finding")).toEqual([]);
  });
});

describe("the story of an intent", () => {
  it("tells the counter client's record: first request, completion, the conflict after the redeploy, in the reader's zone", async () => {
    const support = await tokenFor(db, ["support"]);
    await db.prisma.consoleUser.update({ where: { id: support.userId }, data: { timeZone: "Europe/Berlin" } });
    const id = summary.insightCases!.storyRecordId;
    const res = await call(STORY, `/api/v1/records/${id}/story`, support.token, {}, { id });
    expect(res.status).toBe(200);
    const story = await json(res);
    expect(story.timeZone).toBe("Europe/Berlin");
    expect(story.sentences.map((s: { kind: string }) => s.kind)).toEqual(["first_request", "completed", "expiry", "conflict"]);
    expect(story.text).toMatch(/the client of tenant:vandelay first asked to create order for \$[\d.,]+ under the idempotency key ord-000001/);
    expect(story.text).toMatch(/reused this key with a different payload \(payload hash [0-9a-f]{12}… instead of [0-9a-f]{12}…\): it was refused \(422\)/);
    expect(story.text).toMatch(/after the key had expired/);
    expect(story.text).toMatch(/\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\+01:00/);
    expect(story.text).not.toMatch(/ UTC[ .;,)]/);
    const record = await db.prisma.idempotencyRecord.findUniqueOrThrow({ where: { id: BigInt(id) } });
    expect(story.text).toContain(formatTime(record.createdAt, "Europe/Berlin"));
  });

  it("names the duplicates of the same intent, and the retries after expiry", async () => {
    const viewer = await tokenFor(db, ["viewer"]);
    const pair = summary.doubleSubmits[0];
    const dup = await json(await call(STORY, `/api/v1/records/${pair.recordIds[0]}/story`, viewer.token, {}, { id: pair.recordIds[0] }));
    expect(dup.sentences.find((s: { kind: string }) => s.kind === "duplicates").text).toContain(pair.keys[1]);
    const lateId = summary.insightCases!.lateRetries.recordIds[0];
    const late = await json(await call(STORY, `/api/v1/records/${lateId}/story`, viewer.token, {}, { id: lateId }));
    expect(late.sentences.map((s: { kind: string }) => s.kind)).toContain("after_expiry");
    expect(late.text).toMatch(/came after the key had expired .* late/);
  });

  it("quotes the stored response only for readers who may read it", async () => {
    const [declined] = await db.sql.query<{ id: bigint }>(
      `SELECT id FROM idempotency_records WHERE status = 'failed' AND response_code = 402 AND response_body LIKE '%detail%' ORDER BY id LIMIT 1`,
    );
    const id = declined.id.toString();
    const viewer = await tokenFor(db, ["viewer"]);
    const support = await tokenFor(db, ["support"]);
    const failed = async (token: string) =>
      (await json(await call(STORY, `/api/v1/records/${id}/story`, token, {}, { id }))).sentences.find((s: { kind: string }) => s.kind === "failed")
        .text as string;
    const [asViewer, asSupport] = [await failed(viewer.token), await failed(support.token)];
    expect(asViewer).toMatch(/answered 402; the service noted: provider \w+ declined/);
    expect(asViewer).not.toContain("“");
    expect(asSupport).toMatch(/answered 402 \(“[^”]+”\)/);
    expect((await call(STORY, `/api/v1/records/999999999/story`, viewer.token, {}, { id: "999999999" })).status).toBe(404);
  });
});

describe("traffic counts (the alerts' input)", () => {
  // Last: it writes events the other tests' whole-table truths do not expect.
  it("equal raw events for ranges cut anywhere, over rolled-up hours and minutes and events not rolled up yet", async () => {
    const scope = "tenant:tiles";
    // Written after the refresh above: past the events watermark, in no rollup.
    for (let i = 0; i < 24; i++) {
      const at = new Date(NOW.getTime() - i * 7 * 60_000 - (i % 5) * 13_000);
      await new IdempotencyStore(db.prisma, { clock: () => at }).begin({ scope, operation: "create_order", key: `tile-${i % 18}`, payload: { cart: i } });
    }
    const store = insightsStore(db.sql);
    const ranges: [number, number][] = [
      [NOW.getTime() - 3 * HOUR + 17_000, NOW.getTime() - 7_000], // hours, minutes at both ends, partial minutes
      [NOW.getTime() - 26 * HOUR - 1_500, NOW.getTime() - 2 * HOUR + 45_000],
      [NOW.getTime() - 90_000 + 3_000, NOW.getTime() - 30_000], // under two minutes
      [NOW.getTime() - 20_000, NOW.getTime() - 5_000], // under a minute
      [NOW.getTime() - 31 * DAY, NOW.getTime() + 1_000], // everything
    ];
    for (const [from, to] of ranges) {
      const raw = await queryBound<{ scope: string; operation: string; kind: string; n: unknown }>(
        db.sql,
        `SELECT scope, operation, kind, count(*) AS n FROM idempotency_events WHERE occurred_at >= $1 AND occurred_at < $2 GROUP BY scope, operation, kind`,
        [new Date(from), new Date(to)],
      );
      const key = (r: { scope: string; operation: string; kind: string; n: unknown }) => `${r.scope}|${r.operation}|${r.kind}|${Number(r.n)}`;
      const got = (await store.traffic({ from: new Date(from), to: new Date(to) })).filter((r) => Number(r.n) > 0);
      expect(got.map(key).sort(), `${new Date(from).toISOString()} – ${new Date(to).toISOString()}`).toEqual(raw.map(key).sort());
    }
  });
});
