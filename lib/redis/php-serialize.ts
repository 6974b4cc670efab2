/**
 * Reads PHP's serialize() format — what Laravel's Redis cache store writes for any
 * non-numeric value — as far as idempotency libraries use it: null, booleans,
 * integers, floats, strings and arrays (nested). Objects, references and custom
 * serialisation are refused (null): such a value is not a record this console reads.
 * String lengths are in bytes, so the text is walked as UTF-8 bytes.
 */
export type PhpValue = null | boolean | number | string | PhpArray;
/** A PHP array: keys in insertion order (integer keys as their decimal text). */
export type PhpArray = Map<string, PhpValue>;

const MAX_DEPTH = 64;

export function phpUnserialize(text: string): PhpValue | undefined {
  const buf = Buffer.from(text, "utf8");
  let i = 0;
  const fail = (): never => {
    throw new SyntaxError("not PHP serialize() output");
  };
  const expect = (ch: string) => {
    if (buf[i] !== ch.charCodeAt(0)) fail();
    i++;
  };
  const until = (ch: string): string => {
    const end = buf.indexOf(ch.charCodeAt(0), i);
    if (end < 0) fail();
    const s = buf.toString("latin1", i, end);
    i = end + 1;
    return s;
  };
  const value = (depth: number): PhpValue => {
    if (depth > MAX_DEPTH) fail();
    const type = String.fromCharCode(buf[i] ?? 0);
    if (type === "N") {
      i++;
      expect(";");
      return null;
    }
    i++;
    expect(":");
    switch (type) {
      case "b": {
        const v = until(";");
        if (v !== "0" && v !== "1") fail();
        return v === "1";
      }
      case "i": {
        const v = until(";");
        if (!/^-?\d{1,19}$/.test(v)) fail();
        return Number(v);
      }
      case "d": {
        const v = until(";");
        const n = v === "INF" ? Infinity : v === "-INF" ? -Infinity : Number(v);
        if (Number.isNaN(n) && v !== "NAN") fail();
        return n;
      }
      case "s": {
        const len = Number(until(":"));
        if (!Number.isInteger(len) || len < 0 || i + len + 2 > buf.length) fail();
        expect('"');
        const s = buf.toString("utf8", i, i + len);
        i += len;
        expect('"');
        expect(";");
        return s;
      }
      case "a": {
        const n = Number(until(":"));
        if (!Number.isInteger(n) || n < 0) fail();
        expect("{");
        const out: PhpArray = new Map();
        for (let k = 0; k < n; k++) {
          const key = value(depth + 1);
          if (typeof key !== "string" && typeof key !== "number") fail();
          out.set(String(key), value(depth + 1));
        }
        expect("}");
        return out;
      }
      default:
        return fail();
    }
  };
  try {
    const v = value(0);
    return i === buf.length ? v : undefined;
  } catch (err) {
    if (err instanceof SyntaxError) return undefined;
    throw err;
  }
}

/** The same value as plain JSON-like data, as json_encode() would see it: a list (keys 0…n−1 in order) becomes an array, any other array an object. */
export function phpToPlain(v: PhpValue): unknown {
  if (!(v instanceof Map)) return v;
  const entries = [...v];
  if (entries.every(([k], i) => k === String(i))) return entries.map(([, x]) => phpToPlain(x));
  return Object.fromEntries(entries.map(([k, x]) => [k, phpToPlain(x)]));
}
