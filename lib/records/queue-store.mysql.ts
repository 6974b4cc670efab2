import { MYSQL } from "../db/dialect";
import { paramList, type Params, type Statement } from "../db/params";
import type { SqlExecutor } from "../db/sql";
import { OPEN_RECONCILIATION_STATES } from "../kernel/vocabulary";
import type { StuckThresholds } from "./config";
import type { QueueInput } from "./queue";
import type { QueueCountsRow, QueueRow, QueueStore } from "./queue-store";
import { recordColumns } from "./row";
import { withBooleanHold } from "./rows.mysql";
import { QUEUE_KINDS, type QueueKind } from "./vocabulary";

/**
 * The queue on MySQL/MariaDB (ADR 0012). Index use as on PostgreSQL: (status, updated_at) for
 * stuck and pending — one ordered range per status (InnoDB appends the id, so the range is in
 * (updated_at, id) order), merged; for the reconciliation kind the open items, a status
 * index and the primary key (otherOpenRecords). The counts are index ranges, and the
 * reconciliation kind's ids counted. MariaDB has no LATERAL: a row's newest open reconciliation
 * item is a correlated subquery on (record_id), run for the page's rows only. The stuck cut-offs (now − threshold) are computed here and bound as times.
 */
export function mysqlQueueStore(ex: SqlExecutor): QueueStore {
  return {
    async page(input, thresholds, now) {
      const st = mysqlQueueSql(input, thresholds, now);
      if (!st) return [];
      const rows = await ex.query<QueueRow>(st.text, st.values);
      return rows.map(withBooleanHold);
    },
    async counts(thresholds, now) {
      const { text, values } = queueCountsSql(thresholds, now);
      const [row] = await ex.query<QueueCountsRow>(text, values);
      return row;
    },
  };
}

const before = (now: Date, seconds: number) => new Date(now.getTime() - seconds * 1000);

/** The stuck condition: updated_at older than now − threshold(operation); the first term is a plain index range. */
function stuckCondition(p: Params, t: StuckThresholds, now: Date): string {
  const ops = Object.keys(t.byOperation);
  const minSeconds = Math.min(t.defaultSeconds, ...Object.values(t.byOperation));
  const range = `r.status = 'processing' AND r.updated_at < ${p.time(before(now, minSeconds))}`;
  if (!ops.length) return range;
  const perOp = `CASE r.operation ${ops.map((op) => `WHEN ${p.add(op)} THEN ${p.time(before(now, t.byOperation[op]))}`).join(" ")} ELSE ${p.time(
    before(now, t.defaultSeconds),
  )} END`;
  return `${range} AND r.updated_at < ${perOp}`;
}

/** The ids (record_id) of the records with an open item that are not processing or pending: the open items less the processing and pending ids. */
const otherOpenRecordIds = (openStates: string) => `SELECT DISTINCT i.record_id FROM reconciliation_items i
             LEFT JOIN (SELECT u.id FROM idempotency_records u WHERE u.status IN ('processing', 'pending') LIMIT 18446744073709551615) u
               ON u.id = i.record_id
            WHERE i.state IN (${openStates}) AND u.id IS NULL`;

/**
 * The records (as `r`) with an open reconciliation item that are neither processing nor pending,
 * from the items' side as on PostgreSQL: the open items' record ids less the processing and
 * pending records' (the unsettled index alone, materialized: the LIMIT keeps MariaDB from merging
 * it into a lookup per item), then a primary-key lookup of what is left. O(open items + unsettled
 * records), where the records' side in (updated_at, id) order walked every settled record.
 */
function otherOpenRecords(openStates: string): string {
  return `(${otherOpenRecordIds(openStates)}) o STRAIGHT_JOIN idempotency_records r ON r.id = o.record_id`;
}

