/**
 * What a sample of idempotency keys says about the client that made them (plain functions,
 * no database): keys must be unique per intent and unpredictable, so that a restarted
 * client, a second instance or a guesser cannot land on another intent's key.
 *
 * - short: fewer than 16 characters;
 * - sequential: one template with a number in it (`ord-000042`, `bulk-1-77`) whose numbers,
 *   sorted, lie close together — a counter;
 * - timestamp: a Unix time in seconds or milliseconds, or a date-time, inside the key;
 * - low entropy: the positional Shannon entropy of the sample (per character position, over
 *   the sampled keys; at most log2(sample) bits a position) under 40 bits — a UUID v4 sample
 *   of 20 reads ~115 bits, a counter ~10.
 *
 * A shape is reported when at least a fifth of a group's sampled keys have it, and only for
 * groups of at least MIN_KEYS sampled keys: fewer keys cannot tell a counter from chance.
 */

export const MIN_KEYS = 20;
export const MIN_SHARE = 0.2;
export const SHORT_LENGTH = 16;
export const LOW_ENTROPY_BITS = 40;
/** A counter: numbers no further apart, on average, than this many steps. */
export const DENSE_STEP = 10;

export type KeyShape = "short" | "sequential" | "timestamp" | "low_entropy";

export interface ShapeEvidence {
  shape: KeyShape;
  /** Sampled keys with the shape. */
  matching: number;
  examples: string[];
  /** Extra evidence: the template and number range of a counter, the entropy in bits. */
  note: string;
}

const DIGITS = /\d+/g;

/** Positional entropy (bits) of a set of keys: Σ over positions of the entropy of the characters there (end of key as a symbol). */
export function positionalEntropyBits(keys: readonly string[]): number {
  if (keys.length < 2) return 0;
  const width = Math.max(...keys.map((k) => k.length));
  let bits = 0;
  for (let i = 0; i < width; i++) {
    const counts = new Map<string, number>();
    for (const k of keys) {
      const c = i < k.length ? k[i] : "\u0000";
      counts.set(c, (counts.get(c) ?? 0) + 1);
    }
    for (const n of counts.values()) {
      const p = n / keys.length;
      bits -= p * Math.log2(p);
    }
  }
  return bits;
}

/** `ord-000042` → template `ord-#`, number 42 (the last run of digits); null without digits. */
export function counterOf(key: string): { template: string; value: number; digits: number } | null {
  const runs = [...key.matchAll(DIGITS)];
  if (!runs.length) return null;
  const last = runs[runs.length - 1];
  if (last[0].length > 15) return null;
  const template = key.slice(0, last.index) + "#" + key.slice(last.index! + last[0].length);
  return { template: template.replace(/\d+/g, (d) => (d.length > 3 ? "#" : d)), value: Number(last[0]), digits: last[0].length };
}

/** A Unix time (s or ms, 2001–2096) or an ISO-like date-time inside the key. */
export function looksLikeTimestamp(key: string): boolean {
  if (/(19|20)\d\d-?[01]\d-?[0-3]\d[T _-]?[0-2]\d:?[0-5]\d/.test(key)) return true;
  for (const m of key.matchAll(DIGITS)) {
    const d = m[0];
    if (d.length === 10 && Number(d) >= 1e9 && Number(d) < 4e9) return true;
    if (d.length === 13 && Number(d) >= 1e12 && Number(d) < 4e12) return true;
  }
  return false;
}

/** The shapes a group's sample shows (empty for fewer than MIN_KEYS keys). Examples are the first keys with the shape, in sample order. */
export function keyShapes(keys: readonly string[]): ShapeEvidence[] {
  const distinct = [...new Set(keys)];
  if (distinct.length < MIN_KEYS) return [];
  const out: ShapeEvidence[] = [];
  const enough = (n: number) => n >= Math.max(MIN_KEYS * MIN_SHARE, distinct.length * MIN_SHARE);
  const examples = (ks: readonly string[]) => ks.slice(0, 5);

  const short = distinct.filter((k) => k.length < SHORT_LENGTH);
  if (enough(short.length)) out.push({ shape: "short", matching: short.length, examples: examples(short), note: `shorter than ${SHORT_LENGTH} characters` });

  const stamped = distinct.filter(looksLikeTimestamp);
  const stampedSet = new Set(stamped);
  // Counters: the largest template among keys whose number is not a time.
  const byTemplate = new Map<string, { key: string; value: number }[]>();
  for (const k of distinct) {
    if (stampedSet.has(k)) continue;
    const c = counterOf(k);
    if (!c) continue;
    const list = byTemplate.get(c.template) ?? [];
    list.push({ key: k, value: c.value });
    byTemplate.set(c.template, list);
  }
  const [template, members] = [...byTemplate.entries()].sort((a, b) => b[1].length - a[1].length)[0] ?? ["", []];
  if (members.length >= MIN_KEYS && enough(members.length)) {
    const values = [...new Set(members.map((m) => m.value))].sort((a, b) => a - b);
    const span = values[values.length - 1] - values[0];
    if (span <= DENSE_STEP * values.length) {
      out.push({
        shape: "sequential",
        matching: members.length,
        examples: examples(members.map((m) => m.key)),
        note: `${members.length} keys of the form ${template.replace("#", "<n>")} with n from ${values[0]} to ${values[values.length - 1]}`,
      });
    }
  }

  if (enough(stamped.length)) out.push({ shape: "timestamp", matching: stamped.length, examples: examples(stamped), note: "a time inside the key" });

  const bits = positionalEntropyBits(distinct);
  if (bits < LOW_ENTROPY_BITS) {
    out.push({
      shape: "low_entropy",
      matching: distinct.length,
      examples: examples(distinct),
      note: `about ${Math.round(bits)} bits of entropy across the sample (a random UUID has 122)`,
    });
  }
  return out;
}
