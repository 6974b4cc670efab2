import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { GET as METRICS } from "@/app/api/metrics/route";
import { provideDatabase } from "@/lib/db/client";
import { COUNTER_SCOPE, plantInsightCases } from "@/lib/demo/insight-cases";
import { evaluateAlerts } from "@/lib/insights/alerts";
import { parseInsightsConfig } from "@/lib/insights/config";
import { sendWebhook, webhookKey } from "@/lib/insights/webhook";
import { refreshRollups } from "@/lib/stats/rollups";
import { useTestAuthEnv } from "./helpers/auth-fixtures";
import { createTestDatabase, type TestDatabase } from "./helpers/db";
import { call, tokenFor } from "./helpers/records-api";

/**
 * What leaves the console for operations: the shipped Prometheus alert rules and Grafana
 * dashboard (they parse, and every metric they name exists in /api/metrics), the insight
 * metrics themselves, and the outgoing webhook — retried against a real local HTTP receiver
 * that fails first, under one idempotency key.
 */

useTestAuthEnv();

const ROOT = path.resolve(import.meta.dirname, "..");
let db: TestDatabase;
let metricsText: string;

/** Functions, keywords and modifiers of PromQL the shipped expressions use (anything else bare is a metric name). */
const PROMQL_WORDS = new Set([
  "sum",
  "max",
  "min",
  "avg",
  "count",
  "by",
  "without",
  "and",
  "or",
  "unless",
  "rate",
  "irate",
  "increase",
  "delta",
  "time",
  "clamp_min",
  "clamp_max",
  "offset",
  "bool",
  "on",
  "ignoring",
  "group_left",
  "group_right",
]);

/** The metric names an expression reads: identifiers outside label matchers and strings, not PromQL words, not label names in by (…). */
export function metricNames(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, "")
    .replace(/\b(by|without|on|ignoring)\s*\([^)]*\)/g, "")
    .replace(/\[[^\]]*\]/g, "")
    .replace(/(?<![A-Za-z0-9_:])\d[\d.]*(?:e[+-]?\d+)?/gi, "0");
  const names = new Set<string>();
  for (const m of stripped.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const word = m[0];
    if (PROMQL_WORDS.has(word) || /^\d/.test(word)) continue;
    names.add(word);
  }
  return [...names];
}

beforeAll(async () => {
  db = await createTestDatabase();
  provideDatabase(db);
  await plantInsightCases(db, { seed: 5, now: new Date() });
  await db.withSession((s) => refreshRollups(s));
  await evaluateAlerts(db, { config: { ...parseInsightsConfig({}), webhookUrl: null } });
  const viewer = await tokenFor(db, ["viewer"], ["stats.read"]);
  const res = await call(METRICS, "/api/metrics", viewer.token);
  expect(res.status).toBe(200);
  metricsText = await res.text();
}, 300_000);
afterAll(() => db?.drop());

const exported = () => new Set([...metricsText.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]));

describe("the insight metrics on /api/metrics", () => {
  it("export every kind, each firing alert with its subject, and the evaluation time", () => {
    for (const kind of ["conflict_spike", "stuck_growth", "oldest_pending", "replays_after_expiry", "new_key_finding"]) {
      expect(metricsText).toMatch(new RegExp(`^idempotency_insight_alerts_firing\\{kind="${kind}"\\} \\d+$`, "m"));
    }
    expect(metricsText).toMatch(/^idempotency_insight_alerts_firing\{kind="conflict_spike"\} 1$/m);
    expect(metricsText).toContain(
      `idempotency_insight_alert_active{kind="conflict_spike",severity="critical",scope="${COUNTER_SCOPE}",operation="create_order",acknowledged="false"} 1`,
    );
    expect(metricsText).toMatch(
      /^idempotency_insight_alert_active\{kind="replays_after_expiry",severity="critical",scope="",operation="create_order",acknowledged="false"\} 1$/m,
    );
    const evaluated = Number(/^idempotency_insight_alerts_evaluated_timestamp_seconds (\S+)$/m.exec(metricsText)![1]);
    expect(Math.abs(evaluated - Date.now() / 1000)).toBeLessThan(300);
  });
});