/** The page statement (exported so the EXPLAIN test checks exactly this); null when the kind and the status exclude each other. */
export function mysqlQueueSql(input: QueueInput, thresholds: StuckThresholds, now: Date): Statement | null {
  const asked: QueueKind[] =
    input.kind && input.kind !== "all" ? [input.kind] : input.status === "processing" ? ["stuck"] : input.status === "pending" ? ["pending"] : [...QUEUE_KINDS];
  const kinds = asked.filter((kind) => !(input.status === "processing" && kind !== "stuck") && !(input.status === "pending" && kind !== "pending"));
  if (kinds.length === 0) return null;
  const p = paramList(MYSQL);
  const asc = (input.sort ?? "age_desc") === "age_desc"; // oldest first = updated_at ascending
  const dir = asc ? "ASC" : "DESC";
  const cmp = asc ? ">" : "<";
  const order = `ORDER BY r.updated_at ${dir}, r.id ${dir}`;
  const filters = (): string[] => {
    const out: string[] = [];
    if (input.operation) out.push(`r.operation = ${p.add(input.operation)}`);
    if (input.scope) out.push(`r.scope = ${p.add(input.scope)}`);
    if (input.provider) out.push(`r.provider = ${p.add(input.provider)}`);
    if (input.cursor) {
      const t = () => MYSQL.time(p.add(input.cursor!.t));
      out.push(`r.updated_at ${cmp}= ${t()} AND (r.updated_at ${cmp} ${t()} OR r.id ${cmp} ${p.bigint(input.cursor.id)})`);
    }
    return out;
  };
  const openStates = () => p.list(OPEN_RECONCILIATION_STATES);
  const take = () => p.add((input.limit ?? 50) + 1);

  // Placeholders in the order of the text: the select list's, the branches', then the outer limit.
  const age = `TIMESTAMPDIFF(MICROSECOND, r.updated_at, ${p.time(now)}) / 1e6 AS "ageSeconds"`;
  const newestItem = `(SELECT i.id FROM reconciliation_items i WHERE i.record_id = q.id AND i.state IN (${openStates()})
                        ORDER BY i.created_at DESC, i.id DESC LIMIT 1)`;
  const branches = kinds.map((kind) => {
    if (kind === "reconciliation") {
      return `(SELECT r.id, 'reconciliation' AS kind FROM ${otherOpenRecords(openStates())}
                WHERE ${["r.status NOT IN ('processing', 'pending')", ...filters()].join(" AND ")} ${order} LIMIT ${take()})`;
    }
    const where = kind === "stuck" ? stuckCondition(p, thresholds, now) : `r.status = 'pending'`;
    return `(SELECT r.id, '${kind}' AS kind FROM idempotency_records r
              WHERE ${[where, ...filters()].join(" AND ")} ${order} LIMIT ${take()})`;
  });
  return {
    text: `SELECT ${recordColumns("r")}, q.kind, ${MYSQL.cursorTime("r.updated_at")} AS "cursorTime", ${age},
                  ri.id AS ri_id, ri.state AS ri_state, ri.attempts AS ri_attempts, ri.last_checked_at AS ri_last_checked_at,
                  ri.next_check_at AS ri_next_check_at, ri.last_error AS ri_last_error, ri.created_at AS ri_created_at
             FROM (SELECT q.id, q.kind, ${newestItem} AS item_id FROM (${branches.join(" UNION ALL ")}) q) q
             JOIN idempotency_records r ON r.id = q.id
             LEFT JOIN reconciliation_items ri ON ri.id = q.item_id
            ${order} LIMIT ${take()}`,
    values: p.values,
  };
}

/**
 * The counts statement. `other` as on PostgreSQL: the ids the reconciliation kind lists, the open
 * items less the processing and pending records' ids (a status index alone; InnoDB's carry the
 * primary key), materialized once — not a record lookup per open item (as an EXISTS, MariaDB
 * materialized the items and looked up each one's record: 328 ms at 1M records with a 128 MB
 * buffer pool).
 */
export function queueCountsSql(thresholds: StuckThresholds, now: Date): Statement {
  const p = paramList(MYSQL);
  const stuck = () => stuckCondition(p, thresholds, now);
  const open = () => p.list(OPEN_RECONCILIATION_STATES);
  return {
    text: `SELECT (SELECT count(*) FROM idempotency_records r WHERE ${stuck()}) AS stuck,
            (SELECT count(*) FROM idempotency_records r WHERE r.status = 'pending') AS pending,
            (SELECT count(*) FROM reconciliation_items i WHERE i.state IN (${open()})) AS open,
            (SELECT count(*) FROM (${otherOpenRecordIds(open())}) o) AS other,
            (SELECT min(r.updated_at) FROM idempotency_records r WHERE r.status = 'pending') AS "oldestPending",
            (SELECT min(r.updated_at) FROM idempotency_records r WHERE ${stuck()}) AS "oldestStuck"`,
    values: p.values,
  };
}
