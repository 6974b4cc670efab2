import { createHash } from "node:crypto";
import fc from "fast-check";
import type { SqlExecutor } from "@/lib/db/sql";

/**
 * Input generation for the API fuzz suite (test/api-fuzz.test.ts): fast-check
 * arbitraries built from the OpenAPI document's JSON Schemas. Each value is
 * mostly what the schema asks for (so requests get past the first check and into
 * the handlers) and otherwise hostile: text PostgreSQL cannot store, integers
 * beyond every column, wrong types, overlong strings, missing and unknown fields.
 */

type JsonSchema = Record<string, unknown>;

/** Strings no column can hold, or that break naive parsing. */
export const HOSTILE_STRINGS = [
  "a\u0000b",
  "\u0000",
  "\ud800",
  "x\udc00y",
  "9223372036854775808",
  "9999999999999999999",
  "-9223372036854775809",
  "18446744073709551616",
  "0",
  "-1",
  "1e309",
  "NaN",
  "",
  " ",
  "x".repeat(300),
  "x".repeat(3000),
  "'; DROP TABLE audit_log; --",
  "%00",
  "..%2F..%2F",
  "\u202e\ufeff",
  "2026-02-30T00:00:00Z",
  "-271821-04-19T00:00:00Z",
  "275760-09-13T00:00:00Z",
  '{"__proto__":{}}',
];

/** What PostgreSQL itself refuses (22021, 22P05, 22003): the class the input boundary exists for. */
export const STORAGE_BREAKERS = ["a\u0000b", "\u0000", "x\ud800", "\udc00", "9223372036854775808", "99999999999999999999", "-9223372036854775809"];

/** A hostile string, half the time one PostgreSQL cannot store. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(fc.constantFrom(...STORAGE_BREAKERS), fc.constantFrom(...HOSTILE_STRINGS));

const HOSTILE_NUMBERS = [2 ** 31, -(2 ** 31) - 1, 2 ** 53, 2 ** 63, -(2 ** 63), 1e308, -1, 0, 0.5, Number.MAX_SAFE_INTEGER];

const hostileScalar = fc.oneof(
  hostileString,
  fc.constantFrom(...HOSTILE_NUMBERS),
  fc.constantFrom(null, true, false),
  fc.string({ unit: "binary", maxLength: 40 }),
);

export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: hostileScalar },
  { weight: 1, arbitrary: fc.array(hostileScalar, { maxLength: 3 }) },
  { weight: 1, arbitrary: fc.dictionary(fc.constantFrom("a", "__proto__", "constructor", "x\u0000"), hostileScalar, { maxKeys: 2 }) },
);

/** Strings matching a schema pattern when fast-check can generate them, else plain strings. */
function patternString(pattern: string, maxLength: number | undefined): fc.Arbitrary<string> {
  try {
    const re = new RegExp(pattern, "u");
    const arb = fc.stringMatching(re);
    return maxLength === undefined ? arb : arb.filter((s) => s.length <= maxLength);
  } catch {
    return fc.string({ maxLength: maxLength ?? 50 });
  }
}

/** A value the schema accepts (as far as its JSON Schema says). */
export function validValue(schema: JsonSchema, hints: Record<string, fc.Arbitrary<unknown>> = {}, name?: string): fc.Arbitrary<unknown> {
  if (name && hints[name]) return hints[name];
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  if (Array.isArray(schema.anyOf)) return fc.oneof(...(schema.anyOf as JsonSchema[]).map((s) => validValue(s, hints, name)));
  const type = Array.isArray(schema.type) ? (schema.type as string[])[0] : (schema.type as string | undefined);
  switch (type) {
    case "string": {
      const max = typeof schema.maxLength === "number" ? schema.maxLength : 60;
      const min = typeof schema.minLength === "number" ? schema.minLength : 0;
      if (typeof schema.pattern === "string")
        return patternString(schema.pattern, typeof schema.maxLength === "number" ? schema.maxLength : undefined).filter((s) => s.length >= min);
      return fc.string({ minLength: min, maxLength: Math.min(max, 60) });
    }
    case "integer":
    case "number": {
      const min = typeof schema.minimum === "number" ? schema.minimum : typeof schema.exclusiveMinimum === "number" ? schema.exclusiveMinimum + 1 : -1000;
      const max = typeof schema.maximum === "number" ? schema.maximum : 1000;
      return fc.integer({ min: Math.max(min, -1_000_000), max: Math.min(max, 1_000_000) });
    }
    case "boolean":
      return fc.boolean();
    case "null":
      return fc.constant(null);
    case "array": {
      const items = (schema.items as JsonSchema | undefined) ?? {};
      const minLength = typeof schema.minItems === "number" ? schema.minItems : 0;
      const maxLength = Math.min(typeof schema.maxItems === "number" ? schema.maxItems : 4, 4);
      return fc.array(validValue(items, hints), { minLength: Math.min(minLength, maxLength), maxLength });
    }
    case "object":
      return objectValue(schema, hints, 0);
    default:
      return fc.oneof(fc.string({ maxLength: 20 }), fc.integer(), fc.boolean());
  }
}

