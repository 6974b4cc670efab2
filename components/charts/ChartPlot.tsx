"use client";

import { Area, AreaChart, Bar, BarChart, CartesianGrid, Legend, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import type { ChartKind, ChartSeries } from "./Chart";

/**
 * The plot itself — the one module that imports Recharts (~125 KB gzip). Chart.tsx loads it
 * only in the browser, after the screen's numbers have rendered, into a box of its final size.
 */
export interface ChartPlotProps {
  kind: ChartKind;
  rows: Record<string, unknown>[];
  x: string;
  /** With their colours resolved. */
  series: Required<ChartSeries>[];
  height: number;
  yFormat?: (value: number) => string;
}

export default function ChartPlot({ kind, rows, x, series, height, yFormat }: ChartPlotProps) {
  const axes = [
    <CartesianGrid key="grid" strokeDasharray="3 3" stroke="var(--border)" />,
    <XAxis key="x" dataKey={x as never} tick={{ fill: "var(--muted)", fontSize: 12 }} stroke="var(--border)" minTickGap={16} />,
    <YAxis key="y" tick={{ fill: "var(--muted)", fontSize: 12 }} stroke="var(--border)" tickFormatter={yFormat} width={56} allowDecimals={false} />,
    <Tooltip
      key="tip"
      formatter={(v) => (yFormat && typeof v === "number" ? yFormat(v) : String(v))}
      contentStyle={{ background: "var(--panel)", border: "1px solid var(--border)", color: "var(--text)" }}
    />,
    series.length > 1 ? <Legend key="legend" /> : null,
  ];
  return (
    <ResponsiveContainer width="100%" height={height}>
      {kind === "line" ? (
        <LineChart data={rows}>
          {axes}
          {series.map((s) => (
            <Line key={s.key} type="monotone" dataKey={s.key} name={s.label} stroke={s.color} dot={false} strokeWidth={2} isAnimationActive={false} />
          ))}
        </LineChart>
      ) : kind === "area" ? (
        <AreaChart data={rows}>
          {axes}
          {series.map((s) => (
            <Area
              key={s.key}
              type="monotone"
              dataKey={s.key}
              name={s.label}
              stroke={s.color}
              fill={s.color}
              fillOpacity={0.2}
              stackId="a"
              isAnimationActive={false}
            />
          ))}
        </AreaChart>
      ) : (
        <BarChart data={rows}>
          {axes}
          {series.map((s) => (
            <Bar key={s.key} dataKey={s.key} name={s.label} fill={s.color} stackId={kind === "stacked-bar" ? "a" : undefined} isAnimationActive={false} />
          ))}
        </BarChart>
      )}
    </ResponsiveContainer>
  );
}
