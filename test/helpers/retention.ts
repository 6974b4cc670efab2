import { createHash } from "node:crypto";
import { refreshRollups } from "@/lib/stats/rollups";
import type { Database } from "@/lib/db/client";
import { byDialect, MYSQL as MYSQL_DIALECT } from "@/lib/db/dialect";
import { paramList } from "@/lib/db/params";
import { execute } from "@/lib/db/sql";

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

/** The statement in the database's dialect. */
const pick = (db: Pick<Database, "dialect">, postgres: string, mysql: string) => byDialect(db, { postgres, mysql });

/** Inserts one row and answers its id (RETURNING id on PostgreSQL, the insert id on MySQL). */
async function insertId(db: Database, postgres: string, mysql: string, params: unknown[], mysqlParams = params): Promise<bigint> {
  if (db.dialect.name === "mysql") {
    const { insertId: id } = await execute(db.sql, mysql, mysqlParams);
    return id!;
  }
  const [{ id }] = await db.sql.query<{ id: bigint }>(postgres, params);
  return id;
}

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
    await sql.query(
      pick(
        db,
        `INSERT INTO retention_policies (operation, keep_records_days, keep_events_days, enabled, updated_by_label) VALUES ($1, $2, $3, $4, 'test') ON CONFLICT DO NOTHING`,
        `INSERT IGNORE INTO retention_policies (operation, keep_records_days, keep_events_days, enabled, updated_by_label) VALUES (?, ?, ?, ?, 'test')`,
      ),
      [p.operation, p.keepRecordsDays, p.keepEventsDays, p.enabled],
    );
  }
  await sql.query(
    pick(
      db,
      `INSERT INTO legal_holds (scope, reason, set_by_label) VALUES ('tenant:held', 'litigation', 'test') ON CONFLICT DO NOTHING`,
      `INSERT IGNORE INTO legal_holds (scope, reason, set_by_label) VALUES ('tenant:held', 'litigation', 'test')`,
    ),
  );
  await sql.query(
    pick(
      db,
      `INSERT INTO legal_holds (scope, reason, set_by_label, lifted_at, lifted_by_label, lift_reason) VALUES ('tenant:lifted', 'old case', 'test', now(), 'test', 'closed')`,
      `INSERT INTO legal_holds (scope, reason, set_by_label, lifted_at, lifted_by_label, lift_reason) VALUES ('tenant:lifted', 'old case', 'test', UTC_TIMESTAMP(6), 'test', 'closed')`,
    ),
  );

  const compensation = async (recordId: bigint, state: string, related: bigint | null) => {
    const decided = state === "requested" ? null : 2;
    const providerKey = `comp-${tag}-${recordId}-${related ?? 0}`;
    if (db.dialect.name === "mysql") {
      await sql.query(
        `INSERT INTO compensations (record_id, scope, operation, idempotency_key, related_record_id, kind, amount_minor, currency, provider,
                                    provider_reference, provider_idempotency_key, state, reason, requested_by, requested_by_label,
                                    decided_by, decided_by_label, decided_at)
         VALUES (?, 'tenant:acme', 'capture_payment', 'k', ?, 'refund', 100, 'EUR', 'mockpay', 'ch_1', ?, ?, 'duplicate charge', 1, 'a@x',
                 ?, CASE WHEN ? IS NULL THEN NULL ELSE 'b@x' END, CASE WHEN ? IS NULL THEN NULL ELSE UTC_TIMESTAMP(6) END)`,
        [recordId, related, providerKey, state, decided, decided, decided],
      );
      return;
    }
    await sql.query(
      `INSERT INTO compensations (record_id, scope, operation, idempotency_key, related_record_id, kind, amount_minor, currency, provider,
                                  provider_reference, provider_idempotency_key, state, reason, requested_by, requested_by_label,
                                  decided_by, decided_by_label, decided_at)
       VALUES ($1, 'tenant:acme', 'capture_payment', 'k', $2, 'refund', 100, 'EUR', 'mockpay', 'ch_1', $3, $4, 'duplicate charge', 1, 'a@x',
               $5::bigint, CASE WHEN $5::bigint IS NULL THEN NULL ELSE 'b@x' END, CASE WHEN $5::bigint IS NULL THEN NULL ELSE now() END)`,
      [recordId, related, providerKey, state, decided],
    );
  };

  let n = 0;
  for (let copy = 0; copy < scale; copy++) {
    for (const c of RECORD_CLASSES) {
      n++;
      const expiresAt = at(c.expiredDaysAgo, n * 1000 + copy);
      const createdAt = new Date(expiresAt.getTime() - DAY);
      const id = await insertId(
        db,
        `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, created_at, updated_at, expires_at, legal_hold,
                                          provider, amount_minor, currency)
         VALUES ($1, $2, $3, $4, $5, $6, $6, $7, $8, 'mockpay', 100, 'EUR') RETURNING id`,
        `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, created_at, updated_at, expires_at, legal_hold,
                                          provider, amount_minor, currency)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'mockpay', 100, 'EUR')`,
        [c.scope ?? `tenant:t${copy % 3}`, c.operation, `ret-${tag}-${c.label}-${copy}`, HASH, c.status, createdAt, expiresAt, c.legalHold ?? false],
        [c.scope ?? `tenant:t${copy % 3}`, c.operation, `ret-${tag}-${c.label}-${copy}`, HASH, c.status, createdAt, createdAt, expiresAt, c.legalHold ?? false],
      );
      labels.set(String(id), c.label);
      if (c.reconciliation) {
        await sql.query(
          pick(
            db,
            `INSERT INTO reconciliation_items (record_id, provider, provider_request_id, state) VALUES ($1, 'mockpay', 'req', $2)`,
            `INSERT INTO reconciliation_items (record_id, provider, provider_request_id, state) VALUES (?, 'mockpay', 'req', ?)`,
          ),
          [id, c.reconciliation],
        );
      }
      if (c.compensation) await compensation(id, c.compensation, null);
      if (c.relatedOfCompensation) {
        // A requested compensation of an eligible-looking record elsewhere, undoing this one as the duplicate.
        const ownerAt = new Date(asOf.getTime() - DAY);
        const other = await insertId(
          db,
          `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, created_at, updated_at, expires_at)
           VALUES ('tenant:t0', 'capture_payment', $1, $2, 'completed', $3, $3, $3) RETURNING id`,
          `INSERT INTO idempotency_records (scope, operation, idempotency_key, payload_hash, status, created_at, updated_at, expires_at)
           VALUES ('tenant:t0', 'capture_payment', ?, ?, 'completed', ?, ?, ?)`,
          [`ret-${tag}-related-owner-${copy}`, HASH, ownerAt],
          [`ret-${tag}-related-owner-${copy}`, HASH, ownerAt, ownerAt, ownerAt],
        );
        labels.set(String(other), "comp_related_owner");
        await compensation(other, "requested", id);
      }
      if (c.outbox) {
        await sql.query(
          pick(
            db,
            `INSERT INTO outbox_messages (record_id, topic, payload, status) VALUES ($1, 'payment.captured', '{}'::jsonb, $2)`,
            `INSERT INTO outbox_messages (record_id, topic, payload, status) VALUES (?, 'payment.captured', '{}', ?)`,
          ),
          [id, c.outbox],
        );
      }
      // Three events: 40 days, 10 days and 1 hour before asOf.
      for (const [kind, daysAgo] of [
        ["reserved", 40],
        ["completed", 10],
        ["replayed", 1 / 24],
      ] as const) {
        if (db.dialect.name === "mysql") {
          await sql.query(
            `INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind, payload_hash, occurred_at)
             SELECT id, scope, operation, idempotency_key, ?, payload_hash, ? FROM idempotency_records WHERE id = ?`,
            [kind, at(daysAgo, n), id],
          );
          continue;
        }
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
      pick(
        db,
        `INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind, occurred_at) VALUES ($1, $2, 'create_order', 'orphan', 'conflict', $3)`,
        `INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind, occurred_at) VALUES (?, ?, 'create_order', 'orphan', 'conflict', ?)`,
      ),
      [recordId, scope, at(40, 7)],
    );
  }
  await db.withSession((s) => refreshRollups(s));
  // Old events the rollups have not counted yet: never purged (the overview would lose them).
  for (let i = 0; i < 3; i++) {
    await sql.query(
      pick(
        db,
        `INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind, occurred_at) VALUES (NULL, 'tenant:t0', 'create_order', 'late', 'replayed', $1)`,
        `INSERT INTO idempotency_events (record_id, scope, operation, idempotency_key, kind, occurred_at) VALUES (NULL, 'tenant:t0', 'create_order', 'late', 'replayed', ?)`,
      ),
      [at(40, i)],
    );
  }
  await sql.query(
    pick(
      db,
      `ANALYZE`,
      `ANALYZE TABLE idempotency_records, idempotency_events, reconciliation_items, outbox_messages, compensations, legal_holds, retention_policies`,
    ),
  );
  return { asOf, labels, eligibleClasses: RECORD_CLASSES.filter((c) => c.eligible).map((c) => c.label) };
}

