import type { HeaderPairs } from "./store";

/**
 * Stored response headers as writers really store them, read liberally (issue 10): the
 * console's contract says a JSON array of [name, value] pairs (order and repeats kept), but
 * a service may store an object — PHP's json_encode of an associative array, Node's
 * res.getHeaders() — whose values are strings, numbers or lists of values, or pairs whose
 * values are not strings, or header lines ("Name: value"). Every shape becomes pairs (an
 * object's list values become one pair each, in order); whatever is not a header at all is
 * kept as text in `unreadable` so the screens can still show (and mask) it.
 */
export interface ReadHeaders {
  pairs: HeaderPairs | null;
  /** How the row stored them. */
  shape: "none" | "pairs" | "object" | "lines" | "other";
  /** Parts that are not headers, as JSON text (shown as stored, masked like a body). */
  unreadable: string | null;
}

const text = (v: unknown): string => (typeof v === "string" ? v : v === null || v === undefined ? "" : typeof v === "object" ? JSON.stringify(v) : String(v));

function fromLine(line: string): [string, string] | null {
  const colon = line.indexOf(":");
  return colon > 0 ? [line.slice(0, colon).trim(), line.slice(colon + 1).trim()] : null;
}

export function readHeaders(stored: unknown): ReadHeaders {
  if (stored === null || stored === undefined) return { pairs: null, shape: "none", unreadable: null };
  const pairs: HeaderPairs = [];
  const rest: unknown[] = [];
  if (Array.isArray(stored)) {
    let lines = false;
    for (const item of stored) {
      if (Array.isArray(item) && item.length >= 1 && typeof item[0] === "string") pairs.push([item[0], item.slice(1).map(text).join(", ")]);
      else if (item && typeof item === "object" && typeof (item as { name?: unknown }).name === "string")
        pairs.push([(item as { name: string }).name, text((item as { value?: unknown }).value)]);
      else if (typeof item === "string" && fromLine(item)) {
        pairs.push(fromLine(item)!);
        lines = true;
      } else rest.push(item);
    }
    return { pairs, shape: lines ? "lines" : "pairs", unreadable: rest.length ? JSON.stringify(rest) : null };
  }
  if (typeof stored === "object") {
    for (const [name, value] of Object.entries(stored as Record<string, unknown>)) {
      if (Array.isArray(value)) for (const v of value) pairs.push([name, text(v)]);
      else pairs.push([name, text(value)]);
    }
    return { pairs, shape: "object", unreadable: null };
  }
  if (typeof stored === "string") {
    const lines = stored.split(/\r?\n/).filter((l) => l.trim() !== "");
    const parsed = lines.map(fromLine);
    if (lines.length && parsed.every(Boolean)) return { pairs: parsed as HeaderPairs, shape: "lines", unreadable: null };
  }
  return { pairs: [], shape: "other", unreadable: typeof stored === "string" ? stored : JSON.stringify(stored) };
}

/** Just the pairs (replays and masking): every readable header, in order. */
export const headerPairs = (stored: unknown): HeaderPairs => readHeaders(stored).pairs ?? [];

/** A stored body as text, whatever the column holds (text, or JSON in a jsonb column of an adopted table). */
export const bodyText = (stored: unknown): string | null =>
  stored === null || stored === undefined ? null : typeof stored === "string" ? stored : JSON.stringify(stored);
