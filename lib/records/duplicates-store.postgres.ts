import { paramList, type Statement } from "../db/params";
import type { SqlExecutor } from "../db/sql";
import type { DuplicatesInput } from "./duplicates";
import type { DuplicatePairRow, DuplicatesStore } from "./duplicates-store";
import { recordColumns, type RecordSummary } from "./row";
import { DEFAULT_WINDOW_SECONDS, DUPLICATE_BASES, MAX_PAIRS, type DuplicateBasis } from "./vocabulary";

/**
 * Duplicates on PostgreSQL. The records created in the range come from (created_at, id) —
 * or (scope, created_at, id) with a scope filter. Their partners lie in [from, to + window),
 * which the pair statement states explicitly, so the planner either hash-joins two index
 * ranges (a wide range) or probes idempotency_records_duplicate_idx (scope, operation,
 * payload_hash, created_at) / the resource_id index per record (a narrow one); it never
 * needs to read the whole table. The lifetime range is two index probes, the ends of
 * (created_at, id) or (scope, created_at, id); a record's partners, two index probes.
 */
export function postgresDuplicatesStore(ex: SqlExecutor): DuplicatesStore {
  return {
    async createdRange(scope) {
      const [row] = await ex.query<{ oldest: Date | null; newest: Date | null }>(
        `SELECT min(created_at) AS oldest, max(created_at) AS newest FROM idempotency_records${scope ? " WHERE scope = $1" : ""}`,
        scope ? [scope] : [],
      );
      return row;
    },

    pairs(input) {
      const { text, values } = duplicatePairsSql(input);
      return ex.query<DuplicatePairRow>(text, values);
    },

    records(ids) {
      return ex.query<RecordSummary>(`SELECT ${recordColumns("r")} FROM idempotency_records r WHERE r.id = ANY ($1::bigint[])`, [ids.map(String)]);
    },

    partners(record, windowSeconds) {
      const near = `b.idempotency_key <> $4 AND b.created_at BETWEEN $5::timestamptz - make_interval(secs => $6)
                AND $5::timestamptz + make_interval(secs => $6)`;
      const hasResource = record.resourceId !== null && record.amountMinor !== null && record.currency !== null;
      return ex.query<RecordSummary & { basis: DuplicateBasis }>(
        `SELECT ${recordColumns("b")}, 'payload_hash'::text AS basis FROM idempotency_records b
      WHERE b.scope = $1 AND b.operation = $2 AND b.payload_hash = $3 AND ${near}
     ${
       hasResource
         ? `UNION ALL
     SELECT ${recordColumns("b")}, 'amount_resource'::text FROM idempotency_records b
      WHERE b.resource_id = $7 AND b.amount_minor = $8 AND b.currency = $9 AND b.scope = $1 AND b.operation = $2 AND ${near}`
         : ""
     }`,
        [
          record.scope,
          record.operation,
          record.payloadHash,
          record.idempotencyKey,
          record.createdAt,
          windowSeconds,
          ...(hasResource ? [record.resourceId, record.amountMinor, record.currency] : []),
        ],
      );
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

/** The pair-finding SQL (exported for the EXPLAIN test). */
export function duplicatePairsSql(input: DuplicatesInput & { from: Date; to: Date }): Statement {
  const p = paramList();
  const from = p.add(input.from);
  const to = p.add(input.to);
  const win = p.add(input.windowSeconds ?? DEFAULT_WINDOW_SECONDS);
  const filters = [`a.created_at >= ${from}`, `a.created_at < ${to}`];
  if (input.scope) filters.push(`a.scope = ${p.add(input.scope)}`);
  if (input.operation) filters.push(`a.operation = ${p.add(input.operation)}`);
  const branches = (input.bases ?? DUPLICATE_BASES).map(
    (basis) => `SELECT a.id AS first, b.id AS second, '${basis}'::text AS basis,
                       extract(epoch FROM b.created_at - a.created_at)::float8 AS "secondsApart", b.created_at AS last_at
                  FROM idempotency_records a
                  JOIN idempotency_records b
                    ON ${PAIR_ON[basis]}
                   AND b.idempotency_key <> a.idempotency_key
                   AND b.created_at >= a.created_at AND b.created_at <= a.created_at + make_interval(secs => ${win})
                   AND (b.created_at, b.id) > (a.created_at, a.id)
                   -- implied by the two lines above, spelled out so the partners are a range too
                   AND b.created_at >= ${from} AND b.created_at < ${to}::timestamptz + make_interval(secs => ${win})
                 WHERE ${[...filters, ANCHOR_WHERE[basis]].join(" AND ")}`,
  );
  const cap = p.add(MAX_PAIRS + 1);
  return { text: `${branches.join(" UNION ALL ")} ORDER BY last_at DESC LIMIT ${cap}`, values: p.values };
}
