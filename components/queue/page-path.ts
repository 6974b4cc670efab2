/** The page's path with its query string, for the sign-in redirect back (server side). */
export type PageSearchParams = Record<string, string | string[] | undefined>;

export function pathWithQuery(path: string, raw: PageSearchParams): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(raw)) {
    const value = Array.isArray(v) ? v[0] : v;
    if (value !== undefined && value !== "") p.set(k, value.slice(0, 300));
  }
  const qs = p.toString();
  return qs ? `${path}?${qs}` : path;
}
