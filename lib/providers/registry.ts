/**
 * Which adapter serves which `provider` value (idempotency_records.provider,
 * reconciliation_items.provider). Configuration, read from the environment at
 * call time (so tests can set process.env before calling):
 *
 *   PROVIDERS="mockpay=http://127.0.0.1:4010,acmepay=https://pay.example.com"
 *       an explicit map; a name that is not listed → UnknownProviderError.
 *   PROVIDER_URL=http://127.0.0.1:4010
 *       (only when PROVIDERS is unset) every provider name → that one service.
 *   neither → UnknownProviderError for every name.
 *   PROVIDER_TIMEOUT_MS bounds each call (lib/providers/http.ts; default 5000).
 *
 * A value is `[<adapter type>+]<url>`: a plain http(s) URL is served by the
 * "http" adapter (lib/providers/http.ts, our provider service's API); a prefix
 * picks another adapter type, e.g. `acmepay=http+https://pay.example.com`
 * (the same as without prefix) or, once written, `stripe=stripe+https://api.stripe.com`.
 *
 * Plugging in a real provider (Stripe, Adyen, …) is one file plus one line here:
 *   1. lib/providers/stripe.ts: `export class StripeAdapter implements ProviderAdapter`
 *      (lib/providers/types.ts is the contract: lookup() maps the provider's
 *      answer for a request id to succeeded/failed/unknown; compensate() sends
 *      request.idempotencyKey as the provider's idempotency key on every
 *      attempt; transport trouble is thrown as ProviderUnavailableError, a
 *      refusal is returned as { status: "failed" }). Its secrets come from its
 *      own env variables (e.g. STRIPE_SECRET_KEY), never from PROVIDERS.
 *   2. add `stripe: (url) => new StripeAdapter(url)` to ADAPTER_TYPES below.
 *   3. configure PROVIDERS="stripe=stripe+https://api.stripe.com".
 */
import { HttpProviderAdapter } from "./http";
import { UnknownProviderError, type ProviderAdapter } from "./types";

/** Adapter type → factory (target URL, provider name). */
const ADAPTER_TYPES: Record<string, (url: string, provider: string) => ProviderAdapter> = {
  http: (url) => new HttpProviderAdapter(url),
};

/** PROVIDERS or PROVIDER_URL is malformed: no adapter can be built for this name. */
export class InvalidProviderConfigError extends UnknownProviderError {
  constructor(provider: string, problem: string) {
    super(provider);
    this.name = "InvalidProviderConfigError";
    this.message = `provider configuration is invalid: ${problem}`;
  }
}

/** Where PROVIDERS / PROVIDER_URL are read (process.env by default; tests may pass their own). */
export type ProviderEnv = Record<string, string | undefined>;

export interface ProviderEntry {
  /** The provider name, or "*" for PROVIDER_URL's "every name". */
  name: string;
  /** Adapter type, e.g. "http". */
  kind: string;
  /** Target URL, credentials removed (safe to display). */
  url: string;
}

export interface ProviderConfig {
  source: "PROVIDERS" | "PROVIDER_URL" | "none";
  providers: ProviderEntry[];
  /** Set when the configuration cannot be used (the message says why). */
  error?: string;
}

interface Parsed extends ProviderEntry {
  target: string;
}

function parseValue(name: string, value: string, variable: string): Parsed {
  const m = /^([a-z][a-z0-9-]*)\+(.+)$/i.exec(value);
  const kind = m ? m[1].toLowerCase() : "http";
  const target = m ? m[2] : value;
  if (!ADAPTER_TYPES[kind]) {
    throw new InvalidProviderConfigError(name, `${variable}: unknown adapter type "${kind}" for "${name}" (known: ${Object.keys(ADAPTER_TYPES).join(", ")})`);
  }
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    throw new InvalidProviderConfigError(name, `${variable}: "${name}" needs a URL, got ${JSON.stringify(target)}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new InvalidProviderConfigError(name, `${variable}: "${name}" needs an http(s) URL, got ${JSON.stringify(target)}`);
  }
  const shown = new URL(url);
  shown.username = "";
  shown.password = "";
  return { name, kind, target, url: shown.toString().replace(/\/$/, "") };
}

/** PROVIDERS="a=url,b=url" → entries; throws InvalidProviderConfigError when malformed. */
export function parseProviders(raw: string): Parsed[] {
  const out: Parsed[] = [];
  for (const part of raw.split(",")) {
    if (part.trim() === "") continue;
    const eq = part.indexOf("=");
    const name = eq === -1 ? "" : part.slice(0, eq).trim();
    const value = eq === -1 ? "" : part.slice(eq + 1).trim();
    if (!name || !value) throw new InvalidProviderConfigError(name || part.trim(), `PROVIDERS: expected name=url, got ${JSON.stringify(part.trim())}`);
    if (out.some((e) => e.name === name)) throw new InvalidProviderConfigError(name, `PROVIDERS: "${name}" is listed twice`);
    out.push(parseValue(name, value, "PROVIDERS"));
  }
  return out;
}

function resolve(env: ProviderEnv): { source: ProviderConfig["source"]; entries: Parsed[] } {
  const providers = env.PROVIDERS?.trim();
  if (providers) return { source: "PROVIDERS", entries: parseProviders(providers) };
  const url = env.PROVIDER_URL?.trim();
  if (url) return { source: "PROVIDER_URL", entries: [parseValue("*", url, "PROVIDER_URL")] };
  return { source: "none", entries: [] };
}

/** The adapter for a `provider` value, from PROVIDERS / PROVIDER_URL as they are now. */
export function adapterFor(provider: string, env: ProviderEnv = process.env): ProviderAdapter {
  const { source, entries } = resolve(env);
  const entry = source === "PROVIDER_URL" ? entries[0] : entries.find((e) => e.name === provider);
  if (!entry) throw new UnknownProviderError(provider);
  return ADAPTER_TYPES[entry.kind](entry.target, provider);
}

/** What is configured, for display (URLs without credentials). Never throws. */
export function configuredProviders(env: ProviderEnv = process.env): ProviderConfig {
  try {
    const { source, entries } = resolve(env);
    return { source, providers: entries.map(({ name, kind, url }) => ({ name, kind, url })) };
  } catch (err) {
    return { source: env.PROVIDERS?.trim() ? "PROVIDERS" : "PROVIDER_URL", providers: [], error: (err as Error).message };
  }
}
