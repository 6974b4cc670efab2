import { byDialect } from "../db/dialect";
import type { SqlExecutor } from "../db/sql";
import type { DuplicatesInput } from "./duplicates";
import { mysqlDuplicatesStore } from "./duplicates-store.mysql";
import { postgresDuplicatesStore } from "./duplicates-store.postgres";
import type { RecordSummary } from "./row";
import type { DuplicateBasis } from "./vocabulary";

/** One pair under one rule, as the statement returns it: `first` was created before `second`. */
export interface DuplicatePairRow {
  first: bigint;
  second: bigint;
  basis: DuplicateBasis;
  secondsApart: number;
}

/** What finding a record's partners needs to know about it. */
export type DuplicateProbe = Pick<
  RecordSummary,
  "id" | "scope" | "operation" | "idempotencyKey" | "payloadHash" | "resourceId" | "amountMinor" | "currency" | "createdAt"
>;

/** The statements the duplicate-charge investigation runs (ADR 0011). */
export interface DuplicatesStore {
  /** The oldest and newest created_at of the records held (of the scope, when given); null for none. */
  createdRange(scope: string | undefined): Promise<{ oldest: Date | null; newest: Date | null }>;
  /**
   * Every pair whose earlier record was created in [from, to) (scope, operation filters), under each of the input's
   * bases (default both) and within its window: a pair found by both rules comes once per rule. Newest first, at most
   * MAX_PAIRS + 1 rows.
   */
  pairs(input: DuplicatesInput & { from: Date; to: Date }): Promise<DuplicatePairRow[]>;
  /** The records of these ids (those still held; any order). */
  records(ids: bigint[]): Promise<RecordSummary[]>;
  /** The direct partners of one record created within ±window, once per rule that pairs them. */
  partners(record: DuplicateProbe, windowSeconds: number): Promise<(RecordSummary & { basis: DuplicateBasis })[]>;
}

export function duplicatesStore(ex: SqlExecutor): DuplicatesStore {
  return byDialect(ex, { postgres: postgresDuplicatesStore, mysql: mysqlDuplicatesStore })(ex);
}
