import { z } from "zod";
import { customFormat, customFormatSchema, FORMAT_PRESETS, PRESET_NAMES, type FormatPreset, type ValueFormat } from "./formats";
import { NotFoundError } from "../kernel/errors";
import { formatDuration, parseDuration } from "../kernel/input";

/**
 * Redis key stores, from the environment (read once per process; tests provide their own).
 * Malformed values fail loudly at first use rather than being ignored.
 *
 * | variable | meaning | default |
 * | --- | --- | --- |
 * | `REDIS_URL` | adds the store `default` | — |
 * | `REDIS_KEY_PATTERN` | its keys (SCAN MATCH glob) | the format's, `idempotency:*` for the seed |
 * | `REDIS_KEY_TTL_SECONDS` | the TTL the service sets on its keys | the format's, 86400 for the seed |
 * | `REDIS_KEY_FORMAT` | a preset (`seed`, `powertools`, `powertools-java`, `node-idempotency`, `laravel-idempotency`) or a REDIS_FORMATS name | `seed` |
 * | `REDIS_WEDGED_AFTER` | a `processing` key older than this is wedged (units s, m, h, d) | `5m` |
 * | `REDIS_STORES` | more stores: `name=redis://host:6379/2?pattern=ord:*&ttl=3600&format=powertools&wedgedAfter=2m,…` | — |
 * | `REDIS_FORMATS` | custom value formats, JSON: `{"mine": {"extends": "seed", "stateField": "state", …}}` | — |
 * | `REDIS_CENSUS_SECONDS` | background census interval (0 = only on demand) | 60 |
 * | `REDIS_SCAN_COUNT` | SCAN COUNT per round trip (10–5000) | 100 |
 * | `REDIS_SCAN_PAUSE_MS` | least pause of the census after each round trip; it rests at least as long as the round took (0–1000) | 2 |
 */

export interface RedisStoreConfig {
  /** [a-z0-9_-]{1,40}; names the store in the API, the UI and the metrics. */
  name: string;
  /** The connection URL (our query parameters removed). */
  url: string;
  /** The URL without credentials, for screens and logs. */
  displayUrl: string;
  pattern: string;
  ttlSeconds: number;
  wedgedAfterSeconds: number;
  formatName: string;
  format: ValueFormat;
  /** The preset's advice when records carry no payload fingerprint (custom formats: a generic one). */
  fingerprintAdvice: string;
  library: string;
}

export interface RedisConfig {
  stores: RedisStoreConfig[];
  censusIntervalSeconds: number;
  scanCount: number;
  scanPauseMs: number;
}

export const DEFAULT_WEDGED_AFTER_SECONDS = 5 * 60;
export const DEFAULT_CENSUS_SECONDS = 60;
export const DEFAULT_SCAN_COUNT = 100;
export const DEFAULT_SCAN_PAUSE_MS = 2;
const STORE_NAME_RE = /^[a-z0-9][a-z0-9_-]{0,39}$/;
const GENERIC_ADVICE =
  "These records carry no payload fingerprint, so a reused key with another payload replays the first answer: store a hash of the request payload with the key, compare it on retries (422 when it differs), and name that field as fingerprintField in REDIS_FORMATS.";

type Env = Record<string, string | undefined>;

function positiveInt(name: string, text: string, min: number, max: number): number {
  if (!/^\d{1,10}$/.test(text.trim()) || Number(text) < min || Number(text) > max) {
    throw new Error(`${name}: "${text}" must be a whole number from ${min} to ${max}`);
  }
  return Number(text);
}

function duration(name: string, text: string): number {
  const s = parseDuration(text);
  if (s === null || s < 1) throw new Error(`${name}: "${text}" is not a duration such as 90s, 5m, 2h or 1d`);
  return s;
}

