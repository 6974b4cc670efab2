import { refreshRollups } from "@/lib/stats/rollups";
import type { Database } from "@/lib/db/client";

/**
 * A retention dataset with every kind of protected row next to eligible ones, for the
 * purge tests. Rows are written with plain SQL (no lib/retention code), and what
 * should be eligible is computed here by an independent, hand-written query
 * (`truth`), so the tests compare lib/retention against something it did not build.
 *
 * Policies: default — records 2 days after expiry, events 5 days; capture_payment —
 * 10 and 20 days; issue_invoice — disabled (never purged).
 */

export const DAY = 86_400_000;

export interface RetentionDataset {
  asOf: Date;
  /** Record id → the class it was made as. */
  labels: Map<string, string>;
  /** Classes that must be purged (by construction). */
  eligibleClasses: string[];
}

const HASH = "a".repeat(64);
let seq = 0;

interface RecordSpec {
  label: string;
  operation: string;
  status: string;
  /** Days before asOf the record expired (negative: expires in the future). */
  expiredDaysAgo: number;
  scope?: string;
  legalHold?: boolean;
  eligible: boolean;
  /** Children that make it protected (or not). */
  reconciliation?: string;
  compensation?: string;
  /** This record is the related_record_id of a requested compensation (of another record). */
  relatedOfCompensation?: boolean;
  outbox?: string;
}

export const RECORD_CLASSES: RecordSpec[] = [
  { label: "eligible_completed", operation: "create_order", status: "completed", expiredDaysAgo: 30, eligible: true },
  { label: "eligible_failed", operation: "accept_webhook", status: "failed", expiredDaysAgo: 30, eligible: true },
  { label: "eligible_capture", operation: "capture_payment", status: "completed", expiredDaysAgo: 15, eligible: true },
  { label: "within_default_window", operation: "create_order", status: "completed", expiredDaysAgo: 1, eligible: false },
  { label: "not_expired", operation: "create_order", status: "completed", expiredDaysAgo: -3, eligible: false },
  { label: "within_capture_window", operation: "capture_payment", status: "completed", expiredDaysAgo: 5, eligible: false },
  { label: "disabled_policy", operation: "issue_invoice", status: "completed", expiredDaysAgo: 30, eligible: false },
  { label: "processing", operation: "create_order", status: "processing", expiredDaysAgo: 30, eligible: false },
  { label: "pending", operation: "capture_payment", status: "pending", expiredDaysAgo: 30, eligible: false },
  { label: "pending_default_op", operation: "create_order", status: "pending", expiredDaysAgo: 30, eligible: false },
  { label: "legal_hold", operation: "create_order", status: "completed", expiredDaysAgo: 30, legalHold: true, eligible: false },
  { label: "scope_hold", operation: "create_order", status: "completed", expiredDaysAgo: 30, scope: "tenant:held", eligible: false },
  { label: "scope_hold_lifted", operation: "create_order", status: "completed", expiredDaysAgo: 30, scope: "tenant:lifted", eligible: true },
  { label: "recon_open", operation: "create_order", status: "completed", expiredDaysAgo: 30, reconciliation: "open", eligible: false },
  { label: "recon_checking", operation: "create_order", status: "failed", expiredDaysAgo: 30, reconciliation: "checking", eligible: false },
  { label: "recon_needs_manual", operation: "capture_payment", status: "completed", expiredDaysAgo: 30, reconciliation: "needs_manual", eligible: false },
  { label: "recon_resolved", operation: "capture_payment", status: "completed", expiredDaysAgo: 30, reconciliation: "resolved_succeeded", eligible: true },
  { label: "comp_requested", operation: "capture_payment", status: "completed", expiredDaysAgo: 30, compensation: "requested", eligible: false },
  { label: "comp_approved", operation: "capture_payment", status: "completed", expiredDaysAgo: 30, compensation: "approved", eligible: false },
  { label: "comp_executing", operation: "capture_payment", status: "completed", expiredDaysAgo: 30, compensation: "executing", eligible: false },
  { label: "comp_failed", operation: "capture_payment", status: "completed", expiredDaysAgo: 30, compensation: "failed", eligible: false },
  { label: "comp_executed", operation: "capture_payment", status: "completed", expiredDaysAgo: 30, compensation: "executed", eligible: true },
  { label: "comp_rejected", operation: "capture_payment", status: "completed", expiredDaysAgo: 30, compensation: "rejected", eligible: true },
  { label: "comp_related", operation: "capture_payment", status: "completed", expiredDaysAgo: 30, relatedOfCompensation: true, eligible: false },
  { label: "outbox_pending", operation: "create_order", status: "completed", expiredDaysAgo: 30, outbox: "pending", eligible: false },
  { label: "outbox_sent", operation: "create_order", status: "completed", expiredDaysAgo: 30, outbox: "sent", eligible: true },
  { label: "outbox_failed", operation: "accept_webhook", status: "completed", expiredDaysAgo: 30, outbox: "failed", eligible: true },
];

