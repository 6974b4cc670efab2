import { z } from "zod";
import type { HeaderPairs } from "../records/mask";
import { phpToPlain, phpUnserialize } from "./php-serialize";

/**
 * How a service's idempotency library keeps one key in Redis, and how the console
 * reads it back as a record: state (processing / completed), the stored HTTP status,
 * body and headers, the payload fingerprint and any expiry fields. A value that does
 * not read as a record of the format — a session hash, a rate-limiter counter, a
 * library's lock key under the same pattern — is not a record: it is counted as
 * "unrecognised" and never shown or acted on as one.
 *
 * Presets name the library (README "Redis key stores" lists what each one writes);
 * REDIS_FORMATS defines others.
 */

export type KeyState = "processing" | "completed";

export interface TimeField {
  field: string;
  /** Seconds or milliseconds since the epoch. */
  unit: "s" | "ms";
}

export interface ValueFormat {
  /** string: GET (a sentinel, or JSON text); hash: HGETALL; php: GET of PHP serialize() output (Laravel's cache). */
  encoding: "string" | "hash" | "php";
  /** Raw values that mean "in progress" (the seed's 'processing'). */
  processingSentinels: string[];
  /** Raw string values matching this mean "in progress" (e.g. a Laravel cache-lock owner at the key). */
  processingPattern: string | null;
  /** Where the state is spelled (a dotted path into JSON; a hash field name, `{key}` = the Redis key). */
  stateField: string | null;
  /** State values, spelled as the library spells them. */
  processingStates: string[];
  completedStates: string[];
  /** The stored HTTP status code. Without a stateField, a value holding it is a completed record. */
  statusField: string | null;
  /** The stored response body (the first present of these). */
  bodyFields: string[];
  headersField: string | null;
  /** The payload fingerprint (hash of the request), if the library stores one. */
  fingerprintField: string | null;
  expiresAt: TimeField | null;
  /** When an in-progress record's lease ends (after it, the library takes the key over itself). */
  inProgressExpiresAt: TimeField | null;
}

export interface FormatPreset {
  /** The library, as a user would name it. */
  library: string;
  format: ValueFormat;
  /** The key pattern the library writes by default (REDIS_KEY_PATTERN / pattern= override it). */
  defaultPattern: string;
  /** The TTL the library sets by default, in seconds. */
  defaultTtlSeconds: number;
  /** What to change in the service when its records carry no payload fingerprint. */
  fingerprintAdvice: string;
}

const base: ValueFormat = {
  encoding: "string",
  processingSentinels: [],
  processingPattern: null,
  stateField: null,
  processingStates: [],
  completedStates: [],
  statusField: null,
  bodyFields: [],
  headersField: null,
  fingerprintField: null,
  expiresAt: null,
  inProgressExpiresAt: null,
};

const POWERTOOLS_JSON: ValueFormat = {
  ...base,
  stateField: "status",
  processingStates: ["INPROGRESS"],
  completedStates: ["COMPLETED"],
  // `data` is the handler's return value as JSON text; an API Gateway proxy answer carries statusCode.
  statusField: "data.statusCode",
  bodyFields: ["data"],
  fingerprintField: "validation",
  expiresAt: { field: "expiration", unit: "s" },
  inProgressExpiresAt: { field: "in_progress_expiration", unit: "ms" },
};

