import { byDialect } from "../db/dialect";
import type { SqlExecutor } from "../db/sql";
import type { SearchHit, SearchInput } from "./search";
import { mysqlSearchStore } from "./search-store.mysql";
import { postgresSearchStore } from "./search-store.postgres";

/** A search hit as the statement returns it: with its keyset position's time as text (lib/db/paging.ts). */
export type SearchRow = SearchHit & { cursorTime: string };

/** The statement record search runs (ADR 0011). */
export interface SearchStore {
  /**
   * The records matching `input` (q in the field(s), exact or as a literal prefix; status, operation), newest first on
   * (created_at DESC, id DESC), after the cursor; `limit + 1` rows to detect a next page.
   */
  page(input: SearchInput): Promise<SearchRow[]>;
}

export function searchStore(ex: SqlExecutor): SearchStore {
  return byDialect(ex, { postgres: postgresSearchStore, mysql: mysqlSearchStore })(ex);
}
