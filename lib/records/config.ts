import { formatDuration, parseDuration } from "../kernel/input";

/**
 * Read-side settings, from the environment (read once per process; tests pass
 * their own). Malformed values fail loudly at first use rather than being ignored.
 *
 * | variable | meaning | default |
 * | --- | --- | --- |
 * | `STUCK_THRESHOLDS` | when a `processing` record counts as stuck, per operation: `default=5m,capture_payment=2m,issue_invoice=15m` (units s, m, h, d) | `default=5m` |
 * | `MASK_KEYS` | extra JSON keys whose values are masked in stored responses, comma-separated (case and `_`/`-` ignored): `customer_ssn,vat_id` | — |
 * | `MASK_HEADERS` | extra header names whose values are masked: `X-Session,X-Signature` | — |
 * | `MASK_PATTERNS` | extra regular expressions masked inside any string value or text body, as a JSON array of `{"name","pattern","flags"?}` | — |
 */

export interface StuckThresholds {
  /** Seconds a record may stay `processing` (without change) before it is stuck. */
  defaultSeconds: number;
  byOperation: Record<string, number>;
}

export const DEFAULT_STUCK_SECONDS = 5 * 60;

export function parseStuckThresholds(text: string | undefined): StuckThresholds {
  const out: StuckThresholds = { defaultSeconds: DEFAULT_STUCK_SECONDS, byOperation: {} };
  for (const part of (text ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)) {
    const m = /^([a-z][a-z0-9_.]*)\s*=\s*(.+)$/.exec(part);
    const seconds = m ? parseDuration(m[2]) : null;
    if (!m || seconds === null || seconds < 1) {
      throw new Error(`STUCK_THRESHOLDS: "${part}" is not operation=duration (e.g. capture_payment=2m)`);
    }
    if (m[1] === "default") out.defaultSeconds = seconds;
    else out.byOperation[m[1]] = seconds;
  }
  return out;
}

export function thresholdFor(t: StuckThresholds, operation: string): number {
  return t.byOperation[operation] ?? t.defaultSeconds;
}

export function describeThresholds(t: StuckThresholds): Record<string, string> {
  return { default: formatDuration(t.defaultSeconds), ...Object.fromEntries(Object.entries(t.byOperation).map(([op, s]) => [op, formatDuration(s)])) };
}

export interface ExtraPattern {
  name: string;
  pattern: string;
  flags?: string;
}

export interface MaskSettings {
  extraKeys: string[];
  extraHeaders: string[];
  extraPatterns: ExtraPattern[];
}

const list = (text: string | undefined) =>
  (text ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);

export function parseMaskSettings(env: Record<string, string | undefined>): MaskSettings {
  let extraPatterns: ExtraPattern[] = [];
  if (env.MASK_PATTERNS?.trim()) {
    const parsed = JSON.parse(env.MASK_PATTERNS) as unknown;
    if (!Array.isArray(parsed)) throw new Error("MASK_PATTERNS must be a JSON array of {name, pattern, flags?}");
    extraPatterns = parsed.map((p, i) => {
      const ok = p && typeof p === "object" && typeof p.name === "string" && typeof p.pattern === "string";
      if (!ok) throw new Error(`MASK_PATTERNS[${i}] must be {"name": "...", "pattern": "...", "flags"?: "i"}`);
      new RegExp(p.pattern, p.flags); // throws on a bad expression
      return { name: p.name, pattern: p.pattern, flags: typeof p.flags === "string" ? p.flags : undefined };
    });
  }
  return { extraKeys: list(env.MASK_KEYS), extraHeaders: list(env.MASK_HEADERS), extraPatterns };
}

export interface ReadSideConfig {
  stuck: StuckThresholds;
  mask: MaskSettings;
}

let cached: ReadSideConfig | undefined;

/** The process's settings, from the environment on first use. */
export function readSideConfig(): ReadSideConfig {
  cached ??= { stuck: parseStuckThresholds(process.env.STUCK_THRESHOLDS), mask: parseMaskSettings(process.env) };
  return cached;
}
