/**
 * THE way the console writes a moment (screens and the record story alike): ISO-like absolute time in the user's time zone
 * ("2026-11-24 05:05:36 UTC", or "2026-11-24 06:05:36 UTC+01:00" for a user who chose
 * Europe/Berlin) with its age beside it ("3 h ago"), and the same wall-clock format in
 * date inputs. Plain functions (no React): server and client render the same text for
 * the same zone, so there is no hydration mismatch; the zone is the user's setting
 * (UTC unless they chose another), never the browser's.
 */

export const DEFAULT_TIME_ZONE = "UTC";

const partsCache = new Map<string, Intl.DateTimeFormat>();
function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = partsCache.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
      timeZoneName: "longOffset",
    });
    partsCache.set(timeZone, f);
  }
  return f;
}

interface WallClock {
  year: string;
  month: string;
  day: string;
  hour: string;
  minute: string;
  second: string;
  /** "UTC" (any zone at offset 0 at that moment) or "UTC+01:00". */
  zone: string;
  /** Minutes east of UTC. */
  offsetMinutes: number;
}

/** The wall-clock fields of an instant in a time zone (an unknown zone falls back to UTC). */
export function wallClock(instant: Date | string | number, timeZone = DEFAULT_TIME_ZONE): WallClock {
  const d = instant instanceof Date ? instant : new Date(instant);
  let parts: Intl.DateTimeFormatPart[];
  try {
    parts = formatter(timeZone).formatToParts(d);
  } catch {
    parts = formatter(DEFAULT_TIME_ZONE).formatToParts(d);
  }
  const get = (t: Intl.DateTimeFormatPartTypes) => parts.find((p) => p.type === t)?.value ?? "";
  const gmt = get("timeZoneName"); // "GMT", "GMT+01:00", "GMT-03:30"
  const m = /^GMT([+-])(\d{2}):(\d{2})$/.exec(gmt);
  const offsetMinutes = m ? (m[1] === "-" ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3])) : 0;
  return {
    year: get("year"),
    month: get("month"),
    day: get("day"),
    hour: get("hour") === "24" ? "00" : get("hour"),
    minute: get("minute"),
    second: get("second"),
    zone: offsetMinutes === 0 ? "UTC" : `UTC${m![1]}${m![2]}:${m![3]}`,
    offsetMinutes,
  };
}

/** "2026-11-24 05:05:36 UTC" — the absolute time, to the second, in the user's zone. */
export function formatInstant(instant: Date | string | number | null | undefined, timeZone = DEFAULT_TIME_ZONE, opts: { seconds?: boolean } = {}): string {
  if (instant === null || instant === undefined || instant === "") return "—";
  const d = instant instanceof Date ? instant : new Date(instant);
  if (Number.isNaN(d.getTime())) return String(instant);
  const w = wallClock(d, timeZone);
  return `${w.year}-${w.month}-${w.day} ${w.hour}:${w.minute}${opts.seconds === false ? "" : `:${w.second}`} ${w.zone}`;
}

/** "2026-11-24" in the user's zone (chart days, date-only cells). */
export function formatDay(instant: Date | string | number, timeZone = DEFAULT_TIME_ZONE): string {
  const w = wallClock(instant, timeZone);
  return `${w.year}-${w.month}-${w.day}`;
}

/** "05:05" in the user's zone (chart hours). */
export function formatClock(instant: Date | string | number, timeZone = DEFAULT_TIME_ZONE): string {
  const w = wallClock(instant, timeZone);
  return `${w.hour}:${w.minute}`;
}

/** "UTC" or "UTC+01:00" at that moment (offsets change with daylight saving time). */
export function zoneLabel(timeZone = DEFAULT_TIME_ZONE, at: Date | number = Date.now()): string {
  return wallClock(at, timeZone).zone;
}

const UNITS: [string, number][] = [
  ["d", 86400],
  ["h", 3600],
  ["min", 60],
  ["s", 1],
];

/** "3 h ago", "in 2 d", "just now": the age of a moment, in its largest unit. */
export function formatAge(instant: Date | string | number, now: number): string {
  const t = instant instanceof Date ? instant.getTime() : new Date(instant).getTime();
  const seconds = Math.round((t - now) / 1000);
  const abs = Math.abs(seconds);
  if (abs < 5) return "just now";
  const [unit, size] = UNITS.find(([, s]) => abs >= s) ?? UNITS[UNITS.length - 1];
  const n = Math.floor(abs / size);
  return seconds < 0 ? `${n} ${unit} ago` : `in ${n} ${unit}`;
}

/** The text of a date input for an instant, in the user's zone, as times are written ("2026-11-24 06:05"). */
export function instantToInput(iso: string | null | undefined, timeZone = DEFAULT_TIME_ZONE): string {
  if (!iso || Number.isNaN(Date.parse(iso))) return "";
  const w = wallClock(iso, timeZone);
  return `${w.year}-${w.month}-${w.day} ${w.hour}:${w.minute}`;
}

/**
 * The instant a typed "YYYY-MM-DD HH:MM[:SS]" (or "…T…", or a day alone = its midnight) means
 * in the user's zone, as ISO 8601 UTC ("" when empty or malformed). Around a daylight-saving change the offset of the result is used
 * (a wall time that does not exist moves forward by the gap).
 */
export function inputToInstant(value: string, timeZone = DEFAULT_TIME_ZONE): string {
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?)?$/.exec(value.trim());
  if (!m) return "";
  const [y, mo, d, h, mi, se] = [m[1], m[2], m[3], m[4] ?? "0", m[5] ?? "0", m[6] ?? "0"].map(Number);
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 59) return "";
  const asUtc = Date.UTC(y, mo - 1, d, h, mi, se);
  if (new Date(asUtc).getUTCDate() !== d) return ""; // 2026-02-30
  let t = asUtc - wallClock(asUtc, timeZone).offsetMinutes * 60_000;
  t = asUtc - wallClock(t, timeZone).offsetMinutes * 60_000;
  return new Date(t).toISOString().replace(".000Z", "Z");
}

/**
 * Axis labels of a chart whose buckets are UTC hours or days (the rollups' buckets): the
 * day ("11-24") for day buckets, the hour ("05:00") within a day, both otherwise. Charts
 * say "UTC" in their title: a bucket is a UTC hour or day whatever the user's zone.
 */
export function bucketLabeller(stepSeconds: number, spanMs: number): (iso: string) => string {
  if (stepSeconds >= 86_400) return (iso) => formatDay(iso, DEFAULT_TIME_ZONE).slice(5);
  if (spanMs <= 86_400_000) return (iso) => formatClock(iso, DEFAULT_TIME_ZONE);
  return (iso) => `${formatDay(iso, DEFAULT_TIME_ZONE).slice(5)} ${formatClock(iso, DEFAULT_TIME_ZONE)}`;
}