describe("the Prometheus alert rules (ops/prometheus/idempotency-console.rules.yml)", () => {
  const doc = parseYaml(readFileSync(path.join(ROOT, "ops/prometheus/idempotency-console.rules.yml"), "utf8")) as {
    groups: {
      name: string;
      rules: { alert?: string; record?: string; expr: string; for?: string; labels?: Record<string, string>; annotations?: Record<string, string> }[];
    }[];
  };
  const rules = doc.groups.flatMap((g) => g.rules);

  it("parse as a rules file: groups of named rules, each with an expression, a severity and a summary", () => {
    expect(doc.groups.length).toBeGreaterThan(0);
    expect(rules.length).toBeGreaterThanOrEqual(8);
    for (const r of rules) {
      expect(r.alert, JSON.stringify(r)).toMatch(/^[A-Z][A-Za-z]+$/);
      expect(typeof r.expr).toBe("string");
      expect(["warning", "critical"]).toContain(r.labels?.severity);
      expect(r.annotations?.summary).toBeTruthy();
      if (r.for) expect(r.for).toMatch(/^\d+[smh]$/);
      // Balanced brackets: a typo would not load in Prometheus.
      for (const [open, close] of ["()", "{}", "[]"]) expect(r.expr.split(open).length, `${r.alert} ${open}`).toBe(r.expr.split(close).length);
    }
    expect(new Set(rules.map((r) => r.alert)).size).toBe(rules.length);
  });

  it("name only metrics that exist in /api/metrics", () => {
    const have = exported();
    const named = new Set(rules.flatMap((r) => metricNames(r.expr)));
    expect(named.size).toBeGreaterThan(5);
    for (const m of named) expect(have.has(m), `${m} is not in /api/metrics`).toBe(true);
  });

  it("the name extractor is not fooled by labels, ranges, functions or numbers", () => {
    expect(metricNames('max by (operation) (rate(idempotency_conflicts_total{kind="x"}[15m])) / clamp_min(foo_bar, 1e-9) > 0.05').sort()).toEqual([
      "foo_bar",
      "idempotency_conflicts_total",
    ]);
  });
});

describe("the Grafana dashboard (ops/grafana/idempotency-console.json)", () => {
  const dash = JSON.parse(readFileSync(path.join(ROOT, "ops/grafana/idempotency-console.json"), "utf8")) as {
    uid: string;
    title: string;
    templating: { list: { name: string; type: string; query: string }[] };
    panels: {
      id: number;
      title: string;
      type: string;
      datasource: { uid: string };
      gridPos: { x: number; y: number; w: number; h: number };
      targets: { expr: string; refId: string }[];
    }[];
  };

  it("is a dashboard over a Prometheus data source variable, with distinct panels on the 24-column grid", () => {
    expect(dash.uid).toBe("idempotency-console");
    expect(dash.templating.list).toContainEqual(expect.objectContaining({ name: "datasource", type: "datasource", query: "prometheus" }));
    expect(new Set(dash.panels.map((p) => p.id)).size).toBe(dash.panels.length);
    for (const p of dash.panels) {
      expect(p.datasource.uid).toBe("${datasource}");
      expect(p.gridPos.x + p.gridPos.w).toBeLessThanOrEqual(24);
      expect(p.targets.length).toBeGreaterThan(0);
    }
  });

  it("queries only metrics that exist in /api/metrics", () => {
    const have = exported();
    const named = new Set(dash.panels.flatMap((p) => p.targets.flatMap((t) => metricNames(t.expr))));
    expect(named.size).toBeGreaterThan(8);
    for (const m of named) expect(have.has(m), `${m} is not in /api/metrics`).toBe(true);
  });
});

