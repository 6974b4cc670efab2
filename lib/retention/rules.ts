/**
 * What a purge judges by: the retention policies as rules (snapshotted into
 * purge_runs.policies when a run starts). Kept free of heavy imports so read-side
 * code (lib/stats/expiry.ts) can load them.
 */
export interface PolicyRule {
  id: string;
  /** null = the default policy. */
  operation: string | null;
  keepRecordsDays: number;
  keepEventsDays: number;
  enabled: boolean;
}

/** The current rules straight from SQL (for code that has only a raw SQL executor). */
export async function loadRules(sql: { query<T>(text: string, params?: unknown[]): Promise<T[]> }): Promise<PolicyRule[]> {
  const rows = await sql.query<{ id: bigint; operation: string | null; rec: number; ev: number; enabled: boolean }>(
    `SELECT id, operation, keep_records_days AS rec, keep_events_days AS ev, enabled FROM retention_policies ORDER BY operation NULLS FIRST, id`,
  );
  return rows.map((r) => ({ id: String(r.id), operation: r.operation, keepRecordsDays: r.rec, keepEventsDays: r.ev, enabled: r.enabled }));
}