export const FORMAT_PRESETS: Record<string, FormatPreset> = {
  seed: {
    library: "the seed's PHP handler (SET idempotency:{key} 'processing' NX EX 86400, then JSON {status, body})",
    format: { ...base, processingSentinels: ["processing"], statusField: "status", bodyFields: ["body"] },
    defaultPattern: "idempotency:*",
    defaultTtlSeconds: 86400,
    fingerprintAdvice:
      'The service stores only \'processing\' and {status, body}, so a retry that reuses a key with another payload replays the first request\'s answer. Store the SHA-256 of the canonical request payload with the key (in the processing value and in the result JSON, e.g. {"state":"processing","payload_hash":"…"}), answer 422 when a retry\'s hash differs, and describe the new shape in REDIS_FORMATS.',
  },
  powertools: {
    library: "AWS Lambda Powertools idempotency, Python (RedisCachePersistenceLayer) and TypeScript (CachePersistenceLayer)",
    format: POWERTOOLS_JSON,
    defaultPattern: "*#*",
    defaultTtlSeconds: 3600,
    fingerprintAdvice:
      "Payload validation is off: set payload_validation_jmespath in IdempotencyConfig (Python) or payloadValidationJmesPath (TypeScript), so a reused key with another payload raises IdempotencyValidationError instead of returning the first answer.",
  },
  "powertools-java": {
    library: "AWS Lambda Powertools for Java, powertools-idempotency-redis (RedisPersistenceStore)",
    format: {
      ...POWERTOOLS_JSON,
      encoding: "hash",
      stateField: "{key}:status",
      statusField: null,
      bodyFields: ["{key}:data"],
      fingerprintField: "{key}:validation",
      expiresAt: { field: "{key}:expiration", unit: "s" },
      inProgressExpiresAt: { field: "{key}:in-progress-expiration", unit: "ms" },
    },
    defaultPattern: "{idempotency:id:*}",
    defaultTtlSeconds: 3600,
    fingerprintAdvice:
      "Payload validation is off: configure IdempotencyConfig.builder().withPayloadValidationJMESPath(…), so a reused key with another payload throws IdempotencyValidationException.",
  },
  "node-idempotency": {
    library: "@node-idempotency/core with @node-idempotency/storage-adapter-redis (Express, Fastify, NestJS plugins)",
    format: {
      ...base,
      stateField: "status",
      processingStates: ["IN_PROGRESS"],
      completedStates: ["COMPLETE"],
      statusField: "response.additional.statusCode",
      bodyFields: ["response.body", "response.error"],
      fingerprintField: "fingerPrint",
    },
    defaultPattern: "node-idempotency:*",
    defaultTtlSeconds: 86400,
    fingerprintAdvice:
      "Requests arrive without a body to fingerprint (fingerPrint is only stored for requests with a body): send the intent in the body, or key the cache on it.",
  },
  "laravel-idempotency": {
    library: "square1/laravel-idempotency (Laravel middleware on the Redis cache store)",
    format: {
      ...base,
      encoding: "php",
      // Cache::lock() writes its 16-character owner token at the same key while the request runs.
      processingPattern: "^[A-Za-z0-9]{16}$",
      statusField: "status",
      bodyFields: ["body"],
      headersField: "headers",
    },
    defaultPattern: "laravel_database_laravel_cache_idempotency:*",
    defaultTtlSeconds: 86400,
    fingerprintAdvice:
      "square1/laravel-idempotency checks only the route path of a reused key, never its body: a retry with another payload gets the first answer. Include a hash of the request body in the idempotency key (user_id_resolver / a custom middleware), or use a library that compares payloads.",
  },
};

export const PRESET_NAMES = Object.keys(FORMAT_PRESETS);

// --- Custom formats (REDIS_FORMATS) ---------------------------------------------------------

const fieldName = z.string().trim().min(1).max(200);
const timeField = z
  .string()
  .regex(/^.+:(s|ms)$/, 'must be "field:s" or "field:ms"')
  .transform((v): TimeField => {
    const at = v.lastIndexOf(":");
    return { field: v.slice(0, at), unit: v.slice(at + 1) as "s" | "ms" };
  });
const stringList = z.union([fieldName.transform((v) => [v]), z.array(fieldName).min(1).max(20)]);

