/**
 * What differs between the SQL databases the console runs on, in one place (ADR 0011):
 * placeholders, casts, the text form of a keyset cursor's time. A module's statements are
 * written once per dialect in its store file (`<module>.postgres.ts`; the MySQL/MariaDB
 * issue adds `<module>.mysql.ts`), behind one interface, and picked with `byDialect`; the
 * logic above them never branches on the database.
 */
export type DialectName = "postgres" | "mysql";

export interface Dialect {
  name: DialectName;
  /** The placeholder of the n-th parameter (1-based). */
  param(n: number): string;
  /** A bound ISO time as a timestamp value. */
  time(placeholder: string): string;
  /** A bound decimal string as a 64-bit integer. */
  bigint(placeholder: string): string;
  /** A timestamp column as the keyset cursor's text: UTC, microseconds ("2026-12-01T09:00:00.123456Z"). */
  cursorTime(column: string): string;
}

export const POSTGRES: Dialect = {
  name: "postgres",
  param: (n) => `$${n}`,
  time: (p) => `${p}::timestamptz`,
  bigint: (p) => `${p}::bigint`,
  cursorTime: (column) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`,
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
