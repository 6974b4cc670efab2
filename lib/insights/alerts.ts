import { z } from "zod";
import { appendAudit, type RequestMeta } from "../audit";
import type { Principal } from "../auth/permissions";
import { auditActor, auditRefusals, requirePermission } from "../auth/users";
import type { Database } from "../db/client";
import type { InsightAlert } from "../generated/prisma/client";
import { reasonSchema } from "../kernel/input";
import { StateConflictError } from "../kernel/errors";
import { readSideConfig, type StuckThresholds } from "../records/config";
import { insightsConfig, type AlertThresholds, type InsightsConfig } from "./config";
import { findingFingerprint, keyQuality, requestsByGroup, type KeyFinding } from "./key-quality";
import { insightsStore } from "./store";
import { sendWebhook } from "./webhook";

/**
 * Alerts: what deserves a human now, each computed from what the console keeps —
 * - conflict_spike: a scope × operation whose conflict rate in the last window (default 1 h)
 *   is at least `factor` times its own baseline (the 7 days before), with enough conflicts and
 *   a rate worth a look (the rollups: a few rows per hour);
 * - stuck_growth: per operation, records that turned stuck within the window (the partial
 *   index of unsettled records, now and a window ago);
 * - oldest_pending: per operation, the oldest pending record older than the threshold;
 * - replays_after_expiry: per operation, same-payload retries after the key expired (the
 *   retention advisor's sample);
 * - new_key_finding: a key-quality finding first seen less than INSIGHTS_NEW_FINDING_HOURS ago.
 *
 * GET /api/v1/insights/alerts computes them as of now (read-only) and adds what the console
 * remembers (insight_alerts: since when, acknowledged by whom and why). The server's evaluator
 * (lib/insights/worker.ts, every INSIGHTS_ALERTS_SECONDS) remembers them — opens, updates and
 * resolves rows, notes new key findings — and tells the optional webhook about new ones.
 * /api/metrics exports the remembered state; a scrape never computes.
 */

export const ALERT_KINDS = ["conflict_spike", "stuck_growth", "oldest_pending", "replays_after_expiry", "new_key_finding"] as const;
export type AlertKind = (typeof ALERT_KINDS)[number];
export const ALERTS_TABLE = "insight_alerts";
/** Key-quality findings are judged over the last week. */
const KEY_FINDING_PERIOD_MS = 7 * 86_400_000;

export interface Alert {
  fingerprint: string;
  kind: AlertKind;
  severity: "warning" | "critical";
  scope: string | null;
  operation: string | null;
  summary: string;
  detail: Record<string, unknown>;
}

export interface AlertView extends Alert {
  /** Since when the console has seen it firing (null: not remembered yet — the evaluator runs every INSIGHTS_ALERTS_SECONDS). */
  firstSeenAt: Date | null;
  acknowledged: { at: Date; by: string; reason: string } | null;
  notifiedAt: Date | null;
}

export interface AlertsOptions {
  now?: Date;
  config?: InsightsConfig;
  stuck?: StuckThresholds;
}

export const fingerprintOf = (kind: AlertKind, scope: string | null, operation: string | null, subject = "") =>
  `${kind}|${scope ?? ""}|${operation ?? ""}|${subject}`;