/** One custom format, as written in REDIS_FORMATS: a preset to start from, then the fields that differ. */
export const customFormatSchema = z
  .object({
    extends: z.enum(PRESET_NAMES as [string, ...string[]]).optional(),
    encoding: z.enum(["string", "hash", "php"]).optional(),
    sentinels: stringList.optional(),
    processingPattern: z.string().min(1).max(200).optional(),
    stateField: fieldName.optional(),
    processing: stringList.optional(),
    completed: stringList.optional(),
    statusField: fieldName.optional(),
    bodyField: stringList.optional(),
    headersField: fieldName.optional(),
    fingerprintField: fieldName.optional(),
    expiresAt: timeField.optional(),
    inProgressExpiresAt: timeField.optional(),
  })
  .strict();

export function customFormat(input: z.output<typeof customFormatSchema>): ValueFormat {
  const from = input.extends ? FORMAT_PRESETS[input.extends].format : base;
  const f: ValueFormat = {
    ...from,
    ...(input.encoding ? { encoding: input.encoding } : {}),
    ...(input.sentinels ? { processingSentinels: input.sentinels } : {}),
    ...(input.processingPattern ? { processingPattern: input.processingPattern } : {}),
    ...(input.stateField ? { stateField: input.stateField } : {}),
    ...(input.processing ? { processingStates: input.processing } : {}),
    ...(input.completed ? { completedStates: input.completed } : {}),
    ...(input.statusField ? { statusField: input.statusField } : {}),
    ...(input.bodyField ? { bodyFields: input.bodyField } : {}),
    ...(input.headersField ? { headersField: input.headersField } : {}),
    ...(input.fingerprintField ? { fingerprintField: input.fingerprintField } : {}),
    ...(input.expiresAt ? { expiresAt: input.expiresAt } : {}),
    ...(input.inProgressExpiresAt ? { inProgressExpiresAt: input.inProgressExpiresAt } : {}),
  };
  if (f.processingPattern) new RegExp(f.processingPattern); // throws on a bad expression
  if (f.stateField && (f.processingStates.length === 0 || f.completedStates.length === 0)) {
    throw new Error("a format with a stateField needs both its processing and its completed state values");
  }
  if (!f.stateField && f.processingSentinels.length === 0 && !f.processingPattern) {
    throw new Error("a format needs a stateField, or sentinels / a processingPattern for the in-progress value");
  }
  if (!f.stateField && !f.statusField && f.bodyFields.length === 0) {
    throw new Error("a format without a stateField needs a statusField or a bodyField to recognise completed values");
  }
  return f;
}

// --- Reading one value ---------------------------------------------------------------------

/** One key read back as a record of its format. */
export interface KeyRecord {
  state: KeyState;
  /** The state as stored: the sentinel, or the library's state value ("INPROGRESS", "COMPLETE", …). */
  stateValue: string;
  httpStatus: number | null;
  body: string | null;
  headers: HeaderPairs | null;
  fingerprint: string | null;
  expiresAt: Date | null;
  inProgressExpiresAt: Date | null;
}

/** What GET (string, php) or HGETALL (hash) returned; null: no such key. */
export type RawValue = string | Record<string, string> | null;

const fieldFor = (name: string, key: string) => name.replaceAll("{key}", key);

