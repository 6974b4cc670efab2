"use client";

import dynamic from "next/dynamic";

/**
 * Recharts, wrapped once: every chart in the console is one of these kinds, with
 * the console's colours, axes, tooltip and empty state. Screens pass rows and the
 * series to draw; they never import recharts themselves.
 *
 * The frame (title, empty state, a box of the plot's final height) renders at once; the plot
 * (ChartPlot.tsx, the Recharts part) is loaded in the browser only when a chart with data is
 * first shown — after the screen's numbers — so no page's first load carries Recharts
 * (scripts/first-load-js.mjs), and nothing moves when the plot arrives.
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

const ChartPlot = dynamic(() => import("./ChartPlot"), {
  ssr: false,
  loading: () => <div className="rs-skeleton-bar chart-plot-loading" role="status" aria-label="Loading chart" />,
});

export function Chart<Row extends Record<string, unknown>>({
  kind,
  rows,
  x,
  series,
  height = 240,
  title,
  yFormat,
  testId,
  emptyText = "No data in this range",
}: ChartProps<Row>) {
  const nothing = rows.length === 0 || series.length === 0 || rows.every((r) => series.every((s) => !Number(r[s.key] ?? 0)));
  if (nothing) {
    return (
      <div className="chart-empty" role="img" aria-label={`${title}: ${emptyText}`} data-testid={testId} data-empty="true">
        {emptyText}
      </div>
    );
  }
  const colored = series.map((s, i) => ({ ...s, color: s.color ?? PALETTE[i % PALETTE.length] }));
  return (
    <figure className="chart" aria-label={title} data-testid={testId}>
      <div className="chart-plot" style={{ height }}>
        <ChartPlot kind={kind} rows={rows} x={x} series={colored} height={height} yFormat={yFormat} />
      </div>
      <figcaption className="subtle">{title}</figcaption>
    </figure>
  );
}