export const POLICIES = [
  { operation: null, keepRecordsDays: 2, keepEventsDays: 5, enabled: true },
  { operation: "capture_payment", keepRecordsDays: 10, keepEventsDays: 20, enabled: true },
  { operation: "issue_invoice", keepRecordsDays: 0, keepEventsDays: 0, enabled: false },
];

/** Fills an empty, migrated database: `scale` records per class, 3 events per record, holds, children, policies, rollups. */
export async function buildRetentionDataset(db: Database, opts: { scale?: number; asOf?: Date } = {}): Promise<RetentionDataset> {
  const scale = opts.scale ?? 1;
  const asOf = opts.asOf ?? new Date();
  const sql = db.sql;
  const labels = new Map<string, string>();
  const at = (daysAgo: number, jitterMs: number) => new Date(asOf.getTime() - daysAgo * DAY - jitterMs);
  const tag = `${Date.now().toString(36)}-${seq++}`;

  for (const p of POLICIES) {
    await sql.query(`INSERT INTO retention_policies (operation, keep_records_days, keep_events_days, enabled, updated_by_label) VALUES ($1, $2, $3, $4, 'test') ON CONFLICT DO NOTHING`, [
      p.operation,
      p.keepRecordsDays,
      p.keepEventsDays,
      p.enabled,
    ]);
  }
  await sql.query(`INSERT INTO legal_holds (scope, reason, set_by_label) VALUES ('tenant:held', 'litigation', 'test') ON CONFLICT DO NOTHING`);
  await sql.query(
    `INSERT INTO legal_holds (scope, reason, set_by_label, lifted_at, lifted_by_label, lift_reason) VALUES ('tenant:lifted', 'old case', 'test', now(), 'test', 'closed')`,
  );

  const compensation = async (recordId: bigint, state: string, related: bigint | null) => {
    const decided = state === "requested" ? null : 2;
    await sql.query(
      `INSERT INTO compensations (record_id, scope, operation, idempotency_key, related_record_id, kind, amount_minor, currency, provider,
                                  provider_reference, provider_idempotency_key, state, reason, requested_by, requested_by_label,
                                  decided_by, decided_by_label, decided_at)
       VALUES ($1, 'tenant:acme', 'capture_payment', 'k', $2, 'refund', 100, 'EUR', 'mockpay', 'ch_1', $3, $4, 'duplicate charge', 1, 'a@x',
               $5::bigint, CASE WHEN $5::bigint IS NULL THEN NULL ELSE 'b@x' END, CASE WHEN $5::bigint IS NULL THEN NULL ELSE now() END)`,
      [recordId, related, `comp-${tag}-${recordId}-${related ?? 0}`, state, decided],
    );
  };

  let n = 0;
  for (let copy = 0; copy < scale; copy++) {
    for (const c of RECORD_CLASSES) {
      n++;
      const expiresAt = at(c.expiredDaysAgo, n * 1000 + copy);
      const createdAt = new Date(expiresAt.getTime() - DAY);
      const [{ id }] = await sql.query<{ id: bigint }>(
        `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, created_at, updated_at, expires_at, legal_hold,
                                          provider, amount_minor, currency)
         VALUES ($1, $2, $3, $4, $5, $6, $6, $7, $8, 'mockpay', 100, 'EUR') RETURNING id`,
        [c.scope ?? `tenant:t${copy % 3}`, c.operation, `ret-${tag}-${c.label}-${copy}`, HASH, c.status, createdAt, expiresAt, c.legalHold ?? false],
      );
      labels.set(String(id), c.label);
      if (c.reconciliation) {
        await sql.query(`INSERT INTO reconciliation_items (record_id, provider, provider_request_id, state) VALUES ($1, 'mockpay', 'req', $2)`, [id, c.reconciliation]);
      }
      if (c.compensation) await compensation(id, c.compensation, null);
      if (c.relatedOfCompensation) {
        // A requested compensation of an eligible-looking record elsewhere, undoing this one as the duplicate.
        const [{ id: other }] = await sql.query<{ id: bigint }>(
          `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, created_at, updated_at, expires_at)
           VALUES ('tenant:t0', 'capture_payment', $1, $2, 'completed', $3, $3, $3) RETURNING id`,
          [`ret-${tag}-related-owner-${copy}`, HASH, new Date(asOf.getTime() - DAY)],
        );
        labels.set(String(other), "comp_related_owner");
        await compensation(other, "requested", id);
      }
      if (c.outbox) {
        await sql.query(`INSERT INTO outbox_messages (record_id, topic, payload, status) VALUES ($1, 'payment.captured', '{}'::jsonb, $2)`, [id, c.outbox]);
      }
      // Three events: 40 days, 10 days and 1 hour before asOf.
      for (const [kind, daysAgo] of [
        ["reserved", 40],
        ["completed", 10],
        ["replayed", 1 / 24],
      ] as const) {
        await sql.query(
          `INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind, payload_hash, occurred_at)
           SELECT id, scope, operation, idempotency_key, $2, payload_hash, $3 FROM idempotency_records WHERE id = $1`,
          [id, kind, at(daysAgo, n)],
        );
      }
    }
  }
  // Events without a record (a writer that never stored one), and of a record that no longer exists.
  for (const [recordId, scope] of [
    [null, "tenant:t1"],
    [987654321, "tenant:t2"],
    [null, "tenant:held"],
  ] as const) {
    await sql.query(
      `INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind, occurred_at) VALUES ($1, $2, 'create_order', 'orphan', 'conflict', $3)`,
      [recordId, scope, at(40, 7)],
    );
  }
  await db.withSession((s) => refreshRollups(s));
  // Old events the rollups have not counted yet: never purged (the overview would lose them).
  for (let i = 0; i < 3; i++) {
    await sql.query(
      `INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind, occurred_at) VALUES (NULL, 'tenant:t0', 'create_order', 'late', 'replayed', $1)`,
      [at(40, i)],
    );
  }
  await sql.query(`ANALYZE`);
  return { asOf, labels, eligibleClasses: RECORD_CLASSES.filter((c) => c.eligible).map((c) => c.label) };
}

