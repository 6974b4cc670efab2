/**
 * The read side's vocabulary, shared by its logic (schemas, decisions) and its statements
 * (every dialect's store): what a search looks in, why a record is in the queue, the rules
 * that make records suspected duplicates and the limits of that search.
 */

/** What a search can look in: the API's field name → the record column it means (the same column in every dialect's schema). */
export const SEARCH_FIELDS = {
  key: "idempotency_key",
  scope: "scope",
  provider_reference: "provider_reference",
  provider_request_id: "provider_request_id",
  correlation_id: "correlation_id",
  resource_id: "resource_id",
} as const;
export type SearchField = keyof typeof SEARCH_FIELDS;

/** Why a record is in the queue: stuck in processing, pending at the provider, or an open reconciliation item. */
export const QUEUE_KINDS = ["stuck", "pending", "reconciliation"] as const;
export type QueueKind = (typeof QUEUE_KINDS)[number];

/** The two rules that make records suspected duplicates: the same payload hash, or the same amount, currency and resource. */
export const DUPLICATE_BASES = ["payload_hash", "amount_resource"] as const;
export type DuplicateBasis = (typeof DUPLICATE_BASES)[number];

/** How far apart two suspected duplicates may be created: 10 minutes unless asked, 1 minute … 24 hours. */
export const DEFAULT_WINDOW_SECONDS = 10 * 60;
export const MIN_WINDOW_SECONDS = 60;
export const MAX_WINDOW_SECONDS = 24 * 3600;
/** Pairs read per request at most; the pair statement returns one more, so the answer can say truncated. */
export const MAX_PAIRS = 5000;
