/**
 * What differs between the SQL databases the console runs on, in one place (ADR 0011):
 * placeholders, casts, the text form of a keyset cursor's time, how a snapshot begins. A
 * module's statements are written once per dialect in its store file (`store.postgres.ts`,
 * `store.mysql.ts`), behind one interface, and picked with `byDialect`; the logic above them
 * never branches on the database. MySQL/MariaDB: ADR 0012.
 */
export type DialectName = "postgres" | "mysql";

export interface Dialect {
  name: DialectName;
  /**
   * The placeholder of the n-th parameter (1-based). MySQL's is `?` whatever n: parameters bind
   * in order, so a MySQL statement uses each placeholder once (add a value needed twice twice).
   */
  param(n: number): string;
  /** A bound ISO time ("2026-12-01T09:00:00.123Z", as Params.time binds it) as a timestamp value. */
  time(placeholder: string): string;
  /** A bound decimal string as a 64-bit integer. */
  bigint(placeholder: string): string;
  /** A timestamp column as the keyset cursor's text: UTC, microseconds ("2026-12-01T09:00:00.123456Z"). */
  cursorTime(column: string): string;
  /** Begins a read-only transaction whose plain reads all see one snapshot taken now (the read side; inSnapshot). */
  snapshot: string;
  /**
   * Begins a REPEATABLE READ transaction whose snapshot is taken by its first read, so a lock
   * taken first (a locking statement on MySQL; see ADR 0012 "Locks") comes before the snapshot.
   */
  beginRepeatableRead: string;
  /**
   * A derived table's SELECT (`select` without the keyword: "u.id FROM … WHERE …") read once and
   * joined as a whole (hashed), never turned into a probe per outer row. PostgreSQL: OFFSET 0, a
   * fence the planner does not pull up (a DISTINCT would also do, at the price of a second hash
   * of every row); MySQL/MariaDB: DISTINCT, which materializes it.
   */
  readOnce(select: string): string;
  /**
   * Joins each row of the tables before it to the rows of `table` (as `alias`, its columns
   * `columns`) that `on` matches: a range of `index` per row, never a scan of `table` joined by
   * hash. For a join whose outer side is a few rows and whose inner side the planner cannot size
   * (legal_holds' scopes: a held scope may hold none of the records or a third of them).
   * PostgreSQL: a LATERAL subquery behind OFFSET 0, which the planner neither pulls up nor turns
   * around (it picks the index: with only `columns` to read, an index-only one); MySQL/MariaDB:
   * STRAIGHT_JOIN, which reads the tables in the order written, and FORCE INDEX — MariaDB took
   * another index of the same first column and read each row (1M records, a 350k-record scope: 9 s).
   */
  joinEach(table: string, alias: string, on: string, columns: string, index: string): string;
  /**
   * How a second session joins a snapshot transaction's snapshot (inSharedSnapshot, sql.ts): the
   * statement that exports it (one row, `id`) and the one that imports it at the start of
   * another REPEATABLE READ transaction. null where the server cannot (MySQL/MariaDB).
   */
  sharedSnapshot: { exportSql: string; importSql(id: string): string } | null;
}

export const POSTGRES: Dialect = {
  name: "postgres",
  param: (n) => `$${n}`,
  time: (p) => `${p}::timestamptz`,
  bigint: (p) => `${p}::bigint`,
  cursorTime: (column) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`,
  snapshot: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
  beginRepeatableRead: "BEGIN ISOLATION LEVEL REPEATABLE READ",
  readOnce: (select) => `SELECT ${select} OFFSET 0`,
  joinEach: (table, alias, on, columns) => `CROSS JOIN LATERAL (SELECT ${columns} FROM ${table} ${alias} WHERE ${on} OFFSET 0) ${alias}`,
  sharedSnapshot: {
    exportSql: "SELECT pg_export_snapshot() AS id",
    importSql: (id) => {
      // The server's own token ("00000003-0000001B-1"), inlined: SET TRANSACTION takes no parameter.
      if (!/^[0-9A-F]+(-[0-9A-F]+)+$/i.test(id)) throw new Error(`not a snapshot id: ${JSON.stringify(id)}`);
      return `SET TRANSACTION SNAPSHOT '${id}'`;
    },
  },
};

/** MySQL ≥ 8.0.16 and MariaDB ≥ 10.6 (ADR 0012): times are DATETIME(6) holding UTC; sessions run with ANSI_QUOTES. */
export const MYSQL: Dialect = {
  name: "mysql",
  param: () => "?",
  time: (p) => `CAST(STR_TO_DATE(${p}, '%Y-%m-%dT%H:%i:%s.%fZ') AS DATETIME(6))`,
  bigint: (p) => `CAST(${p} AS SIGNED)`,
  cursorTime: (column) => `DATE_FORMAT(${column}, '%Y-%m-%dT%H:%i:%s.%fZ')`,
  // Two statements (the executors' exec runs scripts): the level applies to the next transaction only.
  snapshot: "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ; START TRANSACTION READ ONLY, WITH CONSISTENT SNAPSHOT",
  beginRepeatableRead: "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ; START TRANSACTION",
  readOnce: (select) => `SELECT DISTINCT ${select}`,
  joinEach: (table, alias, on, _columns, index) => `STRAIGHT_JOIN ${table} ${alias} FORCE INDEX (${index}) ON ${on}`,
  sharedSnapshot: null,
};

/** Anything that knows its dialect: an executor, a database handle. */
export interface HasDialect {
  dialect: Dialect;
}

/** The implementation for `on`'s dialect (a store per dialect); a clear error where one is missing. */
export function byDialect<T>(on: HasDialect, impls: Partial<Record<DialectName, T>>): T {
  const impl = impls[on.dialect.name];
  if (!impl) throw new Error(`not implemented for ${on.dialect.name}: ${Object.keys(impls).join(", ")} only`);
  return impl;
}
