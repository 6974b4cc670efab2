import { MYSQL } from "../db/dialect";
import { paramList, type Params, type Statement } from "../db/params";
import type { SqlExecutor } from "../db/sql";
import { recordColumns } from "./row";
import { likePrefix, withBooleanHold } from "./rows.mysql";
import type { SearchInput } from "./search";
import type { SearchRow, SearchStore } from "./search-store";
import { SEARCH_FIELDS, type SearchField } from "./vocabulary";

/**
 * Record search on MySQL/MariaDB (ADR 0012). The tables are utf8mb4_bin, so the plain B-tree
 * index of each lookup column serves `col = ?` and `col LIKE 'prefix%'` alike (what
 * text_pattern_ops does on PostgreSQL); scope's index continues with (created_at, id), and
 * (created_at, id) serves the unfiltered listing. Without a field, all six are searched (one
 * index branch each, each its own LIMIT) and merged, as on PostgreSQL; one field is its one range.
 *
 * The pattern is bound whole (`'abc%'`, wildcards escaped): the optimizer sees a constant
 * prefix and makes it an index range (test/records-explain.test.ts, MariaDB's EXPLAIN).
 * Keyset positions are spelled `t <= ? AND (t < ? OR id < ?)`: a range on the index's first
 * column, which a row comparison `(t, id) < (?, ?)` is not to every MySQL version's optimizer.
 * `?` binds in order, so each branch binds its own copies of the values.
 */
export function mysqlSearchStore(ex: SqlExecutor): SearchStore {
  return {
    async page(input) {
      const { text, values } = mysqlSearchSql(input);
      const rows = await ex.query<SearchRow & { matched: string | null }>(text, values);
      return rows.map((r) => withBooleanHold({ ...r, matched: r.matched ? (r.matched.split(",") as SearchField[]) : [] }));
    },
  };
}

const FIELD_NAMES = Object.keys(SEARCH_FIELDS) as [SearchField, ...SearchField[]];

/** The SQL that search runs on MySQL (exported so the EXPLAIN test checks exactly this). */
export function mysqlSearchSql(input: SearchInput): Statement {
  const limit = input.limit ?? 50;
  const match = input.match ?? "exact";
  const p = paramList(MYSQL);
  const filters = (): string[] => {
    const out: string[] = [];
    if (input.status) out.push(`r.status = ${p.add(input.status)}`);
    if (input.operation) out.push(`r.operation = ${p.add(input.operation)}`);
    if (input.cursor) {
      const { t, id } = input.cursor;
      out.push(`r.created_at <= ${cursorTime(p, t)} AND (r.created_at < ${cursorTime(p, t)} OR r.id < ${p.bigint(id)})`);
    }
    return out;
  };
  const order = `ORDER BY r.created_at DESC, r.id DESC`;
  const tail = `${MYSQL.cursorTime("r.created_at")} AS "cursorTime"`;

  const q = input.q;
  const cond = (column: string) => (match === "prefix" ? `r.${column} LIKE ${p.add(likePrefix(q!))}` : `r.${column} = ${p.add(q!)}`);

  // The listing, or one field: a single range (no merge), and what matched is known.
  if (q === undefined || input.field) {
    const where = [...(input.field ? [cond(SEARCH_FIELDS[input.field])] : []), ...filters()];
    return {
      text: `SELECT ${recordColumns("r")}, ${tail}, '${input.field ?? ""}' AS matched FROM idempotency_records r
              ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ${order} LIMIT ${p.add(limit + 1)}`,
      values: p.values,
    };
  }

  // Placeholders in the order of the text: the matched list first, then each branch, then the outer limit.
  const matched = `CONCAT_WS(',', ${FIELD_NAMES.map((f) => `CASE WHEN ${cond(SEARCH_FIELDS[f])} THEN '${f}' END`).join(", ")}) AS matched`;
  const branches = FIELD_NAMES.map(
    (f) => `(SELECT r.id, r.created_at FROM idempotency_records r
              WHERE ${[cond(SEARCH_FIELDS[f]), ...filters()].join(" AND ")} ${order} LIMIT ${p.add(limit + 1)})`,
  );
  return {
    text: `SELECT ${recordColumns("r")}, ${tail}, ${matched}
             FROM (${branches.join(" UNION ")}) h JOIN idempotency_records r ON r.id = h.id
            ${order} LIMIT ${p.add(limit + 1)}`,
    values: p.values,
  };
}

/** A keyset cursor's time (microseconds, UTC text) as a DATETIME(6) value. */
const cursorTime = (p: Params, t: string) => MYSQL.time(p.add(t));
