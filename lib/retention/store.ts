import { byDialect } from "../db/dialect";
import type { SqlExecutor } from "../db/sql";
import type { PolicyRule } from "./rules";
import { mysqlRetentionStore } from "./store.mysql";
import { postgresRetentionStore } from "./store.postgres";

/** A retention policy as a rule, as stored. */
export interface PolicyRuleRow {
  id: bigint;
  operation: string | null;
  rec: number;
  ev: number;
  enabled: boolean;
}

export interface NewPolicy {
  operation: string | null;
  keepRecordsDays: number;
  keepEventsDays: number;
  enabled: boolean;
  updatedByLabel: string;
}

/** A record's legal-hold state. */
export interface RecordHoldState {
  id: bigint;
  scope: string;
  status: string;
  legalHold: boolean;
  version: number;
}

export interface NewRun {
  policies: readonly PolicyRule[];
  asOf: Date;
  batchSize: number;
  pauseMs: number;
  estimatedRecords: bigint;
  estimatedEvents: bigint;
  reason: string;
  startedBy: bigint | null;
  startedByLabel: string;
  /** The process that works it: it holds the lease from the start. */
  worker: string;
  leaseSeconds: number;
}

/** What a batch did: the run's new watermark, the rows it deleted, the lease it renews (seconds from now). */
export interface BatchProgress {
  watermark: bigint;
  deleted: number;
  leaseSeconds: number;
}

/** A run a worker may take over. */
export interface ClaimableRun {
  id: bigint;
  worker: string | null;
  leaseUntil: Date | null;
}

/**
 * The statements on the console's own retention tables (ADR 0011): policies, legal holds
 * (and the lock that orders them against purge batches), purge runs (their lifecycle, lease
 * and progress). The row-at-a-time reads stay on Prisma's model API. Methods named `lock…`
 * take row locks until the transaction ends and answer whether the row exists.
 */
export interface RetentionStore {
  /** Every policy as a rule: the default first, then by operation. */
  policyRules(): Promise<PolicyRuleRow[]>;
  /** The new policy's id; null when one for the same operation (or the default) exists. */
  insertPolicy(p: NewPolicy): Promise<bigint | null>;
  lockPolicy(id: bigint): Promise<boolean>;
  countPolicies(): Promise<bigint>;

  /**
   * Setting a hold takes this exclusively, every purge batch shared, both until commit: a
   * batch either committed before the hold or sees it (legal-holds.ts). The lock is
   * transactionLock's "legalHolds" (lib/db/locks.ts) on every dialect.
   */
  lockHoldsExclusive(): Promise<void>;
  lockHoldsShared(): Promise<void>;
  lockRecordHold(recordId: bigint): Promise<RecordHoldState | null>;
  /** Sets or lifts the record's hold (bumps its version, never its updated_at). */
  setRecordHold(recordId: bigint, hold: boolean): Promise<RecordHoldState>;
  /** The new scope hold's id; null when the scope has an active one. */
  insertScopeHold(scope: string, reason: string, setByLabel: string): Promise<bigint | null>;
  lockScopeHold(id: bigint): Promise<boolean>;

  /** The new run's id (state running, leased to its worker); null when a run is active. */
  insertRun(run: NewRun): Promise<bigint | null>;
  lockRun(id: bigint): Promise<boolean>;
  /** Locks the run if `worker` still works it (running or cancelling). */
  lockRunOfWorker(id: bigint, worker: string): Promise<boolean>;
  /** Final state, finished, lease released; `lastError` kept unless given. */
  finishRun(id: bigint, state: "completed" | "cancelled" | "failed", lastError: string | null): Promise<void>;
  requestCancel(id: bigint, byLabel: string): Promise<void>;
  /** Whether nobody works the run (no worker, or its lease has passed). */
  runIsIdle(id: bigint): Promise<boolean>;
  /** Locks the oldest active run nobody works (or `worker`'s own; only `runId` when given), skipping locked ones. */
  lockClaimableRun(worker: string, runId: bigint | null): Promise<ClaimableRun | null>;
  /** Leases the run to `worker` (lease + its pause), running from now if it was queued. */
  claimRun(id: bigint, worker: string, leaseSeconds: number): Promise<void>;
  /** The records phase is done: on to the events, lease renewed. */
  enterEventsPhase(id: bigint, leaseSeconds: number): Promise<void>;
  recordsBatchDone(id: bigint, progress: BatchProgress): Promise<void>;
  eventsBatchDone(id: bigint, progress: BatchProgress): Promise<void>;
  /** Notes a failed batch on the run (if `worker` still works it). */
  noteBatchError(id: bigint, worker: string, error: string): Promise<void>;
}

export function retentionStore(ex: SqlExecutor): RetentionStore {
  return byDialect(ex, { postgres: postgresRetentionStore, mysql: mysqlRetentionStore })(ex);
}