/** The policy of a row's operation (its own, else the default), written out by hand. */
const POLICY_OF = (alias: string) => `
  (SELECT p.keep_records_days AS rec, p.keep_events_days AS ev, p.enabled FROM retention_policies p WHERE p.operation = ${alias}.operation
   UNION ALL
   SELECT p.keep_records_days, p.keep_events_days, p.enabled FROM retention_policies p
    WHERE p.operation IS NULL AND NOT EXISTS (SELECT 1 FROM retention_policies q WHERE q.operation = ${alias}.operation))`;

/** The policy of a row's operation on MySQL (no LATERAL in MariaDB): its own policy's id, else the default's. */
const MYSQL_POLICY_ID_OF = (alias: string) => `COALESCE(
    (SELECT p.id FROM retention_policies p WHERE p.operation = ${alias}.operation),
    (SELECT p.id FROM retention_policies p WHERE p.operation IS NULL AND NOT EXISTS (SELECT 1 FROM retention_policies q WHERE q.operation = ${alias}.operation)))`;

/** What must be eligible as of `asOf`, by a query written independently of lib/retention. */
export async function truth(db: Database, asOf: Date): Promise<{ records: string[]; events: string[] }> {
  if (db.dialect.name === "mysql") return mysqlTruth(db, asOf);
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

async function mysqlTruth(db: Database, asOf: Date): Promise<{ records: string[]; events: string[] }> {
  const records = await db.sql.query<{ id: bigint }>(
    `SELECT r.id FROM idempotency_records r JOIN retention_policies pol ON pol.id = ${MYSQL_POLICY_ID_OF("r")}
      WHERE pol.enabled AND r.expires_at < CAST(? AS DATETIME(6)) - INTERVAL (pol.keep_records_days * 86400) SECOND
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
    `SELECT e.id FROM idempotency_events e JOIN retention_policies pol ON pol.id = ${MYSQL_POLICY_ID_OF("e")}
      WHERE pol.enabled AND e.occurred_at < CAST(? AS DATETIME(6)) - INTERVAL (pol.keep_events_days * 86400) SECOND
        AND e.id <= COALESCE((SELECT watermark FROM rollup_state WHERE name = 'events'), 0)
        AND e.id NOT IN (SELECT event_id FROM rollup_gaps)
        AND e.scope NOT IN (SELECT scope FROM legal_holds WHERE lifted_at IS NULL)
        AND NOT EXISTS (SELECT 1 FROM idempotency_records r WHERE r.id = e.record_id AND r.legal_hold)
      ORDER BY e.id`,
    [asOf],
  );
  return { records: records.map((r) => String(r.id)), events: events.map((e) => String(e.id)) };
}

/** MySQL: `id NOT IN (…)` of a list that may be empty (then no condition). */
function mysqlNotIn(column: string, xs: string[], values: unknown[]): string {
  if (!xs.length) return "TRUE";
  const p = paramList(MYSQL_DIALECT);
  const text = `${column} NOT IN (${p.list(xs)})`;
  values.push(...p.values);
  return text;
}

/** A digest of rows read into the process (MySQL has no to_jsonb of a row): their JSON, in order. */
const digestOf = (rows: unknown[]) =>
  rows.length
    ? createHash("md5")
        .update(JSON.stringify(rows, (_k, v) => (typeof v === "bigint" ? v.toString() : v)))
        .digest("hex")
    : null;

async function mysqlKeptChecksums(db: Database, purged: { records: string[]; events: string[] }) {
  const rv: unknown[] = [];
  const records = await db.sql.query(
    `SELECT * FROM idempotency_records r WHERE ${mysqlNotIn("r.id", purged.records, rv)} AND r.scope NOT LIKE 'console:%' ORDER BY r.id`,
    rv,
  );
  const iv: unknown[] = [];
  const items = await db.sql.query(`SELECT * FROM reconciliation_items i WHERE ${mysqlNotIn("i.record_id", purged.records, iv)} ORDER BY i.id`, iv);
  const ov: unknown[] = [];
  const outbox = await db.sql.query(`SELECT * FROM outbox_messages o WHERE ${mysqlNotIn("o.record_id", purged.records, ov)} ORDER BY o.id`, ov);
  // A purged record's compensation keeps its snapshot; only record_id becomes NULL (ON DELETE SET NULL).
  const gone = new Set(purged.records);
  const compensations = (await db.sql.query<{ record_id: bigint | null }>(`SELECT * FROM compensations c ORDER BY c.id`)).map((c) => ({
    ...c,
    record_id: c.record_id !== null && gone.has(String(c.record_id)) ? null : c.record_id,
  }));
  const ev: unknown[] = [];
  const events = await db.sql.query(
    `SELECT * FROM idempotency_events e WHERE ${mysqlNotIn("e.id", purged.events, ev)} AND e.scope NOT LIKE 'console:%' ORDER BY e.id`,
    ev,
  );
  return {
    records: records.length,
    recordsDigest: digestOf(records),
    children: digestOf([items, outbox, compensations]),
    events: events.length,
    eventsDigest: digestOf(events),
  };
}

/**
 * A digest of every row not in `purged` (records with their reconciliation items, outbox
 * messages and compensations; events) — except the console's own idempotency records of
 * its API calls (scope console:…), which the calls in between add.
 */
export async function keptChecksums(db: Database, purged: { records: string[]; events: string[] }) {
  if (db.dialect.name === "mysql") return mysqlKeptChecksums(db, purged);
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
  if (db.dialect.name === "mysql") {
    const r = paramList(db.dialect);
    const e = paramList(db.dialect);
    const [rn] = await db.sql.query<{ n: bigint }>(`SELECT count(*) AS n FROM idempotency_records WHERE id IN (${r.list(ids.records)})`, r.values);
    const [en] = await db.sql.query<{ n: bigint }>(`SELECT count(*) AS n FROM idempotency_events WHERE id IN (${e.list(ids.events)})`, e.values);
    return { records: Number(rn.n), events: Number(en.n) };
  }
  const [r] = await db.sql.query<{ n: bigint }>(`SELECT count(*)::bigint AS n FROM idempotency_records WHERE id = ANY ($1::bigint[])`, [
    `{${ids.records.join(",")}}`,
  ]);
  const [e] = await db.sql.query<{ n: bigint }>(`SELECT count(*)::bigint AS n FROM idempotency_events WHERE id = ANY ($1::bigint[])`, [
    `{${ids.events.join(",")}}`,
  ]);
  return { records: Number(r.n), events: Number(e.n) };
}
