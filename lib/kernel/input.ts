import { z } from "zod";
import { InvalidInputError } from "./errors";

/** Parses with zod and turns failures into a 400 that names every bad field. */
export function parseInput<S extends z.ZodType>(schema: S, input: unknown, what: string): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issues = result.error.issues.map((i) => ({ path: i.path.map(String).join(".") || "(input)", message: i.message }));
  throw new InvalidInputError(`invalid ${what}: ${issues.map((i) => `${i.path} ${i.message}`).join("; ")}`, issues);
}

export const MAX_ID = 9223372036854775807n;
const ID_MESSAGE = "must be a positive whole number";

/**
 * The one id schema: a row id (every table's primary key is a bigint) given as a bigint, a
 * JSON number or a decimal string (a path segment, a query parameter), 1 … 2^63−1.
 */
export const idSchema = z
  .union(
    [
      z.bigint(),
      z.number({ error: ID_MESSAGE }).int(ID_MESSAGE),
      z
        .string({ error: ID_MESSAGE })
        .trim()
        .regex(/^\d{1,19}$/, ID_MESSAGE),
    ],
    { error: ID_MESSAGE },
  )
  .transform((v) => BigInt(v))
  .refine((v) => v > 0n && v <= MAX_ID, ID_MESSAGE);

/** A reason is required for every change; it is stored in the audit entry. */
export const reasonSchema = z.string().trim().min(3, "is required (at least 3 characters)").max(2000);

/**
 * The params of an `[id]` route (`/api/v1/users/<id>`): the one id schema.
 * Declare it as `params: idParamsSchema` and read `ctx.params.id`; anything else is a 400.
 */
export const idParamsSchema = z.object({ id: idSchema });

// --- Query-string values -------------------------------------------------------------
// Zod building blocks for query strings (every value arrives as a string): optional
// fields, times, whole numbers in a range, durations and time ranges. Failures become
// 400 problem+json in apiRoute.

/** A query string says "x=" for an empty form field: treat it as absent. */
export const optional = <T extends z.ZodType>(schema: T) => z.preprocess((v) => (typeof v === "string" && v.trim() === "" ? undefined : v), schema.optional());

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

export interface TimeRange {
  from: Date;
  to: Date;
}

/**
 * Resolves optional from/to: `to` defaults to now, `from` to `to` − defaultSpan.
 * Returns an error message instead of throwing, for zod's superRefine.
 */
export function resolveRange(q: { from?: Date; to?: Date }, opts: { defaultSpanMs: number; maxSpanMs: number; now?: Date }): TimeRange | string {
  const to = q.to ?? opts.now ?? new Date();
  const from = q.from ?? new Date(to.getTime() - opts.defaultSpanMs);
  if (from >= to) return "from must be before to";
  if (to.getTime() - from.getTime() > opts.maxSpanMs) return `the range may span at most ${formatDuration(opts.maxSpanMs / 1000)}`;
  return { from, to };
}
