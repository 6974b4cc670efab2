import { byDialect } from "../db/dialect";
import type { KeysetPosition } from "../db/paging";
import type { SqlExecutor } from "../db/sql";
import type { CompensationRow } from "./model";
import type { CompensationKind, CompensationState } from "./vocabulary";
import { mysqlCompensationStore } from "./store.mysql";
import { postgresCompensationStore } from "./store.postgres";

export interface CompensationPageQuery {
  state?: CompensationState;
  recordId?: bigint;
  /** Rows before this position (newest request first). */
  cursor?: KeysetPosition;
  limit: number;
}

/** What a request and a retry need of the record compensated. */
export interface CompensatedRecord {
  id: bigint;
  scope: string;
  operation: string;
  idempotencyKey: string;
  status: string;
  resourceType: string | null;
  provider: string | null;
  providerReference: string | null;
  amountMinor: bigint | null;
  currency: string | null;
}

export interface NewCompensation {
  record: CompensatedRecord;
  relatedRecordId: bigint | null;
  kind: CompensationKind;
  amountMinor: bigint;
  providerIdempotencyKey: string;
  reason: string;
  requestedBy: bigint;
  requestedByLabel: string;
}

export interface Decision {
  state: "approved" | "rejected";
  by: bigint;
  byLabel: string;
  reason: string;
  /** The version the decider saw. */
  version: number;
}

/**
 * The statements on compensations (ADR 0011). Every row comes back as a CompensationRow,
 * with the two computed columns (claimsAmount, stale: `leaseSeconds` is the lease of an
 * attempt). The state changes are guarded by the row's state and version (or, for an
 * attempt's result, its attempt number) and answer null when the guard no longer holds.
 * `lock…` methods take row locks until the transaction ends (record first, then
 * compensation, everywhere).
 */
export interface CompensationStore {
  /** `limit + 1` rows, newest request first, each with its cursor time (the extra row means a next page). */
  page(q: CompensationPageQuery, leaseSeconds: number): Promise<(CompensationRow & { cursorTime: string })[]>;
  get(id: bigint, leaseSeconds: number): Promise<CompensationRow | null>;
  /** Every compensation of one record, oldest first. */
  ofRecord(recordId: bigint, leaseSeconds: number): Promise<CompensationRow[]>;
  countByState(): Promise<{ state: CompensationState; n: bigint }[]>;

  lockRecord(recordId: bigint): Promise<CompensatedRecord | null>;
  recordScope(recordId: bigint): Promise<string | null>;
  /** What the record's compensations claim of its amount (see CompensationRow.claimsAmount), leaving `except` out. */
  claimedAmount(recordId: bigint, except: bigint | null): Promise<bigint>;
  insert(c: NewCompensation, leaseSeconds: number): Promise<CompensationRow>;
  lock(id: bigint, leaseSeconds: number): Promise<CompensationRow | null>;
  /** requested → approved | rejected. */
  decide(id: bigint, leaseSeconds: number, d: Decision): Promise<CompensationRow | null>;
  /** approved → executing (attempts + 1), at the version seen. */
  startAttempt(id: bigint, leaseSeconds: number, version: number): Promise<CompensationRow | null>;
  /** → executing again (attempts + 1), whatever the state, at the version seen (a retry). */
  restartAttempt(id: bigint, leaseSeconds: number, version: number): Promise<CompensationRow | null>;
  /** executing → executed, if `attempt` is still the latest. */
  markExecuted(id: bigint, leaseSeconds: number, attempt: number, providerCompensationId: string): Promise<CompensationRow | null>;
  /** executing → failed, if `attempt` is still the latest. */
  markFailed(id: bigint, leaseSeconds: number, attempt: number, error: string): Promise<CompensationRow | null>;
}

export function compensationStore(ex: SqlExecutor): CompensationStore {
  return byDialect(ex, { postgres: postgresCompensationStore, mysql: mysqlCompensationStore })(ex);
}
