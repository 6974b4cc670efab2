import { z } from "zod";
import { intParam, optional } from "../kernel/input";
import { POSTGRES, type Dialect } from "./dialect";

/**
 * Keyset pagination for every list: opaque cursors over (time, id), page sizes, the page
 * shape the read API returns.
 */

/** One page of a keyset-paginated list. */
export interface Page<T> {
  items: T[];
  /** Pass as `cursor` for the next page; null on the last page. */
  nextCursor: string | null;
  limit: number;
}

/**
 * A keyset position (t, id): t is a timestamp with microseconds exactly as Postgres
 * holds it (a JS Date would drop them and skip or repeat rows), id the row id.
 * Opaque to clients: base64url of JSON.
 */
export interface KeysetPosition {
  t: string;
  id: bigint;
}

const CURSOR_TIME_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

export function encodeCursor(p: KeysetPosition): string {
  return Buffer.from(JSON.stringify([p.t, p.id.toString()]), "utf8").toString("base64url");
}

export function decodeCursor(text: string): KeysetPosition | null {
  try {
    if (!/^[A-Za-z0-9_-]{1,200}$/.test(text)) return null;
    const v = JSON.parse(Buffer.from(text, "base64url").toString("utf8")) as unknown;
    if (!Array.isArray(v) || v.length !== 2) return null;
    const [t, id] = v;
    if (typeof t !== "string" || !CURSOR_TIME_RE.test(t) || Number.isNaN(Date.parse(t))) return null;
    if (typeof id !== "string" || !/^\d{1,19}$/.test(id)) return null;
    return { t, id: BigInt(id) };
  } catch {
    return null;
  }
}

export const cursorParam = z.string().transform((v, ctx) => {
  const p = decodeCursor(v);
  if (!p) {
    ctx.addIssue({ code: "custom", message: "is not a cursor this API returned (use nextCursor from the previous page)" });
    return z.NEVER;
  }
  return p;
});

/** SQL for a timestamp column as the cursor's text (UTC, microseconds), in the dialect. */
export const cursorTimeSql = (column: string, dialect: Dialect = POSTGRES) => dialect.cursorTime(column);
/** Cuts the look-ahead row off and turns the last row into the next cursor. */
export function pageOf<T extends { cursorTime: string }>(rows: T[], limit: number, position: (row: T) => KeysetPosition): Page<Omit<T, "cursorTime">> {
  const more = rows.length > limit;
  const items = (more ? rows.slice(0, limit) : rows).map(({ cursorTime: _omit, ...rest }) => rest);
  return { items, nextCursor: more ? encodeCursor(position(rows[limit - 1])) : null, limit };
}

export const DEFAULT_PAGE = 50;
export const MAX_PAGE = 200;
export const limitParam = optional(intParam(1, MAX_PAGE)).transform((v) => v ?? DEFAULT_PAGE);
