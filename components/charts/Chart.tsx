"use client";

import {
  Area,
  AreaChart,
  Bar,
  BarChart,
  CartesianGrid,
  Legend,
  Line,
  LineChart,
  ResponsiveContainer,
  Tooltip,
  XAxis,
  YAxis,
} from "recharts";

/**
 * Recharts, wrapped once: every chart in the console is one of these kinds, with
 * the console's colours, axes, tooltip and empty state. Screens pass rows and the
 * series to draw; they never import recharts themselves.
 */
export type ChartKind = "line" | "area" | "bar" | "stacked-bar";

export interface ChartSeries {
  key: string;
  label: string;
  color?: string;
}

export interface ChartProps<Row extends Record<string, unknown>> {
  kind: ChartKind;
  rows: Row[];
  /** Field of each row for the x axis (already formatted, e.g. "14:00" or "Nov 30"). */
  x: keyof Row & string;
  series: ChartSeries[];
  height?: number;
  /** Accessible name of the chart. */
  title: string;
  yFormat?: (value: number) => string;
  testId?: string;
  /** What to say instead of an empty axis when there is nothing to draw (no rows, or every value 0). */
  emptyText?: string;
}

const PALETTE = ["#2457d6", "#1f7a3a", "#c0362c", "#b26b00", "#a3159f", "#0e7c86", "#6b4fd8", "#7a7a7a"];

export function Chart<Row extends Record<string, unknown>>({ kind, rows, x, series, height = 240, title, yFormat, testId, emptyText = "No data in this range" }: ChartProps<Row>) {
  const nothing = rows.length === 0 || series.length === 0 || rows.every((r) => series.every((s) => !Number(r[s.key] ?? 0)));
  if (nothing) {
    return (
      <div className="chart-empty" role="img" aria-label={`${title}: ${emptyText}`} data-testid={testId} data-empty="true">
        {emptyText}
      </div>
    );
  }
  const colored = series.map((s, i) => ({ ...s, color: s.color ?? PALETTE[i % PALETTE.length] }));
  const axes = [
    <CartesianGrid key="grid" strokeDasharray="3 3" stroke="var(--border)" />,
    <XAxis key="x" dataKey={x as never} tick={{ fill: "var(--muted)", fontSize: 12 }} stroke="var(--border)" minTickGap={16} />,
    <YAxis key="y" tick={{ fill: "var(--muted)", fontSize: 12 }} stroke="var(--border)" tickFormatter={yFormat} width={56} allowDecimals={false} />,
    <Tooltip
      key="tip"
      formatter={(v) => (yFormat && typeof v === "number" ? yFormat(v) : String(v))}
      contentStyle={{ background: "var(--panel)", border: "1px solid var(--border)", color: "var(--text)" }}
    />,
    colored.length > 1 ? <Legend key="legend" /> : null,
  ];
  return (
    <figure className="chart" aria-label={title} data-testid={testId}>
      <ResponsiveContainer width="100%" height={height}>
        {kind === "line" ? (
          <LineChart data={rows}>
            {axes}
            {colored.map((s) => (
              <Line key={s.key} type="monotone" dataKey={s.key} name={s.label} stroke={s.color} dot={false} strokeWidth={2} isAnimationActive={false} />
            ))}
          </LineChart>
        ) : kind === "area" ? (
          <AreaChart data={rows}>
            {axes}
            {colored.map((s) => (
              <Area key={s.key} type="monotone" dataKey={s.key} name={s.label} stroke={s.color} fill={s.color} fillOpacity={0.2} stackId="a" isAnimationActive={false} />
            ))}
          </AreaChart>
        ) : (
          <BarChart data={rows}>
            {axes}
            {colored.map((s) => (
              <Bar key={s.key} dataKey={s.key} name={s.label} fill={s.color} stackId={kind === "stacked-bar" ? "a" : undefined} isAnimationActive={false} />
            ))}
          </BarChart>
        )}
      </ResponsiveContainer>
      <figcaption className="subtle">{title}</figcaption>
    </figure>
  );
}
