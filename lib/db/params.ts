import { POSTGRES, type Dialect } from "./dialect";

/**
 * The one builder of statement parameters: `add` binds a value and returns its placeholder
 * in the statement's dialect; `time`, `bigint` and `texts` bind with the cast the column
 * needs. `values` goes to the executor with the text.
 */
export class Params {
  readonly values: unknown[] = [];
  constructor(readonly dialect: Dialect = POSTGRES) {}
  add(value: unknown): string {
    this.values.push(value);
    return this.dialect.param(this.values.length);
  }
  /** A timestamp, bound as ISO text. */
  time(d: Date): string {
    return this.dialect.time(this.add(d.toISOString()));
  }
  /** A 64-bit integer, bound as its decimal text. */
  bigint(n: bigint | number): string {
    return this.dialect.bigint(this.add(String(n)));
  }
  /**
   * A list of values for `IN (…)`: one placeholder each ("$1, $2" / "?, ?"). An empty list is
   * `NULL`: `IN (NULL)` matches nothing — but `NOT IN (NULL)` matches nothing either, so a caller
   * of NOT IN handles the empty list itself.
   */
  list(values: readonly unknown[]): string {
    return values.length ? values.map((v) => this.add(v)).join(", ") : "NULL";
  }
  /** A list of texts (a text[] in PostgreSQL), for `= ANY (…)`. PostgreSQL only: MySQL has no arrays (use list). */
  texts(values: readonly string[]): string {
    return `${this.add(`{${values.map((v) => `"${v.replace(/["\\]/g, (c) => `\\${c}`)}"`).join(",")}}`)}::text[]`;
  }
}

/** A new parameter list (PostgreSQL placeholders unless a dialect is given). */
export const paramList = (dialect?: Dialect) => new Params(dialect);

/** A statement and its parameters, as the executors take them. */
export interface Statement {
  text: string;
  values: unknown[];
}

/** A statement without parameters. */
export const plain = (text: string): Statement => ({ text, values: [] as unknown[] });
