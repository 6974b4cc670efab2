/**
 * What PostgreSQL can store, in one place: the API's input boundary refuses
 * anything else (lib/api/schemas.ts) and the audit writer, which must never
 * fail, replaces it (lib/audit).
 *
 * Text: NUL is refused by text and jsonb (SQLSTATE 22021 / 22P05); an unpaired
 * UTF-16 surrogate is refused by jsonb and silently replaced in text.
 * Integers: bigint columns hold −2^63 … 2^63−1 (22003 beyond).
 */
export const UNSTORABLE_TEXT = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const UNSTORABLE_TEXT_ALL = new RegExp(UNSTORABLE_TEXT.source, "g");

export const INT8_MIN = -(2n ** 63n);
export const INT8_MAX = 2n ** 63n - 1n;

/** The text with every unstorable character replaced by U+FFFD. */
export function storableText(s: string): string {
  return s.replace(UNSTORABLE_TEXT_ALL, "\ufffd");
}

export function isStorableText(s: string): boolean {
  return !UNSTORABLE_TEXT.test(s);
}

export function fitsInt8(n: bigint): boolean {
  return n >= INT8_MIN && n <= INT8_MAX;
}