/** The policy of a row's operation (its own, else the default), written out by hand. */
const POLICY_OF = (alias: string) => `
  (SELECT p.keep_records_days AS rec, p.keep_events_days AS ev, p.enabled FROM retention_policies p WHERE p.operation = ${alias}.operation
   UNION ALL
   SELECT p.keep_records_days, p.keep_events_days, p.enabled FROM retention_policies p
    WHERE p.operation IS NULL AND NOT EXISTS (SELECT 1 FROM retention_policies q WHERE q.operation = ${alias}.operation))`;

/** What must be eligible as of `asOf`, by a query written independently of lib/retention. */
export async function truth(db: Database, asOf: Date): Promise<{ records: string[]; events: string[] }> {
  const records = await db.sql.query<{ id: bigint }>(
    `SELECT r.id FROM idempotency_records r CROSS JOIN LATERAL ${POLICY_OF("r")} pol
      WHERE pol.enabled AND r.expires_at < $1::timestamptz - make_interval(secs => pol.rec * 86400)
        AND r.status IN ('completed', 'failed') AND NOT r.legal_hold
        AND r.scope NOT IN (SELECT scope FROM legal_holds WHERE lifted_at IS NULL)
        AND r.id NOT IN (SELECT record_id FROM reconciliation_items WHERE state IN ('open', 'checking', 'needs_manual'))
        AND r.id NOT IN (SELECT record_id FROM compensations WHERE record_id IS NOT NULL AND state IN ('requested', 'approved', 'executing', 'failed'))
        AND r.id NOT IN (SELECT related_record_id FROM compensations WHERE related_record_id IS NOT NULL AND state IN ('requested', 'approved', 'executing', 'failed'))
        AND r.id NOT IN (SELECT record_id FROM outbox_messages WHERE record_id IS NOT NULL AND status = 'pending')
      ORDER BY r.id`,
    [asOf],
  );
  const events = await db.sql.query<{ id: bigint }>(
    `SELECT e.id FROM idempotency_events e CROSS JOIN LATERAL ${POLICY_OF("e")} pol
      WHERE pol.enabled AND e.occurred_at < $1::timestamptz - make_interval(secs => pol.ev * 86400)
        AND e.id <= COALESCE((SELECT watermark FROM rollup_state WHERE name = 'events'), 0)
        AND e.id NOT IN (SELECT event_id FROM rollup_gaps)
        AND e.scope NOT IN (SELECT scope FROM legal_holds WHERE lifted_at IS NULL)
        AND NOT EXISTS (SELECT 1 FROM idempotency_records r WHERE r.id = e.record_id AND r.legal_hold)
      ORDER BY e.id`,
    [asOf],
  );
  return { records: records.map((r) => String(r.id)), events: events.map((e) => String(e.id)) };
}

