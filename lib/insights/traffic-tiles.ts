import type { Range } from "./store";

const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;
const floorTo = (ms: number, step: number) => Math.floor(ms / step) * step;
const ceilTo = (ms: number, step: number) => Math.ceil(ms / step) * step;

/**
 * One piece of a traffic range [lo, hi) and where its counts are read (milliseconds since the epoch):
 * - "events": raw events (the partial minutes at either edge, or a range under a minute);
 * - "minutes" / "hours": the minute rollups and the hourly tier;
 * - "unrolled": raw events of the whole-minute span the refresher has not rolled up yet (past
 *   the events watermark), so the counts are exact up to now.
 */
export interface TrafficTile {
  source: "events" | "minutes" | "hours" | "unrolled";
  lo: number;
  hi: number;
}

/** How a range is tiled for counting; each dialect's trafficSql turns every tile into one UNION ALL branch. */
export function trafficTiles(range: Range): TrafficTile[] {
  const from = range.from.getTime();
  const to = range.to.getTime();
  const m0 = ceilTo(from, MINUTE_MS);
  const m1 = floorTo(to, MINUTE_MS);
  if (m0 >= m1) return [{ source: "events", lo: from, hi: to }];
  const tiles: TrafficTile[] = [];
  if (from < m0) tiles.push({ source: "events", lo: from, hi: m0 });
  if (m1 < to) tiles.push({ source: "events", lo: m1, hi: to });
  const h0 = ceilTo(m0, HOUR_MS);
  const h1 = floorTo(m1, HOUR_MS);
  const minutes = (lo: number, hi: number) => lo < hi && tiles.push({ source: "minutes", lo, hi });
  if (h0 < h1) {
    minutes(m0, h0);
    tiles.push({ source: "hours", lo: h0, hi: h1 });
    minutes(h1, m1);
  } else {
    minutes(m0, m1);
  }
  tiles.push({ source: "unrolled", lo: m0, hi: m1 });
  return tiles;
}
