/**
 * How data leaves the API as JSON — one place, so every route agrees:
 * bigint → decimal string (ids and amounts exceed 2^53), Date → ISO 8601 (UTC),
 * undefined fields dropped. Responses are never cached (they reflect live tables).
 */

export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/** The type a client parses from `jsonResponse(value: T)`: bigint and Date become strings. */
export type Jsonified<T> = T extends bigint | Date
  ? string
  : T extends (infer U)[]
    ? Jsonified<U>[]
    : T extends object
      ? { [K in keyof T]: Jsonified<T[K]> }
      : T;

function replacer(_key: string, value: unknown): unknown {
  // Date#toJSON has already run by the time the replacer sees the value, so only bigints remain.
  return typeof value === "bigint" ? value.toString() : value;
}

/** JSON text of any value with bigints and Dates converted. */
export function toJsonText(value: unknown): string {
  return JSON.stringify(value, replacer) ?? "null";
}

/** The JSON-safe copy of a value (what a client will parse). */
export function toJson(value: unknown): Json {
  return JSON.parse(toJsonText(value)) as Json;
}

/** A JSON response (application/json, no-store) with bigints and Dates converted. */
export function jsonResponse(value: unknown, init: { status?: number; headers?: Record<string, string> } = {}): Response {
  return new Response(toJsonText(value), {
    status: init.status ?? 200,
    headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store", ...init.headers },
  });
}
