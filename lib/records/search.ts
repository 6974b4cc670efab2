import type { Page } from "../db/paging";
import { RECORD_STATUSES } from "../kernel/vocabulary";
import { z } from "zod";
import type { SqlExecutor } from "../db/sql";
import { operationSchema } from "../idempotency/schemas";
import { escapeLike, recordColumns, type RecordSummary } from "./row";
import { cursorParam, cursorTimeSql, encodeCursor, limitParam, type KeysetPosition } from "../db/paging";
import { optional } from "../kernel/input";
import { paramList } from "../db/params";

/**
 * Record search: by idempotency key, scope, provider reference, provider request id,
 * correlation id or resource id — exact or prefix — newest first, keyset-paginated
 * on (created_at DESC, id DESC).
 *
 * Every branch is answered from an index (migration 20261130030000_search_indexes):
 * the lookup columns have text_pattern_ops btree indexes, so `col = $1` and
 * `col LIKE 'prefix%'` are index conditions under any database collation; scope's
 * index continues with (created_at, id), so an exact scope is already in page order;
 * (created_at, id) serves the unfiltered listing and common prefixes. Without a
 * field, all six are searched (one index branch each) and merged.
 *
 * A prefix is matched literally: %, _ and \ in it are escaped. The pattern is a bound
 * parameter; Postgres plans unnamed statements with their values, so it sees the
 * constant prefix and derives the index range (test/records-explain.test.ts).
 */

export const SEARCH_FIELDS = {
  key: "idempotency_key",
  scope: "scope",
  provider_reference: "provider_reference",
  provider_request_id: "provider_request_id",
  correlation_id: "correlation_id",
  resource_id: "resource_id",
} as const;
export type SearchField = keyof typeof SEARCH_FIELDS;
const FIELD_NAMES = Object.keys(SEARCH_FIELDS) as [SearchField, ...SearchField[]];

export const searchQuerySchema = z
  .object({
    /** What to look for; absent → the newest records (filters still apply). */
    q: optional(
      z
        .string()
        .min(1)
        .max(255, "must be at most 255 characters")
        .regex(/^[^\x00-\x1f\x7f]+$/, "must not contain control characters"),
    ),
    /** Which column; absent → all six. */
    field: optional(z.enum(FIELD_NAMES)),
    match: optional(z.enum(["exact", "prefix"])).transform((v) => v ?? "exact"),
    status: optional(z.enum(RECORD_STATUSES)),
    operation: optional(operationSchema),
    limit: limitParam,
    cursor: optional(cursorParam),
  })
  .strict()
  .refine((v) => v.q !== undefined || v.field === undefined, { message: "field needs q (what to search for)", path: ["field"] });

export type SearchQuery = z.output<typeof searchQuerySchema>;
export type SearchInput = Partial<Omit<SearchQuery, "limit" | "match">> & { limit?: number; match?: "exact" | "prefix" };

export interface SearchHit extends RecordSummary {
  /** The fields that matched q (empty when listing without q). */
  matched: SearchField[];
}


/** The SQL that search() runs (exported so the EXPLAIN test checks exactly this). */
export function searchSql(input: SearchInput): { text: string; values: unknown[] } {
  const limit = input.limit ?? 50;
  const match = input.match ?? "exact";
  const p = paramList();
  const filters: string[] = [];
  if (input.status) filters.push(`r.status = ${p.add(input.status)}`);
  if (input.operation) filters.push(`r.operation = ${p.add(input.operation)}`);
  if (input.cursor) filters.push(`(r.created_at, r.id) < (${p.add(input.cursor.t)}::timestamptz, ${p.add(input.cursor.id)}::bigint)`);
  const take = p.add(limit + 1);
  const order = `ORDER BY r.created_at DESC, r.id DESC`;
  const tail = `${cursorTimeSql("r.created_at")} AS "cursorTime"`;

  if (input.q === undefined) {
    const where = filters.length ? `WHERE ${filters.join(" AND ")}` : "";
    return { text: `SELECT ${recordColumns("r")}, ${tail}, '{}'::text[] AS matched FROM idempotency_records r ${where} ${order} LIMIT ${take}`, values: p.values };
  }

  const needle = p.add(match === "prefix" ? escapeLike(input.q) : input.q);
  const cond = (column: string) => (match === "prefix" ? `r.${column} LIKE ${needle} || '%'` : `r.${column} = ${needle}`);
  const fields = input.field ? [input.field] : FIELD_NAMES;
  const branches = fields.map(
    (f) => `(SELECT r.id, r.created_at FROM idempotency_records r
              WHERE ${[cond(SEARCH_FIELDS[f]), ...filters].join(" AND ")} ${order} LIMIT ${take})`,
  );
  const matched = `array_remove(ARRAY[${fields.map((f) => `CASE WHEN ${cond(SEARCH_FIELDS[f])} THEN '${f}' END`).join(", ")}]::text[], NULL) AS matched`;
  return {
    text: `WITH hits AS (${branches.join(" UNION ")})
           SELECT ${recordColumns("r")}, ${tail}, ${matched}
             FROM hits h JOIN idempotency_records r ON r.id = h.id
            ${order} LIMIT ${take}`,
    values: p.values,
  };
}

export async function searchRecords(sql: SqlExecutor, input: SearchInput): Promise<Page<SearchHit>> {
  const limit = input.limit ?? 50;
  const { text, values } = searchSql(input);
  const rows = await sql.query<SearchHit & { cursorTime: string }>(text, values);
  return pageOf(rows, limit, (r) => ({ t: r.cursorTime, id: r.id }));
}

/** Cuts the look-ahead row off and turns the last row into the next cursor. */
export function pageOf<T extends { cursorTime: string }>(rows: T[], limit: number, position: (row: T) => KeysetPosition): Page<Omit<T, "cursorTime">> {
  const more = rows.length > limit;
  const items = (more ? rows.slice(0, limit) : rows).map(({ cursorTime: _omit, ...rest }) => rest);
  return { items, nextCursor: more ? encodeCursor(position(rows[limit - 1])) : null, limit };
}
