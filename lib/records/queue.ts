import { OPEN_RECONCILIATION_STATES } from "../kernel/vocabulary";
import { z } from "zod";
import type { SqlExecutor } from "../db/sql";
import { operationSchema, scopeSchema } from "../idempotency/schemas";
import { readSideConfig, thresholdFor, type StuckThresholds } from "./config";
import { recordColumns, type RecordSummary } from "./row";
import { cursorParam, cursorTimeSql, encodeCursor, limitParam, type KeysetPosition } from "../db/paging";
import { optional } from "../kernel/input";
import { paramList } from "../db/params";
import type { Page } from "../db/paging";

/**
 * The stuck & pending queue: what an operator has to look at.
 * - stuck: `processing` and unchanged for longer than its operation's threshold
 *   (STUCK_THRESHOLDS, default 5 minutes: lib/records/config.ts) — the worker died;
 * - pending: the outcome at the provider is unknown (a timeout), awaiting reconciliation;
 * - reconciliation: an open reconciliation item (open, checking, needs_manual) whose record
 *   is neither — the two disagree, which is worth a look too.
 * Each row carries its newest open reconciliation item (attempts, last and next check).
 *
 * Age is the time since the record last changed (updated_at), i.e. how long it has been in
 * its current state; "oldest first" is the default order. Keyset-paginated on
 * (updated_at, id). Index use: (status, updated_at) for stuck and pending — one ordered
 * range per status, merged; (state, next_check_at) and the record's primary key for the
 * third kind.
 */

export const QUEUE_KINDS = ["stuck", "pending", "reconciliation"] as const;
export type QueueKind = (typeof QUEUE_KINDS)[number];

export const queueQuerySchema = z
  .object({
    kind: optional(z.enum([...QUEUE_KINDS, "all"])),
    operation: optional(operationSchema),
    scope: optional(scopeSchema),
    /** The record's status: processing (only stuck ones are listed) or pending. */
    status: optional(z.enum(["processing", "pending"])),
    provider: optional(z.string().trim().min(1).max(100)),
    /** age_desc: oldest first (default); age_asc: newest first. */
    sort: optional(z.enum(["age_desc", "age_asc"])),
    limit: limitParam,
    cursor: optional(cursorParam),
  })
  .strict();

export type QueueQuery = z.output<typeof queueQuerySchema>;
export type QueueInput = Partial<Omit<QueueQuery, "limit">> & { limit?: number };

export interface ReconciliationSummary {
  id: bigint;
  state: string;
  attempts: number;
  lastCheckedAt: Date | null;
  nextCheckAt: Date | null;
  lastError: string | null;
  createdAt: Date;
}

export interface QueueItem extends RecordSummary {
  kind: QueueKind;
  /** Seconds since updated_at, at `asOf`. */
  ageSeconds: number;
  /** The stuck threshold that applied (stuck rows only). */
  thresholdSeconds: number | null;
  reconciliation: ReconciliationSummary | null;
}

export interface QueueSummary {
  stuck: number;
  pending: number;
  /** Open reconciliation items (any record state). */
  openReconciliation: number;
  /** Records neither processing nor pending that have an open item: the "reconciliation" kind. */
  reconciliationOther: number;
  oldestPendingSince: Date | null;
  oldestStuckSince: Date | null;
}

export interface QueueResult extends Page<QueueItem> {
  asOf: Date;
  thresholds: StuckThresholds;
  summary: QueueSummary;
}

/** The stuck condition: updated_at older than now − threshold(operation). */
function stuckCondition(p: ReturnType<typeof paramList>, t: StuckThresholds, now: Date): string {
  const nowP = p.add(now);
  const ops = Object.keys(t.byOperation);
  const minSeconds = Math.min(t.defaultSeconds, ...Object.values(t.byOperation));
  // The first term is a plain index range; the CASE refines it per operation.
  const perOp = ops.length
    ? `AND r.updated_at < ${nowP}::timestamptz - make_interval(secs => CASE r.operation ${ops
        .map((op) => `WHEN ${p.add(op)} THEN ${p.add(t.byOperation[op])}::float8`)
        .join(" ")} ELSE ${p.add(t.defaultSeconds)}::float8 END)`
    : "";
  return `r.status = 'processing' AND r.updated_at < ${nowP}::timestamptz - make_interval(secs => ${p.add(minSeconds)}::float8) ${perOp}`;
}