/**
 * A digest of every row not in `purged` (records with their reconciliation items, outbox
 * messages and compensations; events) — except the console's own idempotency records of
 * its API calls (scope console:…), which the calls in between add.
 */
export async function keptChecksums(db: Database, purged: { records: string[]; events: string[] }) {
  const ids = (xs: string[]) => `{${xs.join(",")}}`;
  const [r] = await db.sql.query<{ n: bigint; d: string | null }>(
    `SELECT count(*)::bigint AS n, md5(string_agg(to_jsonb(r)::text, ',' ORDER BY r.id)) AS d FROM idempotency_records r WHERE r.id <> ALL ($1::bigint[]) AND r.scope NOT LIKE 'console:%'`,
    [ids(purged.records)],
  );
  const [children] = await db.sql.query<{ d: string | null }>(
    `SELECT md5(
       COALESCE((SELECT string_agg(to_jsonb(i)::text, ',' ORDER BY i.id) FROM reconciliation_items i WHERE i.record_id <> ALL ($1::bigint[])), '') || '|' ||
       COALESCE((SELECT string_agg(to_jsonb(o)::text, ',' ORDER BY o.id) FROM outbox_messages o WHERE o.record_id <> ALL ($1::bigint[])), '') || '|' ||
       -- A purged record's compensation keeps its snapshot; only record_id becomes NULL (ON DELETE SET NULL).
       COALESCE((SELECT string_agg((to_jsonb(c) || jsonb_build_object('record_id', CASE WHEN c.record_id = ANY ($1::bigint[]) THEN NULL ELSE c.record_id END))::text, ',' ORDER BY c.id)
                   FROM compensations c), '')) AS d`,
    [ids(purged.records)],
  );
  const [e] = await db.sql.query<{ n: bigint; d: string | null }>(
    `SELECT count(*)::bigint AS n, md5(string_agg(to_jsonb(e)::text, ',' ORDER BY e.id)) AS d FROM idempotency_events e WHERE e.id <> ALL ($1::bigint[]) AND e.scope NOT LIKE 'console:%'`,
    [ids(purged.events)],
  );
  return { records: Number(r.n), recordsDigest: r.d, children: children.d, events: Number(e.n), eventsDigest: e.d };
}

export async function remaining(db: Database, ids: { records: string[]; events: string[] }): Promise<{ records: number; events: number }> {
  const [r] = await db.sql.query<{ n: bigint }>(`SELECT count(*)::bigint AS n FROM idempotency_records WHERE id = ANY ($1::bigint[])`, [`{${ids.records.join(",")}}`]);
  const [e] = await db.sql.query<{ n: bigint }>(`SELECT count(*)::bigint AS n FROM idempotency_events WHERE id = ANY ($1::bigint[])`, [`{${ids.events.join(",")}}`]);
  return { records: Number(r.n), events: Number(e.n) };
}
