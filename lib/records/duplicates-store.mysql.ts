import { MYSQL } from "../db/dialect";
import { paramList, type Statement } from "../db/params";
import type { SqlExecutor } from "../db/sql";
import type { DuplicatesInput } from "./duplicates";
import type { DuplicatePairRow, DuplicatesStore } from "./duplicates-store";
import { recordColumns, type RecordSummary } from "./row";
import { withBooleanHold } from "./rows.mysql";
import { DEFAULT_WINDOW_SECONDS, DUPLICATE_BASES, MAX_PAIRS, type DuplicateBasis } from "./vocabulary";

/**
 * Duplicates on MySQL/MariaDB (ADR 0012), with PostgreSQL's plan: the records created in the
 * range come from (created_at, id) — or (scope, created_at, id) with a scope filter; each one's
 * partners are a probe of idempotency_records_duplicate_idx (scope, operation, payload_hash,
 * created_at) or of the resource_id index, bounded by [from, to + window). The lifetime range
 * is the two ends of (created_at, id) or (scope, created_at, id); a record's partners, two
 * index probes. The window's ends are computed here and bound as times where they are constant;
 * per pair they are `created_at + INTERVAL n MICROSECOND`.
 */
export function mysqlDuplicatesStore(ex: SqlExecutor): DuplicatesStore {
  return {
    async createdRange(scope) {
      const [row] = await ex.query<{ oldest: Date | null; newest: Date | null }>(
        `SELECT min(created_at) AS oldest, max(created_at) AS newest FROM idempotency_records${scope ? " WHERE scope = ?" : ""}`,
        scope ? [scope] : [],
      );
      return row;
    },

    async pairs(input) {
      const { text, values } = mysqlDuplicatePairsSql(input);
      const rows = await ex.query<DuplicatePairRow>(text, values);
      return rows.map((r) => ({ ...r, secondsApart: Number(r.secondsApart) }));
    },

    async records(ids) {
      if (ids.length === 0) return [];
      const p = paramList(MYSQL);
      const rows = await ex.query<RecordSummary>(`SELECT ${recordColumns("r")} FROM idempotency_records r WHERE r.id IN (${p.list(ids)})`, p.values);
      return rows.map(withBooleanHold);
    },

    async partners(record, windowSeconds) {
      const p = paramList(MYSQL);
      const at = record.createdAt.getTime();
      const near = () =>
        `b.idempotency_key <> ${p.add(record.idempotencyKey)}
           AND b.created_at BETWEEN ${p.time(new Date(at - windowSeconds * 1000))} AND ${p.time(new Date(at + windowSeconds * 1000))}`;
      const hasResource = record.resourceId !== null && record.amountMinor !== null && record.currency !== null;
      const byHash = `SELECT ${recordColumns("b")}, 'payload_hash' AS basis FROM idempotency_records b
          WHERE b.scope = ${p.add(record.scope)} AND b.operation = ${p.add(record.operation)} AND b.payload_hash = ${p.add(record.payloadHash)}
            AND ${near()}`;
      const byResource = hasResource
        ? `SELECT ${recordColumns("b")}, 'amount_resource' FROM idempotency_records b
            WHERE b.resource_id = ${p.add(record.resourceId)} AND b.amount_minor = ${p.add(record.amountMinor)} AND b.currency = ${p.add(record.currency)}
              AND b.scope = ${p.add(record.scope)} AND b.operation = ${p.add(record.operation)} AND ${near()}`
        : null;
      const rows = await ex.query<RecordSummary & { basis: DuplicateBasis }>(byResource ? `${byHash} UNION ALL ${byResource}` : byHash, p.values);
      return rows.map(withBooleanHold);
    },
  };
}

const PAIR_ON: Record<DuplicateBasis, string> = {
  payload_hash: `b.scope = a.scope AND b.operation = a.operation AND b.payload_hash = a.payload_hash`,
  amount_resource: `b.resource_id = a.resource_id AND b.amount_minor = a.amount_minor AND b.currency = a.currency
                    AND b.scope = a.scope AND b.operation = a.operation`,
};
const ANCHOR_WHERE: Record<DuplicateBasis, string> = {
  payload_hash: "TRUE",
  amount_resource: "a.resource_id IS NOT NULL AND a.amount_minor IS NOT NULL AND a.currency IS NOT NULL",
};

/** The pair-finding SQL on MySQL (exported for the EXPLAIN test). */
export function mysqlDuplicatePairsSql(input: DuplicatesInput & { from: Date; to: Date }): Statement {
  const p = paramList(MYSQL);
  const windowSeconds = input.windowSeconds ?? DEFAULT_WINDOW_SECONDS;
  const windowMicros = Math.round(windowSeconds * 1_000_000);
  const branches = (input.bases ?? DUPLICATE_BASES).map((basis) => {
    // Placeholders in the order of the text, each branch its own.
    const on = `${PAIR_ON[basis]}
                   AND b.idempotency_key <> a.idempotency_key
                   AND b.created_at >= a.created_at AND b.created_at <= a.created_at + INTERVAL ${p.add(windowMicros)} MICROSECOND
                   AND (b.created_at > a.created_at OR b.id > a.id)
                   -- implied by the two lines above, spelled out so the partners are a range too
                   AND b.created_at >= ${p.time(input.from)} AND b.created_at < ${p.time(new Date(input.to.getTime() + windowSeconds * 1000))}`;
    const filters = [`a.created_at >= ${p.time(input.from)}`, `a.created_at < ${p.time(input.to)}`];
    if (input.scope) filters.push(`a.scope = ${p.add(input.scope)}`);
    if (input.operation) filters.push(`a.operation = ${p.add(input.operation)}`);
    return `SELECT a.id AS "first", b.id AS "second", '${basis}' AS basis,
                   TIMESTAMPDIFF(MICROSECOND, a.created_at, b.created_at) / 1e6 AS "secondsApart", b.created_at AS last_at
              FROM idempotency_records a
              JOIN idempotency_records b
                ON ${on}
             WHERE ${[...filters, ANCHOR_WHERE[basis]].join(" AND ")}`;
  });
  return { text: `${branches.join(" UNION ALL ")} ORDER BY last_at DESC LIMIT ${p.add(MAX_PAIRS + 1)}`, values: p.values };
}
