/**
 * The one record column list (ADR 0011): idempotency_records' columns aliased to the Prisma
 * model's field names, so a raw row is an IdempotencyRecord (all columns) or the read side's
 * summary (without the stored response, which leaves the server only per permission and masked).
 */
const SUMMARY_BEFORE_RESPONSE = [
  "id",
  "scope",
  "operation",
  'idempotency_key AS "idempotencyKey"',
  'payload_hash AS "payloadHash"',
  "status",
  'response_code AS "responseCode"',
];
const RESPONSE = ['response_headers AS "responseHeaders"', 'response_body AS "responseBody"'];
const SUMMARY_AFTER_RESPONSE = [
  'resource_type AS "resourceType"',
  'resource_id AS "resourceId"',
  'correlation_id AS "correlationId"',
  "provider",
  'provider_request_id AS "providerRequestId"',
  'provider_reference AS "providerReference"',
  'amount_minor AS "amountMinor"',
  "currency",
  'last_error AS "lastError"',
  'created_at AS "createdAt"',
  'updated_at AS "updatedAt"',
  'expires_at AS "expiresAt"',
  "version",
  'legal_hold AS "legalHold"',
];

/**
 * The SELECT list of a record, its columns qualified with `alias` when given (`r.id, …`).
 * `response: true` adds the stored response headers and body (the whole IdempotencyRecord).
 */
export function recordColumns(alias?: string, opts: { response?: boolean } = {}): string {
  const columns = [...SUMMARY_BEFORE_RESPONSE, ...(opts.response ? RESPONSE : []), ...SUMMARY_AFTER_RESPONSE];
  return columns.map((c) => (alias ? `${alias}.${c}` : c)).join(", ");
}
