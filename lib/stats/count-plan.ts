/**
 * The rollup tiers and which of them counts which part of a range, without SQL: the
 * decision every dialect's event-count statement follows (lib/stats/rollups.ts explains
 * the tiers; rollup-store.postgres.ts turns a plan into one statement).
 */

/** The tiers, finest first; each grain divides the next. 60 = event_rollups, the rest event_rollup_tiers (without a scope filter, event_rollup_totals holds every grain: ADR 0019). */
export const ROLLUP_GRAINS = [60, 900, 3600, 86400] as const;
export const COARSE_GRAINS = ROLLUP_GRAINS.slice(1);

export interface EventCountFilter {
  from: Date;
  to: Date;
  operation?: string;
  scope?: string;
}

/**
 * Which table holds a tier's counts: without a scope filter the totals over every scope (every
 * grain, ADR 0019); with one, the minute tier (event_rollups, no grain column) or the coarser
 * tiers (event_rollup_tiers), a row per scope. `byGrain`: the table holds several grains, so a
 * read names the grain.
 */
export function rollupSource(grainSeconds: number, scoped: boolean): { table: string; byGrain: boolean } {
  if (!scoped) return { table: "event_rollup_totals", byGrain: true };
  return grainSeconds === 60 ? { table: "event_rollups", byGrain: false } : { table: "event_rollup_tiers", byGrain: true };
}

/** A range to count in: [from, to); an absent bound is open (no from/to: all time). */
export interface EventRangeFilter {
  from?: Date | null;
  to?: Date | null;
  operation?: string;
  scope?: string;
}

/** [lo, hi) in epoch ms; ±Infinity = open. */
export type Span = readonly [number, number];

/** Which source counts which part of [from, to). Every instant of the range is in exactly one part. */
export interface CountPlan {
  /** Per tier used (finest first): its grain and the bucket ranges read from it. */
  tiers: { grainSeconds: number; spans: Span[] }[];
  /** Read from idempotency_events whether rolled up or not: the partial minutes at the edges (or all of a short range). */
  raw: Span[];
  /** The span the tiers cover, where events not rolled up yet (above the watermark, gaps) are added raw; null if none. */
  unrolled: Span | null;
}

export interface CountOptions {
  /** Per chart bucket of this many seconds (date_bin from the epoch): then only tiers whose grain divides it are used. */
  stepSeconds?: number;
  /** The tiers it may read (default all); bench/read-side.ts compares [60], the minute tier alone. */
  grains?: readonly number[];
}

const ceilTo = (ms: number, step: number) => (Number.isFinite(ms) ? Math.ceil(ms / step) * step : ms);
const floorTo = (ms: number, step: number) => (Number.isFinite(ms) ? Math.floor(ms / step) * step : ms);
const nonEmpty = (spans: Span[]) => spans.filter(([lo, hi]) => lo < hi);

/**
 * Splits [fromMs, toMs) between the tiers `grains` (seconds, finest first, each dividing the
 * next): the coarsest tier with a whole bucket inside the range takes the whole buckets;
 * each finer tier the whole buckets left at both edges; raw events the rest.
 */
export function planCounts(fromMs: number, toMs: number, grains: readonly number[] = ROLLUP_GRAINS): CountPlan {
  const g = grains.map((s) => s * 1000);
  const c = g.map((step) => ceilTo(fromMs, step));
  const f = g.map((step) => floorTo(toMs, step));
  let top = g.length - 1;
  while (top >= 0 && !(c[top] < f[top])) top--;
  if (top < 0) return { tiers: [], raw: nonEmpty([[fromMs, toMs]]), unrolled: null };
  const tiers = grains.slice(0, top + 1).map((grainSeconds, i) => ({
    grainSeconds,
    spans: nonEmpty(
      i === top
        ? [[c[i], f[i]]]
        : [
            [c[i], c[i + 1]],
            [f[i + 1], f[i]],
          ],
    ),
  }));
  return {
    tiers: tiers.filter((t) => t.spans.length),
    raw: nonEmpty([
      [fromMs, c[0]],
      [f[0], toMs],
    ]),
    unrolled: [c[0], f[0]],
  };
}

/** The plan for counting `f` (per chart bucket of `stepSeconds`, a whole number of minutes, when given). */
export function countPlan(f: EventRangeFilter, opts: CountOptions = {}): CountPlan {
  const step = opts.stepSeconds;
  if (step !== undefined && !(Number.isInteger(step) && step > 0 && step % 60 === 0)) {
    throw new Error(`event counts: a step of ${step} s is not a whole number of minutes`);
  }
  const grains = (opts.grains ?? ROLLUP_GRAINS).filter((g) => (ROLLUP_GRAINS as readonly number[]).includes(g) && (step === undefined || step % g === 0));
  return planCounts(f.from ? f.from.getTime() : -Infinity, f.to ? f.to.getTime() : Infinity, grains);
}
