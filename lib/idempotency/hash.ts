import { createHash } from "node:crypto";
import { InvalidInputError } from "../kernel/errors";

/**
 * Canonical JSON: object keys sorted by their UTF-8 bytes, no whitespace, arrays kept in
 * order, strings and numbers as JSON.stringify writes them. Writers in other
 * languages must produce the same bytes (the README shows PHP's equivalent), so
 * the same intent hashes the same everywhere. Numbers must be integers (amounts
 * in minor units): floats and dates print differently across languages, so they
 * are refused rather than hashed in a way another writer cannot reproduce.
 */
export function canonicalJson(value: unknown, opts: { integersOnly?: boolean } = {}): string {
  return write(value, "$", new Set(), opts.integersOnly ?? true);
}

function write(value: unknown, path: string, seen: Set<object>, integersOnly: boolean): string {
  if (value === null) return "null";
  switch (typeof value) {
    case "string":
      return JSON.stringify(value);
    case "boolean":
      return value ? "true" : "false";
    case "number":
      if (!integersOnly && Number.isFinite(value)) return JSON.stringify(value);
      if (!Number.isSafeInteger(value)) {
        throw new InvalidInputError(`payload ${path} is ${value}: only integers are allowed (send amounts in minor units, decimals as strings)`);
      }
      return JSON.stringify(value);
    case "bigint":
      return value.toString();
    case "object": {
      if (seen.has(value)) throw new InvalidInputError(`payload ${path} contains a cycle`);
      seen.add(value);
      let out: string;
      if (Array.isArray(value)) {
        out = "[" + value.map((v, i) => write(v, `${path}[${i}]`, seen, integersOnly)).join(",") + "]";
      } else {
        const proto = Object.getPrototypeOf(value);
        if (proto !== Object.prototype && proto !== null) {
          throw new InvalidInputError(`payload ${path} is not plain JSON data`);
        }
        const entries = Object.entries(value as Record<string, unknown>)
          .filter(([, v]) => v !== undefined)
          .sort(([a], [b]) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
        out = "{" + entries.map(([k, v]) => JSON.stringify(k) + ":" + write(v, `${path}.${k}`, seen, integersOnly)).join(",") + "}";
      }
      seen.delete(value);
      return out;
    }
    default:
      throw new InvalidInputError(`payload ${path} has a ${typeof value}, which is not JSON`);
  }
}

/** Lowercase hex SHA-256 of the canonical JSON of the payload. */
export function payloadHash(payload: unknown): string {
  return createHash("sha256").update(canonicalJson(payload), "utf8").digest("hex");
}
