import { byDialect } from "../db/dialect";
import type { SqlExecutor } from "../db/sql";
import type { TimelineEvent } from "./detail";
import { mysqlDetailStore } from "./detail-store.mysql";
import { postgresDetailStore } from "./detail-store.postgres";
import type { RecordSummary } from "./row";

/** A record with its stored response as the table holds it: headers in whatever shape the writer stored, the body as text. */
export type StoredRecordRow = RecordSummary & { responseHeaders: unknown; responseBody: unknown };

/** The statements the record page runs (ADR 0011), each from an index on the record id. */
export interface DetailStore {
  /** The record and its stored response; undefined when there is none (never written, or purged). */
  record(id: bigint): Promise<StoredRecordRow | undefined>;
  /** The record's newest `limit` events, returned oldest first (occurred_at, id). */
  timeline(recordId: bigint, limit: number): Promise<TimelineEvent[]>;
  /** How many events the record has. */
  eventCount(recordId: bigint): Promise<bigint>;
  /** Its reconciliation items, oldest first (camelCase fields). */
  reconciliationItems(recordId: bigint): Promise<Record<string, unknown>[]>;
  /** Its outbox messages, oldest first, payloads as stored (camelCase fields). */
  outboxMessages(recordId: bigint): Promise<Record<string, unknown>[]>;
  /**
   * The newest `limit` audit entries about the record — those targeting `target` (the record) and those targeting
   * one of its compensations — newest first (camelCase fields).
   */
  auditTrail(target: { table: string; id: bigint }, limit: number): Promise<Record<string, unknown>[]>;
}

export function detailStore(ex: SqlExecutor): DetailStore {
  return byDialect(ex, { postgres: postgresDetailStore, mysql: mysqlDetailStore })(ex);
}
