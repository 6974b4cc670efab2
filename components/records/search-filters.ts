/**
 * The record search's URL filters, shared by the server page (which reads them from
 * searchParams) and the client screen (which writes them): one canonical query string.
 */

export const SEARCH_FILTER_KEYS = ["q", "field", "match", "status", "operation"] as const;
export type SearchFilterKey = (typeof SEARCH_FILTER_KEYS)[number];
export type SearchFilters = Partial<Record<SearchFilterKey, string>>;

/** The filters as a query string: empty values, the default match (exact) and a field without q left out. */
export function filtersQuery(filters: SearchFilters): string {
  const params = new URLSearchParams();
  for (const key of SEARCH_FILTER_KEYS) {
    const v = filters[key]?.trim();
    if (!v) continue;
    if (key === "match" && v === "exact") continue;
    if (key === "field" && !filters.q?.trim()) continue;
    params.set(key, v);
  }
  return params.toString();
}

/** The filters from a page's searchParams (first value of each, bounded). */
export function filtersFrom(raw: Record<string, string | string[] | undefined>): SearchFilters {
  const filters: SearchFilters = {};
  for (const key of SEARCH_FILTER_KEYS) {
    const v = raw[key];
    const value = Array.isArray(v) ? v[0] : v;
    if (value) filters[key] = value.slice(0, 255);
  }
  return filters;
}
