import { z } from "zod";

/**
 * Zod building blocks for the read API's query strings (every value arrives as a
 * string): optional fields, times, whole numbers in a range, durations, opaque
 * keyset cursors and time ranges. Failures become 400 problem+json in apiRoute.
 */

/** A query string says "x=" for an empty form field: treat it as absent. */
export const optional = <T extends z.ZodType>(schema: T) =>
  z.preprocess((v) => (typeof v === "string" && v.trim() === "" ? undefined : v), schema.optional());

const ISO_RE = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/** ISO 8601 time; without an offset it is UTC (Date.parse would read server-local time). */
export const isoTime = z
  .string()
  .trim()
  .refine((v) => ISO_RE.test(v) && !Number.isNaN(Date.parse(v)), {
    message: "must be an ISO 8601 time such as 2026-01-31T09:00:00Z (UTC when no offset is given)",
  })
  .transform((v) => new Date(/T/.test(v) && !/(Z|[+-]\d{2}:?\d{2})$/.test(v) ? `${v}Z` : v));

/** A whole number in [min, max], from its decimal text. */
export const intParam = (min: number, max: number) =>
  z
    .string()
    .trim()
    .regex(/^\d{1,9}$/, `must be a whole number from ${min} to ${max}`)
    .transform(Number)
    .pipe(z.number().int().min(min, `must be from ${min} to ${max}`).max(max, `must be from ${min} to ${max}`));

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400 };

/** Parses "90s", "10m", "2h", "1d" or plain seconds ("600"); null when malformed. */
export function parseDuration(text: string): number | null {
  const m = /^(\d{1,7})\s*([smhd]?)$/i.exec(text.trim());
  return m ? Number(m[1]) * UNIT_SECONDS[(m[2] || "s").toLowerCase()] : null;
}

/** A duration in seconds within [minSeconds, maxSeconds]. */
export const durationParam = (minSeconds: number, maxSeconds: number) => {
  const span = `from ${formatDuration(minSeconds)} to ${formatDuration(maxSeconds)}`;
  return z
    .string()
    .transform((v, ctx) => {
      const s = parseDuration(v);
      if (s === null) {
        ctx.addIssue({ code: "custom", message: `must be a duration such as 90s, 10m, 2h or 1d (${span})` });
        return z.NEVER;
      }
      return s;
    })
    .pipe(z.number().min(minSeconds, `must be ${span}`).max(maxSeconds, `must be ${span}`));
};

export function formatDuration(seconds: number): string {
  if (seconds % 86400 === 0) return `${seconds / 86400}d`;
  if (seconds % 3600 === 0) return `${seconds / 3600}h`;
  if (seconds % 60 === 0) return `${seconds / 60}m`;
  return `${seconds}s`;
}

// --- Keyset cursors -----------------------------------------------------------------

/**
 * A keyset position (t, id): t is a timestamp with microseconds exactly as Postgres
 * holds it (a JS Date would drop them and skip or repeat rows), id the row id.
 * Opaque to clients: base64url of JSON.
 */
export interface KeysetPosition {
  t: string;
  id: bigint;
}

const CURSOR_TIME_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

export function encodeCursor(p: KeysetPosition): string {
  return Buffer.from(JSON.stringify([p.t, p.id.toString()]), "utf8").toString("base64url");
}

export function decodeCursor(text: string): KeysetPosition | null {
  try {
    if (!/^[A-Za-z0-9_-]{1,200}$/.test(text)) return null;
    const v = JSON.parse(Buffer.from(text, "base64url").toString("utf8")) as unknown;
    if (!Array.isArray(v) || v.length !== 2) return null;
    const [t, id] = v;
    if (typeof t !== "string" || !CURSOR_TIME_RE.test(t) || Number.isNaN(Date.parse(t))) return null;
    if (typeof id !== "string" || !/^\d{1,19}$/.test(id)) return null;
    return { t, id: BigInt(id) };
  } catch {
    return null;
  }
}

export const cursorParam = z.string().transform((v, ctx) => {
  const p = decodeCursor(v);
  if (!p) {
    ctx.addIssue({ code: "custom", message: "is not a cursor this API returned (use nextCursor from the previous page)" });
    return z.NEVER;
  }
  return p;
});

/** SQL for a timestamptz column as the cursor's text (UTC, microseconds). */
export const cursorTimeSql = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

// --- Time ranges ----------------------------------------------------------------------

export interface TimeRange {
  from: Date;
  to: Date;
}

/**
 * Resolves optional from/to: `to` defaults to now, `from` to `to` − defaultSpan.
 * Returns an error message instead of throwing, for zod's superRefine.
 */
export function resolveRange(
  q: { from?: Date; to?: Date },
  opts: { defaultSpanMs: number; maxSpanMs: number; now?: Date },
): TimeRange | string {
  const to = q.to ?? opts.now ?? new Date();
  const from = q.from ?? new Date(to.getTime() - opts.defaultSpanMs);
  if (from >= to) return "from must be before to";
  if (to.getTime() - from.getTime() > opts.maxSpanMs) return `the range may span at most ${formatDuration(opts.maxSpanMs / 1000)}`;
  return { from, to };
}

export const DEFAULT_PAGE = 50;
export const MAX_PAGE = 200;
export const limitParam = optional(intParam(1, MAX_PAGE)).transform((v) => v ?? DEFAULT_PAGE);