function parseFormats(text: string | undefined): Record<string, { format: ValueFormat; preset?: FormatPreset }> {
  const out: Record<string, { format: ValueFormat; preset?: FormatPreset }> = {};
  for (const [name, preset] of Object.entries(FORMAT_PRESETS)) out[name] = { format: preset.format, preset };
  if (!text?.trim()) return out;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error('REDIS_FORMATS must be a JSON object: {"name": {"extends": "seed", "stateField": "state", …}}');
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error("REDIS_FORMATS must be a JSON object of formats by name");
  for (const [name, spec] of Object.entries(parsed)) {
    if (!STORE_NAME_RE.test(name) || name in FORMAT_PRESETS) throw new Error(`REDIS_FORMATS: "${name}" must be a new lower-case name (not a preset)`);
    const r = customFormatSchema.safeParse(spec);
    if (!r.success) throw new Error(`REDIS_FORMATS.${name}: ${r.error.issues.map((i) => `${i.path.join(".") || "value"} ${i.message}`).join("; ")}`);
    try {
      out[name] = { format: customFormat(r.data), preset: r.data.extends ? FORMAT_PRESETS[r.data.extends] : undefined };
    } catch (err) {
      throw new Error(`REDIS_FORMATS.${name}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
  }
  return out;
}

function displayUrl(url: URL): string {
  const u = new URL(url);
  if (u.password) u.password = "***";
  return u.toString();
}

interface StoreInput {
  name: string;
  url: string;
  pattern?: string;
  ttl?: string;
  format?: string;
  wedgedAfter?: string;
}

function storeConfig(input: StoreInput, formats: ReturnType<typeof parseFormats>, where: string): RedisStoreConfig {
  if (!STORE_NAME_RE.test(input.name))
    throw new Error(`${where}: store name "${input.name}" must be 1–40 of a-z, 0-9, _ and - (starting with a letter or digit)`);
  let url: URL;
  try {
    url = new URL(input.url);
  } catch {
    throw new Error(`${where}: "${input.url}" is not a redis:// or rediss:// URL`);
  }
  if (url.protocol !== "redis:" && url.protocol !== "rediss:") throw new Error(`${where}: "${input.url}" is not a redis:// or rediss:// URL`);
  const formatName = input.format?.trim() || "seed";
  const chosen = formats[formatName];
  if (!chosen) throw new Error(`${where}: format "${formatName}" is neither a preset (${PRESET_NAMES.join(", ")}) nor defined in REDIS_FORMATS`);
  const pattern = input.pattern?.trim() || chosen.preset?.defaultPattern || "idempotency:*";
  if (pattern.length > 500) throw new Error(`${where}: the key pattern is longer than 500 characters`);
  return {
    name: input.name,
    url: url.toString(),
    displayUrl: displayUrl(url),
    pattern,
    ttlSeconds: input.ttl ? positiveInt(`${where} ttl`, input.ttl, 1, 10 * 365 * 86400) : (chosen.preset?.defaultTtlSeconds ?? 86400),
    wedgedAfterSeconds: input.wedgedAfter ? duration(`${where} wedgedAfter`, input.wedgedAfter) : DEFAULT_WEDGED_AFTER_SECONDS,
    formatName,
    format: chosen.format,
    fingerprintAdvice: chosen.preset?.fingerprintAdvice ?? GENERIC_ADVICE,
    library: FORMAT_PRESETS[formatName]?.library ?? `custom format "${formatName}" (REDIS_FORMATS)`,
  };
}

const OUR_PARAMS = ["pattern", "ttl", "format", "wedgedAfter"] as const;

export function parseRedisConfig(env: Env): RedisConfig {
  const formats = parseFormats(env.REDIS_FORMATS);
  const stores: RedisStoreConfig[] = [];
  if (env.REDIS_URL?.trim()) {
    stores.push(
      storeConfig(
        {
          name: "default",
          url: env.REDIS_URL.trim(),
          pattern: env.REDIS_KEY_PATTERN,
          ttl: env.REDIS_KEY_TTL_SECONDS,
          format: env.REDIS_KEY_FORMAT,
          wedgedAfter: env.REDIS_WEDGED_AFTER,
        },
        formats,
        "REDIS_URL",
      ),
    );
  }
  for (const part of (env.REDIS_STORES ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)) {
    const eq = part.indexOf("=");
    if (eq < 1) throw new Error(`REDIS_STORES: "${part}" is not name=redis://…`);
    const name = part.slice(0, eq).trim();
    const where = `REDIS_STORES (${name})`;
    let url: URL;
    try {
      url = new URL(part.slice(eq + 1).trim());
    } catch {
      throw new Error(`${where}: "${part.slice(eq + 1)}" is not a redis:// or rediss:// URL`);
    }
    const params: Partial<Record<(typeof OUR_PARAMS)[number], string>> = {};
    for (const p of OUR_PARAMS) {
      const v = url.searchParams.get(p);
      if (v !== null) params[p] = v;
      url.searchParams.delete(p);
    }
    if (stores.some((s) => s.name === name)) throw new Error(`${where}: the store name is used twice`);
    stores.push(storeConfig({ name, url: url.toString(), ...params, wedgedAfter: params.wedgedAfter ?? env.REDIS_WEDGED_AFTER }, formats, where));
  }
  return {
    stores,
    censusIntervalSeconds: env.REDIS_CENSUS_SECONDS?.trim() ? positiveInt("REDIS_CENSUS_SECONDS", env.REDIS_CENSUS_SECONDS, 0, 86400) : DEFAULT_CENSUS_SECONDS,
    scanCount: env.REDIS_SCAN_COUNT?.trim() ? positiveInt("REDIS_SCAN_COUNT", env.REDIS_SCAN_COUNT, 10, 5000) : DEFAULT_SCAN_COUNT,
    scanPauseMs: env.REDIS_SCAN_PAUSE_MS?.trim() ? positiveInt("REDIS_SCAN_PAUSE_MS", env.REDIS_SCAN_PAUSE_MS, 0, 1000) : DEFAULT_SCAN_PAUSE_MS,
  };
}

let provided: RedisConfig | undefined;

/** The process's stores (from the environment on first use, or what a test provided). */
export function redisConfig(): RedisConfig {
  provided ??= parseRedisConfig(process.env);
  return provided;
}

/** Tests (and scripts) set the configuration instead of the environment. */
export function provideRedisConfig(config: RedisConfig | undefined): void {
  provided = config;
}

export function describeStore(s: RedisStoreConfig) {
  return {
    name: s.name,
    url: s.displayUrl,
    pattern: s.pattern,
    ttlSeconds: s.ttlSeconds,
    wedgedAfter: formatDuration(s.wedgedAfterSeconds),
    wedgedAfterSeconds: s.wedgedAfterSeconds,
    format: s.formatName,
    library: s.library,
  };
}

/** `[store]` route segments. */
export const storeParamsSchema = z.object({
  store: z.string({ error: "must be a store name" }).regex(STORE_NAME_RE, "must be a store name (a-z, 0-9, _ and -)"),
});

/** The configured store of that name; 404 when there is none. */
export function storeNamed(name: string): RedisStoreConfig {
  const store = redisConfig().stores.find((s) => s.name === name);
  if (!store) {
    const names = redisConfig().stores.map((s) => s.name);
    throw new NotFoundError(
      names.length
        ? `There is no Redis key store "${name}" (configured: ${names.join(", ")}).`
        : "No Redis key store is configured (REDIS_URL / REDIS_STORES).",
    );
  }
  return store;
}
