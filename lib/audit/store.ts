import { byDialect } from "../db/dialect";
import type { SqlExecutor } from "../db/sql";
import type { AuditEntry } from "../generated/prisma/client";
import { mysqlAuditStore } from "./store.mysql";
import { postgresAuditStore } from "./store.postgres";

/** The chain's newest entry and the number of entries, read together (one snapshot). */
export interface ChainHeadRow {
  id: bigint;
  hash: string;
  occurredAt: Date;
  keyId: string | null;
  count: bigint;
}

/** Which entries the listing and the export read (lib/audit/query.ts turns the API's filters into this). */
export interface AuditEntryFilter {
  actorId?: string;
  /** The actor label starts with this, case-insensitively; LIKE's wildcards in it are plain characters. */
  actorLabelPrefix?: string;
  action?: string;
  /** The action starts with this (case-sensitively); wildcards are plain characters. */
  actionPrefix?: string;
  targetTable?: string;
  targetId?: string;
  outcome?: string;
  /** occurred_at ≥ from */
  from?: Date;
  /** occurred_at < to */
  to?: Date;
  /** id < before (the keyset cursor) */
  before?: bigint;
}

/**
 * The statements of the audit trail that Prisma's model API does not say on every database
 * (ADR 0011): a case-insensitive prefix is `mode: "insensitive"` on PostgreSQL only.
 */
export interface AuditStore {
  /** Waits for the audit chain's append lock (LOCKS.auditChain), held until the transaction ends: one writer at a time keeps the chain one line. */
  lockChain(): Promise<void>;
  /** The chain's head; null when the trail is empty. */
  chainHead(): Promise<ChainHeadRow | null>;
  /** The hash of entry `id` (null when it is gone) and the number of entries up to it, read together. */
  entryUpTo(id: bigint): Promise<{ hash: string | null; count: bigint }>;
  /** Entries matching `filter`, newest first (by id): `take` of them after skipping `skip`. */
  entries(filter: AuditEntryFilter, page: { take: number; skip?: number }): Promise<AuditEntry[]>;
}

export function auditStore(ex: SqlExecutor): AuditStore {
  return byDialect(ex, { postgres: postgresAuditStore, mysql: mysqlAuditStore })(ex);
}
