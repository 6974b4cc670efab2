import type { Database } from "../db/client";
import { createPeriodicTask, type PeriodicTask, type TickResult } from "../db/periodic";
import { evaluateAlerts, type EvaluationResult } from "./alerts";
import { insightsConfig } from "./config";

/**
 * The server's alert evaluator: every INSIGHTS_ALERTS_SECONDS (default 60; 0 = off) it
 * computes the alerts, remembers them (insight_alerts, insight_findings) and tells the optional
 * webhook about new ones. Several servers may run it: rows are upserted by fingerprint, and a
 * lease on each row lets one server send its webhook (whose idempotency key dedups the rest).
 */
export type AlertsTick = TickResult & Partial<EvaluationResult>;

export function startInsightAlerts(getDb: () => Promise<Database>): PeriodicTask<AlertsTick> | null {
  const cfg = insightsConfig();
  if (cfg.alertsIntervalSeconds === 0) return null;
  const task = createPeriodicTask<AlertsTick>({
    name: "insight alerts",
    intervalSeconds: cfg.alertsIntervalSeconds,
    firstDelayMs: 5_000,
    work: async () => ({ status: "ok", ...(await evaluateAlerts(await getDb())) }),
    failed: (error) => ({ status: "failed", error }),
    skipped: (status) => ({ status }),
    describe: (r) =>
      r.opened || r.resolved || r.notifyFailed
        ? `${r.firing} firing (${r.opened} new, ${r.resolved} resolved; webhook: ${r.notified} sent, ${r.notifyFailed} failed)`
        : null,
  });
  return task;
}
