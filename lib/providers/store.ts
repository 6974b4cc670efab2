import { byDialect } from "../db/dialect";
import type { SqlExecutor } from "../db/sql";
import { mysqlProviderSeedStore } from "./store.mysql";
import { postgresProviderSeedStore } from "./store.postgres";

/** A completed charge a provider holds, as the demo seed reads it. */
export interface ChargeRow {
  id: bigint;
  provider_reference: string;
  amount_minor: bigint;
  currency: string;
}

/** A pending record's request at its provider, as the demo seed reads it. */
export interface PendingRequestRow {
  provider_request_id: string;
  amount_minor: bigint | null;
  currency: string | null;
}

/** The statements seeding the demo provider runs (ADR 0011): what the records say happened at the provider. */
export interface ProviderSeedStore {
  /**
   * The newest `limit` completed records that took money at a provider (provider, reference, amount and currency
   * set; refunds excluded: their reference names a refund), newest first (created_at, id).
   */
  completedCharges(limit: number): Promise<ChargeRow[]>;
  /** The newest `limit` pending records with a provider request id, newest first (created_at, id). */
  pendingRequests(limit: number): Promise<PendingRequestRow[]>;
}

export function providerSeedStore(ex: SqlExecutor): ProviderSeedStore {
  return byDialect(ex, { postgres: postgresProviderSeedStore, mysql: mysqlProviderSeedStore })(ex);
}
