"use client";

import { Chart, type ChartSeries } from "@/components/charts/Chart";
import { fmtInt } from "@/components/queue/read-ui";
import { bucketLabeller } from "@/lib/time/format";
import type { OverviewJson } from "./types";

/** Event kinds, in the order a request lives through them, with the console's status colours where they apply. */
const KINDS: ChartSeries[] = [
  { key: "reserved", label: "reserved", color: "#2457d6" },
  { key: "replayed", label: "replayed", color: "#0e7c86" },
  { key: "in_progress", label: "in progress", color: "var(--processing)" },
  { key: "conflict", label: "conflict", color: "#d0631a" },
  { key: "completed", label: "completed", color: "var(--completed)" },
  { key: "failed", label: "failed", color: "var(--failed)" },
  { key: "pending", label: "pending", color: "var(--pending)" },
  { key: "reconciled", label: "reconciled", color: "#6b4fd8" },
];

const percent = new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 });

/** The forecast's day labels (UTC, like its buckets). */
const dayLabel = bucketLabeller(86_400, Infinity);

/** Axis labels for the bucket size and span (UTC, like the buckets). */
function bucketLabel(data: OverviewJson): (iso: string) => string {
  return bucketLabeller(data.series.step.seconds, Date.parse(data.to) - Date.parse(data.from));
}

const STEP_NAMES: Record<string, string> = { "1m": "per minute", "15m": "per 15 minutes", "1h": "per hour", "1d": "per day" };

export function OverviewCharts({ data }: { data: OverviewJson }) {
  const label = bucketLabel(data);
  const per = STEP_NAMES[data.series.step.name] ?? `per ${data.series.step.name}`;

  const transitions = data.series.transitions.some((b) => b.total > 0) ? data.series.transitions.map((b) => ({ x: label(b.start), ...b.counts })) : [];
  const present = KINDS.filter((k) => data.series.transitions.some((b) => (b.counts as Record<string, number>)[k.key] > 0));

  const ops = data.events.byOperation.filter((o) => o.requests > 0).map((o) => o.operation);
  const rates = ops.length
    ? data.series.conflictRate.map((b) => ({
        x: label(b.start),
        ...Object.fromEntries(ops.map((op) => [op, b.byOperation[op]?.rate == null ? null : b.byOperation[op].rate! * 100])),
      }))
    : [];

  const ages = data.pendingAges.some((b) => b.count > 0) ? data.pendingAges.map((b) => ({ x: b.label, count: b.count })) : [];
  const forecast = data.expiry.forecast.some((b) => b.count > 0)
    ? data.expiry.forecast.map((b, i) => ({ x: i === 0 ? "rest of today" : dayLabel(b.start), count: b.count }))
    : [];

  return (
    <section className="ov-charts" aria-label="Charts">
      <Chart
        kind="stacked-bar"
        rows={transitions}
        x="x"
        series={present.length ? present : KINDS}
        title={`Status transitions: events by kind, ${per} (UTC)`}
        yFormat={(v) => fmtInt(v)}
        testId="chart-transitions"
      />
      <Chart
        kind="line"
        rows={rates}
        x="x"
        series={ops.map((op) => ({ key: op, label: op }))}
        title={`Conflict rate per operation, ${per} (% of requests; gaps: no requests)`}
        yFormat={(v) => `${percent.format(v)} %`}
        testId="chart-conflict-rate"
      />
      <Chart
        kind="bar"
        rows={ages}
        x="x"
        series={[{ key: "count", label: "pending records", color: "var(--pending)" }]}
        title="Pending records by age (time since last change)"
        yFormat={(v) => fmtInt(v)}
        testId="chart-pending-ages"
      />
      <Chart
        kind="bar"
        rows={forecast}
        x="x"
        series={[{ key: "count", label: "records expiring", color: "var(--accent)" }]}
        title="Expiry forecast: records expiring per UTC day, the rest of today and the next 6 days"
        yFormat={(v) => fmtInt(v)}
        testId="chart-expiry-forecast"
      />
    </section>
  );
}
