/**
 * Whether a record's charge can be compensated (refunded, voided, cancelled) at all —
 * one definition for the API's refusal and the screens that offer (or disable) the
 * action. No imports: the browser uses it too.
 */
export interface CompensableFacts {
  id: string | bigint;
  status: string;
  operation: string;
  resourceType: string | null;
  provider: string | null;
  providerReference: string | null;
  amountMinor: string | bigint | null;
  currency: string | null;
}

/** A record that gives money back (a refund) has no charge of its own to compensate. */
export function isRefundRecord(r: Pick<CompensableFacts, "operation" | "resourceType">): boolean {
  return r.resourceType === "refund" || /(^|[_.])refunds?($|[_.])/.test(r.operation);
}

export function compensability(r: CompensableFacts): { allowed: boolean; reason: string | null } {
  if (r.status !== "completed") return { allowed: false, reason: `Only completed records can be compensated; record ${r.id} is ${r.status}.` };
  if (isRefundRecord(r)) {
    return {
      allowed: false,
      reason: `Record ${r.id} is a refund (${r.operation}): it gives money back, there is no charge of its own to refund, void or cancel. Compensate the original payment instead.`,
    };
  }
  const missing = (["provider", "providerReference", "amountMinor", "currency"] as const).filter((k) => r[k] === null);
  if (missing.length) return { allowed: false, reason: `Record ${r.id} has no ${missing.join(", ")}: there is no charge at a provider to compensate.` };
  return { allowed: true, reason: null };
}
