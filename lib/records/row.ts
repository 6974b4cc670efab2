/**
 * The record columns the read side returns, aliased to camelCase so raw rows are
 * ready to serialise. Response headers and body are deliberately not here: they
 * leave the server only through lib/records/detail.ts, per permission and masked.
 */

import { recordColumns as columnList } from "../idempotency/columns";
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

/** SELECT list of RecordSummary for the table aliased `a`: the one record column list (lib/idempotency/columns.ts). */
export const recordColumns = (a = "r"): string => columnList(a);