function parseJsonObject(text: string): Record<string, unknown> | null {
  const t = text.trimStart();
  if (!t.startsWith("{")) return null;
  try {
    const v = JSON.parse(text) as unknown;
    return v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** A dotted path into the value; a string met on the way that holds a JSON object is descended into. */
function at(root: Record<string, unknown>, path: string, literal: boolean): unknown {
  if (literal || path in root) return root[path];
  let cur: unknown = root;
  for (const part of path.split(".")) {
    if (typeof cur === "string") cur = parseJsonObject(cur);
    if (!cur || typeof cur !== "object" || Array.isArray(cur)) return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

const asText = (v: unknown): string | null =>
  v === undefined || v === null ? null : typeof v === "string" ? v : typeof v === "number" || typeof v === "boolean" ? String(v) : JSON.stringify(v);

function asStatus(v: unknown): number | null {
  const n = typeof v === "number" ? v : typeof v === "string" && /^\d{3}$/.test(v.trim()) ? Number(v) : NaN;
  return Number.isInteger(n) && n >= 100 && n <= 599 ? n : null;
}

function asTime(v: unknown, unit: "s" | "ms"): Date | null {
  const n = typeof v === "number" ? v : typeof v === "string" && /^\d{1,16}(\.\d+)?$/.test(v.trim()) ? Number(v) : NaN;
  if (!Number.isFinite(n) || n <= 0) return null;
  const d = new Date(unit === "s" ? n * 1000 : n);
  return Number.isNaN(d.getTime()) ? null : d;
}

function asHeaders(v: unknown): HeaderPairs | null {
  if (typeof v === "string") v = parseJsonObject(v) ?? v;
  if (Array.isArray(v)) {
    const pairs = v.filter((p): p is [string, unknown] => Array.isArray(p) && p.length === 2 && typeof p[0] === "string");
    return pairs.map(([n, x]) => [n, asText(x) ?? ""]);
  }
  if (v && typeof v === "object") {
    return Object.entries(v as Record<string, unknown>).flatMap(([n, x]): [string, string][] =>
      Array.isArray(x) ? x.map((y) => [n, asText(y) ?? ""]) : [[n, asText(x) ?? ""]],
    );
  }
  return null;
}

/**
 * Reads one value as a record of the format, or null when it is not one (wrong type,
 * not the encoding, no recognised state): such keys are never counted or acted on.
 */
export function decodeValue(format: ValueFormat, key: string, raw: RawValue): KeyRecord | null {
  if (raw === null) return null;
  const blank = { httpStatus: null, body: null, headers: null, fingerprint: null, expiresAt: null, inProgressExpiresAt: null };
  let obj: Record<string, unknown> | null;
  if (format.encoding === "hash") {
    if (typeof raw === "string" || Object.keys(raw).length === 0) return null;
    obj = raw;
  } else {
    if (typeof raw !== "string") return null;
    if (format.processingSentinels.includes(raw)) return { state: "processing", stateValue: raw, ...blank };
    if (format.processingPattern && new RegExp(format.processingPattern).test(raw)) return { state: "processing", stateValue: raw, ...blank };
    if (format.encoding === "php") {
      const php = phpUnserialize(raw);
      const plain = php === undefined ? null : phpToPlain(php);
      obj = plain && typeof plain === "object" ? (plain as Record<string, unknown>) : null;
    } else {
      obj = parseJsonObject(raw);
    }
  }
  if (!obj) return null;
  const literal = format.encoding === "hash";
  const get = (field: string | null) => (field ? at(obj!, fieldFor(field, key), literal) : undefined);

  let state: KeyState;
  let stateValue: string;
  const httpStatus = asStatus(get(format.statusField));
  const bodyField = format.bodyFields.find((f) => get(f) !== undefined && get(f) !== null);
  if (format.stateField) {
    const v = asText(get(format.stateField));
    if (v === null) return null;
    if (format.processingStates.includes(v)) state = "processing";
    else if (format.completedStates.includes(v)) state = "completed";
    else return null;
    stateValue = v;
  } else {
    // Seed-like: JSON {status, body} is the result; anything else is not ours.
    if (httpStatus === null && !bodyField) return null;
    state = "completed";
    stateValue = "result";
  }
  return {
    state,
    stateValue,
    httpStatus,
    body: bodyField ? asText(get(bodyField)) : null,
    headers: format.headersField ? asHeaders(get(format.headersField)) : null,
    fingerprint: asText(get(format.fingerprintField)),
    expiresAt: format.expiresAt ? asTime(get(format.expiresAt.field), format.expiresAt.unit) : null,
    inProgressExpiresAt: format.inProgressExpiresAt ? asTime(get(format.inProgressExpiresAt.field), format.inProgressExpiresAt.unit) : null,
  };
}
