/**
 * ProviderAdapter over HTTP for our local provider service's API
 * (lib/providers/service.ts; Stripe-like). Every call is bounded by
 * PROVIDER_TIMEOUT_MS (read at call time, default 5000) combined with the
 * caller's signal.
 *
 * lookup():  200 succeeded/failed → that outcome; 404 or "processing" → unknown.
 * compensate(): POST /v1/refunds with Idempotency-Key = request.idempotencyKey on
 *   every attempt; 2xx → succeeded, 4xx → failed with the provider's error
 *   (except 408/409/425/429: "not now", thrown as unavailable).
 * Timeout, abort, connection trouble, 5xx or an unparseable answer →
 *   ProviderUnavailableError (the outcome of that call is unknown).
 */
import {
  ProviderUnavailableError,
  type CallOptions,
  type CompensationOutcome,
  type CompensationRequest,
  type LookupOutcome,
  type ProviderAdapter,
} from "./types";

export const DEFAULT_PROVIDER_TIMEOUT_MS = 5000;

export function providerTimeoutMs(env: Record<string, string | undefined> = process.env): number {
  const raw = env.PROVIDER_TIMEOUT_MS?.trim();
  if (!raw) return DEFAULT_PROVIDER_TIMEOUT_MS;
  const n = Number(raw);
  return Number.isFinite(n) && n > 0 ? n : DEFAULT_PROVIDER_TIMEOUT_MS;
}

/** Status codes that mean "not now" rather than "no": the same request may succeed later. */
const RETRYABLE_4XX = new Set([408, 409, 425, 429]);

interface Answer {
  status: number;
  body: Record<string, unknown> | null;
}

export class HttpProviderAdapter implements ProviderAdapter {
  readonly kind = "http";
  readonly baseUrl: string;

  /** timeoutMs: fixed per adapter; default PROVIDER_TIMEOUT_MS at call time. */
  constructor(
    baseUrl: string,
    private readonly opts: { timeoutMs?: number } = {},
  ) {
    this.baseUrl = baseUrl.replace(/\/+$/, "");
  }

  async lookup(providerRequestId: string, opts: CallOptions = {}): Promise<LookupOutcome> {
    const { status, body } = await this.request("GET", `/v1/requests/${encodeURIComponent(providerRequestId)}`, undefined, undefined, opts);
    if (status === 404) return { status: "unknown", reason: `the provider does not know request ${providerRequestId}` };
    if (status >= 500) throw new ProviderUnavailableError(`provider answered ${status} to the lookup of ${providerRequestId}`, "server_error");
    if (status !== 200 || !body) throw new ProviderUnavailableError(`unexpected answer ${status} to the lookup of ${providerRequestId}`, "bad_response");
    switch (body.status) {
      case "succeeded": {
        const charge = body.charge as Record<string, unknown> | null | undefined;
        if (!charge || typeof charge.id !== "string") {
          throw new ProviderUnavailableError(`the provider's answer for ${providerRequestId} names no charge`, "bad_response");
        }
        return {
          status: "succeeded",
          reference: charge.id,
          amountMinor: toBigint(charge.amount_minor),
          currency: typeof charge.currency === "string" ? charge.currency : null,
        };
      }
      case "failed":
        return { status: "failed", reason: typeof body.reason === "string" && body.reason ? body.reason : "failed (the provider gave no reason)" };
      case "processing":
        return { status: "unknown", reason: "the provider is still processing the request" };
      default:
        throw new ProviderUnavailableError(`the provider answered an unknown status ${JSON.stringify(body.status)} for ${providerRequestId}`, "bad_response");
    }
  }

  async compensate(request: CompensationRequest, opts: CallOptions = {}): Promise<CompensationOutcome> {
    const payload = {
      charge: request.reference,
      amount_minor: wireAmount(request.amountMinor),
      currency: request.currency,
      kind: request.kind,
      reason: request.reason,
    };
    const { status, body } = await this.request("POST", "/v1/refunds", payload, request.idempotencyKey, opts);
    if (status >= 200 && status < 300) {
      const amount = body ? toBigint(body.amount_minor) : null;
      if (!body || typeof body.id !== "string" || amount === null) {
        throw new ProviderUnavailableError(`the provider's refund answer (${status}) has no id or amount`, "bad_response");
      }
      return { status: "succeeded", providerCompensationId: body.id, amountMinor: amount };
    }
    if (status >= 500) throw new ProviderUnavailableError(`provider answered ${status} to the ${request.kind} of ${request.reference}`, "server_error");
    if (RETRYABLE_4XX.has(status)) {
      throw new ProviderUnavailableError(
        `provider answered ${status} (${errorText(body) ?? "try again later"}) to the ${request.kind} of ${request.reference}`,
        "server_error",
      );
    }
    if (status >= 400) return { status: "failed", reason: errorText(body) ?? `the provider refused (${status})` };
    throw new ProviderUnavailableError(`unexpected answer ${status} to the ${request.kind} of ${request.reference}`, "bad_response");
  }

  private async request(method: string, path: string, body: unknown, idempotencyKey: string | undefined, opts: CallOptions): Promise<Answer> {
    const timeoutMs = this.opts.timeoutMs ?? providerTimeoutMs();
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = opts.signal ? AbortSignal.any([timeout, opts.signal]) : timeout;
    const what = `${method} ${this.baseUrl}${path}`;
    const headers: Record<string, string> = { accept: "application/json" };
    if (body !== undefined) headers["content-type"] = "application/json";
    if (idempotencyKey !== undefined) headers["idempotency-key"] = idempotencyKey;
    let text: string;
    let status: number;
    try {
      const res = await fetch(`${this.baseUrl}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal,
        cache: "no-store",
      });
      status = res.status;
      text = await res.text();
    } catch (err) {
      if (timeout.aborted) throw new ProviderUnavailableError(`${what}: no answer within ${timeoutMs} ms`, "timeout");
      if (opts.signal?.aborted) throw new ProviderUnavailableError(`${what}: aborted by the caller`, "timeout");
      throw new ProviderUnavailableError(`${what}: ${describeNetworkError(err)}`, "network");
    }
    if (text.trim() === "") return { status, body: null };
    try {
      const parsed = JSON.parse(text);
      return { status, body: parsed && typeof parsed === "object" && !Array.isArray(parsed) ? parsed : null };
    } catch {
      if (status >= 500) return { status, body: null };
      throw new ProviderUnavailableError(`${what}: the answer (${status}) is not JSON`, "bad_response");
    }
  }
}

function toBigint(v: unknown): bigint | null {
  if (typeof v === "number" && Number.isSafeInteger(v)) return BigInt(v);
  if (typeof v === "string" && /^-?\d+$/.test(v)) return BigInt(v);
  return null;
}

function wireAmount(v: bigint): number | string {
  return v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= -BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v.toString();
}

function errorText(body: Record<string, unknown> | null): string | null {
  const e = body?.error as Record<string, unknown> | undefined;
  if (!e || typeof e !== "object") return null;
  const code = typeof e.code === "string" ? e.code : null;
  const message = typeof e.message === "string" ? e.message : null;
  if (code && message) return `${code}: ${message}`;
  return code ?? message;
}

function describeNetworkError(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } })?.cause;
  if (cause?.code) return `${cause.code}${cause.message ? ` (${cause.message})` : ""}`;
  if (cause?.message) return cause.message;
  return err instanceof Error ? err.message : String(err);
}