const pct = (r: number) => `${(r * 100).toFixed(r < 0.1 ? 1 : 0)}%`;
const hours = (s: number) =>
  s >= 86400 ? `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h` : `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;

/** The firing alerts as of `now` (no writes). */
export async function computeAlerts(
  db: Pick<Database, "sql" | "prisma">,
  opts: AlertsOptions = {},
): Promise<{ evaluatedAt: Date; thresholds: AlertThresholds; alerts: Alert[]; findings: KeyFinding[] }> {
  const now = opts.now ?? new Date();
  const cfg = opts.config ?? insightsConfig();
  const t = cfg.alerts;
  const store = insightsStore(db.sql);
  const alerts: Alert[] = [];

  // Conflict spikes: the window against the scope × operation's own baseline.
  const windowStart = new Date(now.getTime() - t.conflictWindowSeconds * 1000);
  const baselineStart = new Date(windowStart.getTime() - t.conflictBaselineSeconds * 1000);
  const recent = requestsByGroup(await store.traffic({ from: windowStart, to: now }));
  const baseline = requestsByGroup(await store.traffic({ from: baselineStart, to: windowStart }));
  for (const [scope, ops] of [...recent.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    for (const [operation, g] of [...ops.entries()].sort(([a], [b]) => a.localeCompare(b))) {
      if (g.conflicts < t.conflictMinCount || g.requests === 0) continue;
      const rate = g.conflicts / g.requests;
      const b = baseline.get(scope)?.get(operation) ?? { requests: 0, conflicts: 0 };
      const baseRate = b.requests ? b.conflicts / b.requests : 0;
      if (rate < t.conflictMinRate || rate < t.conflictFactor * baseRate) continue;
      alerts.push({
        fingerprint: fingerprintOf("conflict_spike", scope, operation),
        kind: "conflict_spike",
        severity: "critical",
        scope,
        operation,
        summary: `Conflict spike: ${g.conflicts} of ${g.requests} requests (${pct(rate)}) reused a key with another payload in the last ${hours(t.conflictWindowSeconds)}, against ${pct(baseRate)} before`,
        detail: { conflicts: g.conflicts, requests: g.requests, rate, baselineConflicts: b.conflicts, baselineRequests: b.requests, baselineRate: baseRate },
      });
    }
  }

  // Stuck growth and the oldest pending record, per operation.
  for (const a of await store.activeByOperation(opts.stuck ?? readSideConfig().stuck, now, t.stuckWindowSeconds)) {
    const grew = a.stuck - a.stuckBefore;
    if (grew >= t.stuckGrowth) {
      alerts.push({
        fingerprint: fingerprintOf("stuck_growth", null, a.operation),
        kind: "stuck_growth",
        severity: "warning",
        scope: null,
        operation: a.operation,
        summary: `${grew} ${a.operation} records turned stuck in the last ${hours(t.stuckWindowSeconds)} (${a.stuck} stuck now)`,
        detail: { stuck: a.stuck, stuckBefore: a.stuckBefore, grew },
      });
    }
    const age = a.oldestPending ? Math.floor((now.getTime() - a.oldestPending.getTime()) / 1000) : 0;
    if (a.oldestPending && age >= t.oldestPendingSeconds) {
      alerts.push({
        fingerprint: fingerprintOf("oldest_pending", null, a.operation),
        kind: "oldest_pending",
        severity: "critical",
        scope: null,
        operation: a.operation,
        summary: `The oldest pending ${a.operation} has waited ${hours(age)} for its outcome (${a.pending} pending)`,
        detail: { pending: a.pending, oldestPendingSince: a.oldestPending.toISOString(), ageSeconds: age },
      });
    }
  }

  // Same-payload retries after the key expired.
  const windows = await store.retryWindows({ from: new Date(now.getTime() - t.expiredWindowSeconds * 1000), to: now }, cfg.retrySample, 10);
  for (const w of windows) {
    if (w.lateCount < t.expiredReplays) continue;
    alerts.push({
      fingerprint: fingerprintOf("replays_after_expiry", null, w.operation),
      kind: "replays_after_expiry",
      severity: "critical",
      scope: null,
      operation: w.operation,
      summary: `${w.lateCount} ${w.operation} retr${w.lateCount === 1 ? "y" : "ies"} came after the key had expired: once purged, such a retry executes again`,
      detail: {
        count: w.lateCount,
        sampled: w.sampled,
        examples: w.late.map((l) => ({
          recordId: l.recordId.toString(),
          scope: l.scope,
          idempotencyKey: l.idempotencyKey,
          occurredAt: l.occurredAt,
          expiresAt: l.expiresAt,
        })),
      },
    });
  }

  // Key-quality findings that are new.
  const quality = await keyQuality(db.sql, { from: new Date(now.getTime() - KEY_FINDING_PERIOD_MS), to: now, sample: cfg.keySample, maxScopes: cfg.maxScopes });
  const seen = new Map(
    (await db.prisma.insightFinding.findMany({ where: { fingerprint: { in: quality.findings.map(findingFingerprint) } } })).map((f) => [
      f.fingerprint,
      f.firstSeenAt,
    ]),
  );
  const newSince = now.getTime() - t.newFindingHours * 3_600_000;
  for (const f of quality.findings) {
    const first = seen.get(findingFingerprint(f));
    if (first && first.getTime() < newSince) continue;
    alerts.push({
      fingerprint: fingerprintOf("new_key_finding", f.scope, f.operation, f.kind),
      kind: "new_key_finding",
      severity: "warning",
      scope: f.scope,
      operation: f.operation,
      summary: `New key-quality finding: ${f.title.toLowerCase()} in ${f.scope} · ${f.operation === "*" ? "several operations" : f.operation}`,
      detail: { finding: f.kind, evidence: f.evidence, fix: f.fix, firstSeenAt: first ?? null },
    });
  }
  return { evaluatedAt: now, thresholds: t, alerts, findings: quality.findings };
}

function view(a: Alert, row: InsightAlert | undefined): AlertView {
  return {
    ...a,
    firstSeenAt: row?.firstSeenAt ?? null,
    acknowledged: row?.acknowledgedAt ? { at: row.acknowledgedAt, by: row.acknowledgedByLabel ?? "?", reason: row.acknowledgeReason ?? "" } : null,
    notifiedAt: row?.notifiedAt ?? null,
  };
}

export interface AlertsAnswer {
  evaluatedAt: Date;
  thresholds: AlertThresholds;
  /** When the server's evaluator last remembered the alerts (null: never). */
  rememberedAt: Date | null;
  alerts: AlertView[];
  counts: { firing: number; unacknowledged: number; critical: number };
}

/** The alerts as of now, with what the console remembers of each (GET /api/v1/insights/alerts). */
export async function listAlerts(db: Pick<Database, "sql" | "prisma">, opts: AlertsOptions = {}): Promise<AlertsAnswer> {
  const computed = await computeAlerts(db, opts);
  const rows = await db.prisma.insightAlert.findMany({ where: { resolvedAt: null, fingerprint: { in: computed.alerts.map((a) => a.fingerprint) } } });
  const byFp = new Map(rows.map((r) => [r.fingerprint, r]));
  const order: Record<string, number> = { critical: 0, warning: 1 };
  const alerts = computed.alerts.map((a) => view(a, byFp.get(a.fingerprint))).sort((a, b) => order[a.severity] - order[b.severity]);
  const state = await db.prisma.insightState.findUnique({ where: { name: "alerts" } });
  return {
    evaluatedAt: computed.evaluatedAt,
    thresholds: computed.thresholds,
    rememberedAt: state?.evaluatedAt ?? null,
    alerts,
    counts: {
      firing: alerts.length,
      unacknowledged: alerts.filter((a) => !a.acknowledged).length,
      critical: alerts.filter((a) => a.severity === "critical").length,
    },
  };
}

export const alertsQuerySchema = z
  .object({
    /** live (default): computed now; remembered: as the server's evaluator last left them (cheap: console rows only; the banner). */
    source: z.enum(["live", "remembered"]).optional(),
  })
  .strict();

/** The open alerts as the evaluator last remembered them: a few console rows, nothing computed (the banner on every page). */
export async function rememberedAlerts(db: Pick<Database, "prisma">): Promise<AlertsAnswer> {
  const [rows, state] = [
    await db.prisma.insightAlert.findMany({ where: { resolvedAt: null }, orderBy: [{ severity: "asc" }, { id: "asc" }] }),
    await db.prisma.insightState.findUnique({ where: { name: "alerts" } }),
  ];
  const alerts = rows.map((r) =>
    view(
      {
        fingerprint: r.fingerprint,
        kind: r.kind as AlertKind,
        severity: r.severity as Alert["severity"],
        scope: r.scope,
        operation: r.operation,
        summary: r.summary,
        detail: (r.detail ?? {}) as Record<string, unknown>,
      },
      r,
    ),
  );
  return {
    evaluatedAt: state?.evaluatedAt ?? new Date(0),
    thresholds: insightsConfig().alerts,
    rememberedAt: state?.evaluatedAt ?? null,
    alerts,
    counts: {
      firing: alerts.length,
      unacknowledged: alerts.filter((a) => !a.acknowledged).length,
      critical: alerts.filter((a) => a.severity === "critical").length,
    },
  };
}

export interface EvaluationResult {
  firing: number;
  opened: number;
  resolved: number;
  notified: number;
  notifyFailed: number;
}

/**
 * Computes the alerts and remembers them: new ones open a row (a resolved one reopens as a new
 * alert, its acknowledgement cleared), firing ones are updated, rows no longer firing are
 * resolved; key-quality findings are noted as seen; the webhook is told about every open alert
 * it has not heard of (one server at a time per alert: a lease on the row).
 */
export async function evaluateAlerts(db: Pick<Database, "sql" | "prisma">, opts: AlertsOptions & { notify?: boolean } = {}): Promise<EvaluationResult> {
  const now = opts.now ?? new Date();
  const cfg = opts.config ?? insightsConfig();
  const computed = await computeAlerts(db, { ...opts, now, config: cfg });
  const prisma = db.prisma;
  let opened = 0;
  for (const f of computed.findings) {
    const fingerprint = findingFingerprint(f);
    await prisma.insightFinding.upsert({
      where: { fingerprint },
      create: { fingerprint, scope: f.scope, operation: f.operation, finding: f.kind, firstSeenAt: now, lastSeenAt: now },
      update: { lastSeenAt: now },
    });
  }
  const firing = new Set(computed.alerts.map((a) => a.fingerprint));
  for (const a of computed.alerts) {
    const data = {
      kind: a.kind,
      severity: a.severity,
      scope: a.scope,
      operation: a.operation,
      summary: a.summary,
      detail: JSON.parse(JSON.stringify(a.detail)),
    };
    const existing = await prisma.insightAlert.findUnique({ where: { fingerprint: a.fingerprint } });
    if (existing && existing.resolvedAt === null) {
      await prisma.insightAlert.update({ where: { id: existing.id }, data: { ...data, lastSeenAt: now, updatedAt: now } });
      continue;
    }
    opened++;
    const fresh = {
      ...data,
      firstSeenAt: now,
      lastSeenAt: now,
      resolvedAt: null,
      acknowledgedAt: null,
      acknowledgedById: null,
      acknowledgedByLabel: null,
      acknowledgeReason: null,
      notifiedAt: null,
      notifyAttempts: 0,
      notifyLastError: null,
      notifyLeaseUntil: null,
      updatedAt: now,
    };
    await prisma.insightAlert.upsert({ where: { fingerprint: a.fingerprint }, create: { fingerprint: a.fingerprint, ...fresh }, update: fresh });
  }
  const stale = await prisma.insightAlert.findMany({ where: { resolvedAt: null }, select: { id: true, fingerprint: true } });
  const gone = stale.filter((r) => !firing.has(r.fingerprint)).map((r) => r.id);
  if (gone.length) await prisma.insightAlert.updateMany({ where: { id: { in: gone } }, data: { resolvedAt: now, updatedAt: now } });
  await prisma.insightState.upsert({
    where: { name: "alerts" },
    create: { name: "alerts", evaluatedAt: now, firing: firing.size },
    update: { evaluatedAt: now, firing: firing.size },
  });

  let notified = 0;
  let notifyFailed = 0;
  if ((opts.notify ?? true) && cfg.webhookUrl) {
    const due = await prisma.insightAlert.findMany({ where: { resolvedAt: null, notifiedAt: null }, orderBy: { id: "asc" } });
    for (const row of due) {
      const lease = new Date(Date.now() + 60_000);
      const claimed = await prisma.insightAlert.updateMany({
        where: { id: row.id, notifiedAt: null, OR: [{ notifyLeaseUntil: null }, { notifyLeaseUntil: { lt: new Date() } }] },
        data: { notifyLeaseUntil: lease },
      });
      if (claimed.count !== 1) continue;
      const r = await sendWebhook(cfg.webhookUrl, row, { attempts: cfg.webhookAttempts });
      await prisma.insightAlert.update({
        where: { id: row.id },
        data: {
          notifyAttempts: { increment: r.attempts },
          notifyLastError: r.error,
          notifiedAt: r.ok ? new Date() : null,
          notifyLeaseUntil: null,
        },
      });
      if (r.ok) notified++;
      else notifyFailed++;
    }
  }
  return { firing: firing.size, opened, resolved: gone.length, notified, notifyFailed };
}

export const acknowledgeBodySchema = z
  .object({
    /** The alert's fingerprint, as GET /api/v1/insights/alerts returns it. */
    fingerprint: z.string().min(3).max(800),
    reason: reasonSchema,
  })
  .strict();

const ackSnapshot = (r: Pick<InsightAlert, "acknowledgedAt" | "acknowledgedByLabel" | "acknowledgeReason">) =>
  r.acknowledgedAt ? { acknowledgedAt: r.acknowledgedAt, acknowledgedBy: r.acknowledgedByLabel, reason: r.acknowledgeReason } : null;

/**
 * A user acknowledges a firing alert (alerts.acknowledge): who, when and why are kept on the
 * alert and written to the audit trail in the same transaction. An alert that is not firing,
 * or is acknowledged already, is a 409 (audited as refused) with its current state.
 */
export async function acknowledgeAlert(
  db: Pick<Database, "sql" | "prisma">,
  principal: Principal,
  input: z.output<typeof acknowledgeBodySchema>,
  request?: RequestMeta,
  opts: AlertsOptions = {},
): Promise<AlertView> {
  const action = "insights.alerts.acknowledge";
  const prisma = db.prisma;
  return auditRefusals(prisma, principal, { action, reason: input.reason, request, detail: { fingerprint: input.fingerprint } }, async () => {
    requirePermission(principal, "alerts.acknowledge");
    const now = opts.now ?? new Date();
    const { alerts } = await computeAlerts(db, { ...opts, now });
    const alert = alerts.find((a) => a.fingerprint === input.fingerprint);
    if (!alert) {
      throw new StateConflictError("This alert is not firing (any more): there is nothing to acknowledge.", { fingerprint: input.fingerprint, firing: false });
    }
    const who = auditActor(principal);
    const row = await prisma.$transaction(async (tx) => {
      const data = {
        kind: alert.kind,
        severity: alert.severity,
        scope: alert.scope,
        operation: alert.operation,
        summary: alert.summary,
        detail: JSON.parse(JSON.stringify(alert.detail)),
      };
      // Remembered if the evaluator has not run yet; a row left by an earlier, resolved firing is reopened as this new alert.
      await tx.insightAlert.upsert({
        where: { fingerprint: alert.fingerprint },
        create: { fingerprint: alert.fingerprint, ...data, firstSeenAt: now, lastSeenAt: now },
        update: {},
      });
      await tx.insightAlert.updateMany({
        where: { fingerprint: alert.fingerprint, resolvedAt: { not: null } },
        data: {
          ...data,
          firstSeenAt: now,
          lastSeenAt: now,
          resolvedAt: null,
          acknowledgedAt: null,
          acknowledgedById: null,
          acknowledgedByLabel: null,
          acknowledgeReason: null,
          notifiedAt: null,
          notifyAttempts: 0,
          notifyLastError: null,
          updatedAt: now,
        },
      });
      // Conditional on "not acknowledged yet": of two acknowledgements at once, the second finds it taken.
      const taken = await tx.insightAlert.updateMany({
        where: { fingerprint: alert.fingerprint, acknowledgedAt: null },
        data: {
          acknowledgedAt: now,
          acknowledgedById: principal.userId,
          acknowledgedByLabel: ("label" in who && who.label) || principal.email,
          acknowledgeReason: input.reason,
          updatedAt: now,
        },
      });
      const updated = await tx.insightAlert.findUniqueOrThrow({ where: { fingerprint: alert.fingerprint } });
      if (taken.count === 0) {
        throw new StateConflictError(`This alert was acknowledged already by ${updated.acknowledgedByLabel} (${updated.acknowledgedAt?.toISOString()}).`, {
          fingerprint: alert.fingerprint,
          acknowledged: ackSnapshot(updated),
        });
      }
      await appendAudit(tx, {
        actor: who,
        action,
        target: { table: ALERTS_TABLE, id: updated.id },
        before: { acknowledged: null },
        after: { acknowledged: ackSnapshot(updated) },
        reason: input.reason,
        request,
        outcome: "done",
        detail: { fingerprint: alert.fingerprint, kind: alert.kind, scope: alert.scope, operation: alert.operation, summary: alert.summary },
      });
      return updated;
    });
    return view(alert, row);
  });
}
