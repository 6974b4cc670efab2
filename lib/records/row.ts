/**
 * The record columns the read side returns, aliased to camelCase so raw rows are
 * ready to serialise. Response headers and body are deliberately not here: they
 * leave the server only through lib/records/detail.ts, per permission and masked.
 */

import type { RecordStatus } from "../kernel/vocabulary";

export interface RecordSummary {
  id: bigint;
  scope: string;
  operation: string;
  idempotencyKey: string;
  payloadHash: string;
  status: RecordStatus;
  responseCode: number | null;
  resourceType: string | null;
  resourceId: string | null;
  correlationId: string | null;
  provider: string | null;
  providerRequestId: string | null;
  providerReference: string | null;
  amountMinor: bigint | null;
  currency: string | null;
  lastError: string | null;
  createdAt: Date;
  updatedAt: Date;
  expiresAt: Date;
  version: number;
  legalHold: boolean;
}

/** SELECT list of RecordSummary for the table aliased `a`. */
export function recordColumns(a = "r"): string {
  return `${a}.id, ${a}.scope, ${a}.operation, ${a}.idempotency_key AS "idempotencyKey", ${a}.payload_hash AS "payloadHash",
    ${a}.status, ${a}.response_code AS "responseCode", ${a}.resource_type AS "resourceType", ${a}.resource_id AS "resourceId",
    ${a}.correlation_id AS "correlationId", ${a}.provider, ${a}.provider_request_id AS "providerRequestId",
    ${a}.provider_reference AS "providerReference", ${a}.amount_minor AS "amountMinor", ${a}.currency,
    ${a}.last_error AS "lastError", ${a}.created_at AS "createdAt", ${a}.updated_at AS "updatedAt",
    ${a}.expires_at AS "expiresAt", ${a}.version, ${a}.legal_hold AS "legalHold"`;
}

/** Escapes LIKE's wildcards (and its escape character) so a prefix matches literally. */
export function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}