export function queueSql(input: QueueInput, thresholds: StuckThresholds, now: Date): { text: string; values: unknown[] } {
  const p = paramList();
  const kinds: QueueKind[] =
    input.kind && input.kind !== "all"
      ? [input.kind]
      : input.status === "processing"
        ? ["stuck"]
        : input.status === "pending"
          ? ["pending"]
          : [...QUEUE_KINDS];
  const asc = (input.sort ?? "age_desc") === "age_desc"; // oldest first = updated_at ascending
  const dir = asc ? "ASC" : "DESC";
  const cmp = asc ? ">" : "<";
  const filters: string[] = [];
  if (input.operation) filters.push(`r.operation = ${p.add(input.operation)}`);
  if (input.scope) filters.push(`r.scope = ${p.add(input.scope)}`);
  if (input.provider) filters.push(`r.provider = ${p.add(input.provider)}`);
  if (input.cursor) filters.push(`(r.updated_at, r.id) ${cmp} (${p.add(input.cursor.t)}::timestamptz, ${p.add(input.cursor.id)}::bigint)`);
  const take = p.add((input.limit ?? 50) + 1);
  const order = `ORDER BY r.updated_at ${dir}, r.id ${dir}`;
  const states = p.add([...OPEN_RECONCILIATION_STATES]);

  const branches: string[] = [];
  for (const kind of kinds) {
    if (input.status === "processing" && kind !== "stuck") continue;
    if (input.status === "pending" && kind !== "pending") continue;
    const where =
      kind === "stuck"
        ? stuckCondition(p, thresholds, now)
        : kind === "pending"
          ? `r.status = 'pending'`
          : `r.status NOT IN ('processing', 'pending') AND r.id IN (SELECT i.record_id FROM reconciliation_items i WHERE i.state = ANY (${states}::text[]))`;
    branches.push(
      `(SELECT r.id, r.updated_at, '${kind}'::text AS kind FROM idempotency_records r
         WHERE ${[where, ...filters].join(" AND ")} ${order} LIMIT ${take})`,
    );
  }
  // The kind and the status exclude each other (kind=reconciliation&status=pending): nothing to list, and
  // no statement whose parameters go unused (PostgreSQL cannot type those: 42P18).
  if (branches.length === 0) return { text: "SELECT NULL WHERE FALSE", values: [] };
  const nowP = p.add(now);
  return {
    text: `WITH q AS (${branches.join(" UNION ALL ")})
      SELECT ${recordColumns("r")}, q.kind, ${cursorTimeSql("r.updated_at")} AS "cursorTime",
             extract(epoch FROM ${nowP}::timestamptz - r.updated_at)::float8 AS "ageSeconds",
             ri.id AS ri_id, ri.state AS ri_state, ri.attempts AS ri_attempts, ri.last_checked_at AS ri_last_checked_at,
             ri.next_check_at AS ri_next_check_at, ri.last_error AS ri_last_error, ri.created_at AS ri_created_at
        FROM q JOIN idempotency_records r ON r.id = q.id
        LEFT JOIN LATERAL (
          SELECT * FROM reconciliation_items i WHERE i.record_id = r.id AND i.state = ANY (${states}::text[])
           ORDER BY i.created_at DESC, i.id DESC LIMIT 1
        ) ri ON TRUE
       ${order} LIMIT ${take}`,
    values: p.values,
  };
}

type QueueRow = RecordSummary & {
  kind: QueueKind;
  cursorTime: string;
  ageSeconds: number;
  ri_id: bigint | null;
  ri_state: string | null;
  ri_attempts: number | null;
  ri_last_checked_at: Date | null;
  ri_next_check_at: Date | null;
  ri_last_error: string | null;
  ri_created_at: Date | null;
};

export async function stuckAndPending(
  sql: SqlExecutor,
  input: QueueInput,
  opts: { now?: Date; thresholds?: StuckThresholds } = {},
): Promise<QueueResult> {
  const now = opts.now ?? new Date();
  const thresholds = opts.thresholds ?? readSideConfig().stuck;
  const limit = input.limit ?? 50;
  const { text, values } = queueSql(input, thresholds, now);
  const [rows, summary] = await Promise.all([sql.query<QueueRow>(text, values), queueSummary(sql, thresholds, now)]);
  const more = rows.length > limit;
  const page = more ? rows.slice(0, limit) : rows;
  const items: QueueItem[] = page.map((row) => {
    const { cursorTime: _c, ri_id, ri_state, ri_attempts, ri_last_checked_at, ri_next_check_at, ri_last_error, ri_created_at, ...rec } = row;
    return {
      ...rec,
      ageSeconds: Math.max(0, Math.floor(row.ageSeconds)),
      thresholdSeconds: row.kind === "stuck" ? thresholdFor(thresholds, row.operation) : null,
      reconciliation:
        ri_id === null
          ? null
          : {
              id: ri_id,
              state: ri_state!,
              attempts: ri_attempts!,
              lastCheckedAt: ri_last_checked_at,
              nextCheckAt: ri_next_check_at,
              lastError: ri_last_error,
              createdAt: ri_created_at!,
            },
    };
  });
  const last: KeysetPosition | null = more ? { t: rows[limit - 1].cursorTime, id: rows[limit - 1].id } : null;
  return { items, nextCursor: last ? encodeCursor(last) : null, limit, asOf: now, thresholds, summary };
}

/** Queue-wide counts (no filters), each an index range. */
export async function queueSummary(sql: SqlExecutor, thresholds: StuckThresholds, now: Date): Promise<QueueSummary> {
  const p = paramList();
  const stuck = stuckCondition(p, thresholds, now);
  const states = p.add([...OPEN_RECONCILIATION_STATES]);
  const [row] = await sql.query<{
    stuck: bigint;
    pending: bigint;
    open: bigint;
    other: bigint;
    oldestPending: Date | null;
    oldestStuck: Date | null;
  }>(
    `SELECT (SELECT count(*) FROM idempotency_records r WHERE ${stuck})::bigint AS stuck,
            (SELECT count(*) FROM idempotency_records r WHERE r.status = 'pending')::bigint AS pending,
            (SELECT count(*) FROM reconciliation_items i WHERE i.state = ANY (${states}::text[]))::bigint AS open,
            (SELECT count(DISTINCT i.record_id) FROM reconciliation_items i JOIN idempotency_records r ON r.id = i.record_id
              WHERE i.state = ANY (${states}::text[]) AND r.status NOT IN ('processing', 'pending'))::bigint AS other,
            (SELECT min(r.updated_at) FROM idempotency_records r WHERE r.status = 'pending') AS "oldestPending",
            (SELECT min(r.updated_at) FROM idempotency_records r WHERE ${stuck}) AS "oldestStuck"`,
    p.values,
  );
  return {
    stuck: Number(row.stuck),
    pending: Number(row.pending),
    openReconciliation: Number(row.open),
    reconciliationOther: Number(row.other),
    oldestPendingSince: row.oldestPending,
    oldestStuckSince: row.oldestStuck,
  };
}
