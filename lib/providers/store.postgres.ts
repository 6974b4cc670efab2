import type { SqlExecutor } from "../db/sql";
import type { ChargeRow, PendingRequestRow, ProviderSeedStore } from "./store";

/** The demo seed's reads on PostgreSQL. */
export function postgresProviderSeedStore(ex: SqlExecutor): ProviderSeedStore {
  return {
    completedCharges(limit) {
      return ex.query<ChargeRow>(
        `SELECT id, provider_reference, amount_minor, currency FROM idempotency_records
        WHERE status = 'completed' AND provider IS NOT NULL AND provider_reference IS NOT NULL
          AND amount_minor IS NOT NULL AND currency IS NOT NULL AND resource_type IS DISTINCT FROM 'refund'
        ORDER BY created_at DESC, id DESC LIMIT $1`,
        [limit],
      );
    },
    pendingRequests(limit) {
      return ex.query<PendingRequestRow>(
        `SELECT provider_request_id, amount_minor, currency FROM idempotency_records
      WHERE status = 'pending' AND provider_request_id IS NOT NULL
      ORDER BY created_at DESC, id DESC LIMIT $1`,
        [limit],
      );
    },
  };
}
