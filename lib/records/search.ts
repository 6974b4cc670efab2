import type { Page } from "../db/paging";
import { RECORD_STATUSES } from "../kernel/vocabulary";
import { z } from "zod";
import type { SqlExecutor } from "../db/sql";
import { operationSchema } from "../idempotency/schemas";
import type { RecordSummary } from "./row";
import { cursorParam, limitParam, pageOf } from "../db/paging";
import { optional } from "../kernel/input";
import { searchStore } from "./search-store";
import { SEARCH_FIELDS, type SearchField } from "./vocabulary";

/**
 * Record search: by idempotency key, scope, provider reference, provider request id,
 * correlation id or resource id — exact or prefix — newest first, keyset-paginated
 * on (created_at DESC, id DESC).
 *
 * Every branch is answered from an index; without a field, all six are searched (one
 * index branch each) and merged. The statement, and how each index serves it, is in
 * search-store.postgres.ts. A prefix is matched literally: %, _ and \ in it are escaped.
 */

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

export async function searchRecords(sql: SqlExecutor, input: SearchInput): Promise<Page<SearchHit>> {
  const limit = input.limit ?? 50;
  const rows = await searchStore(sql).page(input);
  return pageOf(rows, limit, (r) => ({ t: r.cursorTime, id: r.id }));
}
