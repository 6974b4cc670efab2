import { randomBytes } from "node:crypto";
import type { Database } from "@/lib/db/client";
import { byDialect } from "@/lib/db/dialect";
import { IdempotencyStore } from "@/lib/idempotency";
import { queryBound } from "./sql";

/**
 * Records in the states operators and the reconciler act on, made through the
 * writers' own protocol (IdempotencyStore): pending with an open reconciliation
 * item (a provider timeout), and processing left behind by a dead worker (stuck).
 */

const rnd = () => randomBytes(6).toString("hex");

export interface Made {
  id: bigint;
  version: number;
  key: string;
  scope: string;
  operation: string;
  requestId: string;
  itemId: bigint | null;
}

export async function pendingRecord(
  db: Pick<Database, "prisma">,
  opts: { operation?: string; scope?: string; provider?: string; requestId?: string; amountMinor?: number; firstCheckInSeconds?: number } = {},
): Promise<Made> {
  const store = new IdempotencyStore(db.prisma);
  const key = `k-${rnd()}`;
  const scope = opts.scope ?? "tenant:acme";
  const operation = opts.operation ?? "capture_payment";
  const requestId = opts.requestId ?? `req_${rnd()}`;
  const begun = await store.begin({
    scope,
    operation,
    key,
    payload: { amount: opts.amountMinor ?? 1250, key },
    provider: opts.provider ?? "mockpay",
    amountMinor: opts.amountMinor ?? 1250,
    currency: "EUR",
  });
  if (begun.outcome !== "owner") throw new Error("expected to own the new key");
  const { record, reconciliationItemId } = await store.markPending(begun.record.id, {
    providerRequestId: requestId,
    error: "timeout after 10000 ms waiting for mockpay POST /v1/charges",
    firstCheckInSeconds: opts.firstCheckInSeconds ?? 0,
  });
  return { id: record.id, version: record.version, key, scope, operation, requestId, itemId: reconciliationItemId };
}

/** A processing record whose updated_at lies `ageSeconds` in the past (a dead worker's). */
export async function stuckRecord(
  db: Pick<Database, "prisma" | "sql">,
  opts: { ageSeconds?: number; operation?: string; requestId?: string } = {},
): Promise<Made> {
  const store = new IdempotencyStore(db.prisma);
  const key = `k-${rnd()}`;
  const scope = "tenant:acme";
  const operation = opts.operation ?? "capture_payment";
  const begun = await store.begin({
    scope,
    operation,
    key,
    payload: { key },
    provider: "mockpay",
    providerRequestId: opts.requestId,
    amountMinor: 990,
    currency: "EUR",
  });
  if (begun.outcome !== "owner") throw new Error("expected to own the new key");
  await queryBound(
    db.sql,
    byDialect(db.sql, {
      postgres: `UPDATE idempotency_records SET updated_at = now() - make_interval(secs => $2) WHERE id = $1`,
      mysql: `UPDATE idempotency_records SET updated_at = UTC_TIMESTAMP(6) - INTERVAL $2 SECOND WHERE id = $1`,
    }),
    [begun.record.id, opts.ageSeconds ?? 3600],
  );
  return { id: begun.record.id, version: begun.record.version, key, scope, operation, requestId: opts.requestId ?? "", itemId: null };
}

export async function recordRow(db: Pick<Database, "sql">, id: bigint) {
  const [r] = await queryBound<{
    status: string;
    version: number;
    provider_reference: string | null;
    response_code: number | null;
    response_body: string | null;
    response_headers: [string, string][] | null;
    last_error: string | null;
    resource_type: string | null;
    resource_id: string | null;
  }>(
    db.sql,
    `SELECT status, version, provider_reference, response_code, response_body, response_headers, last_error, resource_type, resource_id FROM idempotency_records WHERE id = $1`,
    [id],
  );
  return r;
}

export async function itemsOf(db: Pick<Database, "sql">, recordId: bigint) {
  return queryBound<{
    id: bigint;
    state: string;
    attempts: number;
    next_check_at: Date | null;
    last_checked_at: Date | null;
    last_error: string | null;
    resolution: Record<string, unknown> | null;
    resolved_by: string | null;
    resolved_at: Date | null;
  }>(
    db.sql,
    `SELECT id, state, attempts, next_check_at, last_checked_at, last_error, resolution, resolved_by, resolved_at FROM reconciliation_items WHERE record_id = $1 ORDER BY id`,
    [recordId],
  );
}

export async function reconciledEvents(db: Pick<Database, "sql">, recordId: bigint) {
  return queryBound<{ detail: Record<string, unknown>; response_code: number | null }>(
    db.sql,
    `SELECT detail, response_code FROM idempotency_events WHERE record_id = $1 AND kind = 'reconciled' ORDER BY id`,
    [recordId],
  );
}

export async function auditOf(db: Pick<Database, "sql">, recordId: bigint, action?: string) {
  return queryBound<{
    action: string;
    outcome: string;
    reason: string | null;
    actor_type: string;
    actor_label: string | null;
    detail: Record<string, unknown> | null;
    before: unknown;
    after: unknown;
  }>(
    db.sql,
    `SELECT action, outcome, reason, actor_type, actor_label, detail, "before", "after" FROM audit_log
      WHERE target_table = 'idempotency_records' AND target_id = $1 ${action ? "AND action = $2" : ""} ORDER BY id`,
    action ? [String(recordId), action] : [String(recordId)],
  );
}
