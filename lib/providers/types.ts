/**
 * THE provider adapter interface: everything the console asks of a payment
 * provider. One adapter per provider API (lib/providers/http.ts talks to our
 * local provider service; a Stripe or Adyen adapter is one more file implementing
 * this). Which adapter serves which `provider` value is configuration
 * (lib/providers/registry.ts).
 *
 * Contract:
 * - lookup() answers what became of a request the writer sent with
 *   provider_request_id: succeeded (with the provider's reference and amount),
 *   failed (with the provider's reason), or unknown (the provider has no final
 *   answer yet, or does not know the request).
 * - compensate() refunds/voids/cancels a charge. The idempotency key is sent to
 *   the provider on every attempt, so retrying after a timeout returns the first
 *   attempt's result instead of refunding twice.
 * - Transport trouble (timeout, connection reset, 5xx, a lost response) is thrown
 *   as ProviderUnavailableError: the outcome of that call is unknown, never
 *   "failed". Callers retry later (lookups are safe to repeat; compensations are
 *   safe because of their key).
 */

export type LookupOutcome =
  | { status: "succeeded"; reference: string; amountMinor: bigint | null; currency: string | null }
  | { status: "failed"; reason: string }
  | { status: "unknown"; reason: string };

export type CompensationKind = "refund" | "void" | "cancel";

export interface CompensationRequest {
  kind: CompensationKind;
  /** The provider's reference of the charge (idempotency_records.provider_reference). */
  reference: string;
  amountMinor: bigint;
  currency: string;
  /** Sent as the provider's Idempotency-Key on every attempt of this compensation. */
  idempotencyKey: string;
  reason: string;
}

export type CompensationOutcome =
  | { status: "succeeded"; providerCompensationId: string; amountMinor: bigint }
  /** The provider refused (e.g. amount exceeds what is left, charge unknown): retrying the same request will not help. */
  | { status: "failed"; reason: string };

export interface CallOptions {
  /** Aborts the call; the adapter then throws ProviderUnavailableError. */
  signal?: AbortSignal;
}

export interface ProviderAdapter {
  /** The `provider` value(s) it serves are configured in the registry; this names the adapter type, e.g. "http". */
  readonly kind: string;
  lookup(providerRequestId: string, opts?: CallOptions): Promise<LookupOutcome>;
  compensate(request: CompensationRequest, opts?: CallOptions): Promise<CompensationOutcome>;
}

/** The call's outcome is unknown (timeout, connection lost, provider 5xx): retry later, never assume failure. */
export class ProviderUnavailableError extends Error {
  constructor(
    message: string,
    readonly causeKind: "timeout" | "network" | "server_error" | "bad_response",
  ) {
    super(message);
    this.name = "ProviderUnavailableError";
  }
}

/** No adapter is configured for this `provider` value. */
export class UnknownProviderError extends Error {
  constructor(readonly provider: string) {
    super(`no provider adapter is configured for "${provider}" (see PROVIDERS in the README)`);
    this.name = "UnknownProviderError";
  }
}
