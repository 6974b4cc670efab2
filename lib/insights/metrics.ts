import { Gauge, Registry } from "prom-client";
import type { PrismaClient } from "../generated/prisma/client";
import { ALERT_KINDS } from "./alerts";

/**
 * The insights on /api/metrics: the alerts as the server's evaluator last remembered them
 * (insight_alerts; lib/insights/worker.ts every INSIGHTS_ALERTS_SECONDS) — a scrape reads a few
 * console rows and never computes an insight. Every kind is always exported (0 when none),
 * so series do not come and go; ops/prometheus/idempotency-console.rules.yml alerts on them.
 */
export async function insightMetricsText(prisma: Pick<PrismaClient, "insightAlert" | "insightState">): Promise<string> {
  const [open, state] = [
    await prisma.insightAlert.findMany({ where: { resolvedAt: null }, orderBy: { id: "asc" } }),
    await prisma.insightState.findUnique({ where: { name: "alerts" } }),
  ];
  const registry = new Registry();
  const reg = [registry];
  const firing = new Gauge({
    name: "idempotency_insight_alerts_firing",
    help: "Insight alerts firing, by kind (as last evaluated).",
    labelNames: ["kind"],
    registers: reg,
  });
  const unacked = new Gauge({
    name: "idempotency_insight_alerts_unacknowledged",
    help: "Insight alerts firing that nobody has acknowledged, by kind.",
    labelNames: ["kind"],
    registers: reg,
  });
  const active = new Gauge({
    name: "idempotency_insight_alert_active",
    help: "1 per firing insight alert, with its subject and whether it is acknowledged.",
    labelNames: ["kind", "severity", "scope", "operation", "acknowledged"],
    registers: reg,
  });
  const undelivered = new Gauge({
    name: "idempotency_insight_webhook_undelivered",
    help: "Firing insight alerts the webhook (INSIGHTS_WEBHOOK_URL) has not accepted yet (0 without a webhook).",
    registers: reg,
  });
  const evaluated = new Gauge({
    name: "idempotency_insight_alerts_evaluated_timestamp_seconds",
    help: "When the alerts were last evaluated (Unix time; 0 if never).",
    registers: reg,
  });
  for (const kind of ALERT_KINDS) {
    const rows = open.filter((r) => r.kind === kind);
    firing.set({ kind }, rows.length);
    unacked.set({ kind }, rows.filter((r) => !r.acknowledgedAt).length);
  }
  for (const r of open) {
    active.set(
      { kind: r.kind, severity: r.severity, scope: r.scope ?? "", operation: r.operation ?? "", acknowledged: r.acknowledgedAt ? "true" : "false" },
      1,
    );
  }
  undelivered.set(process.env.INSIGHTS_WEBHOOK_URL ? open.filter((r) => !r.notifiedAt).length : 0);
  evaluated.set(state ? state.evaluatedAt.getTime() / 1000 : 0);
  return registry.metrics();
}