/** A real HTTP receiver: answers `script` in turn (then 200), and keeps every request. */
async function receiver(script: number[]): Promise<{ url: string; server: Server; got: { key: string | undefined; body: Record<string, unknown> }[] }> {
  const got: { key: string | undefined; body: Record<string, unknown> }[] = [];
  const server = createServer(async (req: IncomingMessage, res) => {
    let text = "";
    for await (const chunk of req) text += chunk;
    got.push({ key: req.headers["idempotency-key"] as string | undefined, body: JSON.parse(text) as Record<string, unknown> });
    res.statusCode = script[got.length - 1] ?? 200;
    res.end(res.statusCode === 200 ? "ok" : "try later");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, server, got };
}

describe("the outgoing webhook", () => {
  const alert = {
    fingerprint: "conflict_spike|tenant:x|create_order|",
    kind: "conflict_spike",
    severity: "critical",
    summary: "Conflict spike",
    scope: "tenant:x",
    operation: "create_order",
    firstSeenAt: new Date("2026-12-01T10:00:00Z"),
  };

  it("is retried after failures, under one idempotency key, with Slack-compatible JSON", async () => {
    const r = await receiver([500, 503]);
    try {
      const out = await sendWebhook(r.url, alert, { attempts: 4, baseDelayMs: 10 });
      expect(out).toMatchObject({ ok: true, attempts: 3, status: 200 });
      expect(r.got.length).toBe(3);
      expect(new Set(r.got.map((g) => g.key))).toEqual(new Set([webhookKey(alert)]));
      expect(r.got[0].body.text).toMatch(/Conflict spike \(tenant:x · create_order\)/);
      expect(Array.isArray(r.got[0].body.blocks)).toBe(true);
    } finally {
      r.server.close();
    }
  });

  it("gives up on a refusal that a retry cannot fix, and after its attempts", async () => {
    const refused = await receiver([400]);
    const down = await receiver([500, 500, 500]);
    try {
      expect(await sendWebhook(refused.url, alert, { baseDelayMs: 10 })).toMatchObject({ ok: false, attempts: 1, status: 400 });
      expect(await sendWebhook(down.url, alert, { attempts: 3, baseDelayMs: 10 })).toMatchObject({ ok: false, attempts: 3, error: "HTTP 500" });
      expect(down.got.length).toBe(3);
    } finally {
      refused.server.close();
      down.server.close();
    }
  });

  it("the evaluator tells it about each new alert once; an alert it failed to deliver is sent again next time with the same key", async () => {
    // First delivery attempt fails (and its retries within the tick), the next tick succeeds.
    const r = await receiver([500, 500]);
    try {
      const cfg = { ...parseInsightsConfig({}), webhookUrl: r.url, webhookAttempts: 2 };
      await db.prisma.insightAlert.updateMany({ data: { notifiedAt: null, notifyAttempts: 0 } });
      const open = await db.prisma.insightAlert.count({ where: { resolvedAt: null } });
      expect(open).toBeGreaterThan(1);
      const first = await evaluateAlerts(db, { config: cfg });
      expect(first.notifyFailed).toBe(1);
      expect(first.notified).toBe(open - 1);
      const failed = await db.prisma.insightAlert.findFirstOrThrow({ where: { resolvedAt: null, notifiedAt: null } });
      expect(failed).toMatchObject({ notifyAttempts: 2, notifyLastError: "HTTP 500" });
      const second = await evaluateAlerts(db, { config: cfg });
      expect(second).toMatchObject({ notified: 1, notifyFailed: 0 });
      const third = await evaluateAlerts(db, { config: cfg });
      expect(third).toMatchObject({ notified: 0, notifyFailed: 0 });
      expect(r.got.length).toBe(open + 2);
      const keyOf = webhookKey(failed);
      expect(r.got.filter((g) => g.key === keyOf).length).toBe(3);
      expect(new Set(r.got.map((g) => g.key)).size).toBe(open);
    } finally {
      r.server.close();
    }
  });
});