/** Each field valid or hostile, required fields sometimes dropped, unknown fields sometimes added. */
function objectValue(schema: JsonSchema, hints: Record<string, fc.Arbitrary<unknown>>, hostileWeight: number): fc.Arbitrary<Record<string, unknown>> {
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((schema.required ?? []) as string[]);
  const fields: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [name, s] of Object.entries(properties)) {
    const valid = validValue(s, hints, name);
    const value = hostileWeight > 0 ? fc.oneof({ weight: 4, arbitrary: valid }, { weight: hostileWeight, arbitrary: hostileValue }) : valid;
    fields[name] = required.has(name)
      ? fc.oneof({ weight: 12, arbitrary: value }, { weight: 1, arbitrary: fc.constant(undefined) })
      : fc.option(value, { nil: undefined, freq: 2 });
  }
  const extra =
    hostileWeight > 0
      ? fc.option(fc.dictionary(fc.constantFrom("extra", "a\u0000", "__proto__"), hostileScalar, { maxKeys: 1 }), { freq: 6 })
      : fc.constant(null);
  return fc.tuple(fc.record(fields), extra).map(([record, more]) => {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(record)) if (v !== undefined) out[k] = v;
    if (more) for (const [k, v] of Object.entries(more)) Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
    return out;
  });
}

/** A request body for the schema: mostly shaped like it, with hostile values mixed in. */
export function bodyValue(schema: JsonSchema, hints: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<unknown> {
  return fc.oneof({ weight: 10, arbitrary: objectValue(schema, hints, 1) }, { weight: 1, arbitrary: hostileValue });
}

/** A query or path parameter's text: mostly valid, otherwise hostile. */
export function parameterText(schema: JsonSchema, hints: Record<string, fc.Arbitrary<unknown>>, name: string): fc.Arbitrary<string> {
  return fc
    .oneof({ weight: 3, arbitrary: validValue(schema, hints, name) }, { weight: 2, arbitrary: hostileString })
    .map((v) => (typeof v === "string" ? v : (JSON.stringify(v) ?? "")));
}

/**
 * A digest of every business table, in one statement: the writers' tables and
 * the console's own state. Left out: the audit trail (refusals are audited by
 * design), sign-in attempts, the rollups and census, and the console's stored
 * answers to its own idempotent actions (console_requests, ADR 0009: an answer,
 * refusals included, is stored under its key).
 */
export const BUSINESS_TABLES = [
  "idempotency_records",
  "idempotency_events",
  "reconciliation_items",
  "outbox_messages",
  "console_users",
  "console_sessions",
  "api_tokens",
  "saved_views",
  "compensations",
  "retention_policies",
  "purge_runs",
  "legal_holds",
  // What operators acknowledged, and the insights' remembered findings (their evaluator is not
  // running in the fuzz suite: a change here can only come from a request).
  "insight_alerts",
  "insight_findings",
] as const;

export async function businessDigest(sql: SqlExecutor): Promise<Record<string, string>> {
  if (sql.dialect.name === "mysql") return mysqlBusinessDigest(sql);
  const present = new Set(
    (await sql.query<{ name: string }>(`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public'`)).map((r) => r.name),
  );
  const parts = BUSINESS_TABLES.filter((t) => present.has(t)).map(
    (t) =>
      `SELECT '${t}' AS t, count(*)::text || ':' || coalesce(md5(string_agg((to_jsonb(x) - 'last_used_at' - 'last_seen_at')::text, ',' ORDER BY (to_jsonb(x) - 'last_used_at' - 'last_seen_at')::text)), '') AS d FROM ${t} x`,
  );
  const rows = await sql.query<{ t: string; d: string }>(parts.join(" UNION ALL "));
  return Object.fromEntries(rows.map((r) => [r.t, r.d]));
}

/** MySQL: the same digest, made here from the rows (no to_jsonb; GROUP_CONCAT would cut long groups short). */
async function mysqlBusinessDigest(sql: SqlExecutor): Promise<Record<string, string>> {
  const present = new Set(
    (await sql.query<{ name: string }>(`SELECT TABLE_NAME AS name FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()`)).map((r) => r.name),
  );
  const out: Record<string, string> = {};
  for (const t of BUSINESS_TABLES.filter((name) => present.has(name))) {
    const rows = await sql.query<Record<string, unknown>>(`SELECT * FROM ${t}`);
    const texts = rows
      .map(({ last_used_at: _used, last_seen_at: _seen, ...row }) => JSON.stringify(row, (_k, v) => (typeof v === "bigint" ? v.toString() : v)))
      .sort();
    out[t] = `${rows.length}:${rows.length ? createHash("md5").update(texts.join(",")).digest("hex") : ""}`;
  }
  return out;
}
