/**
 * TanStack Query keys, one factory per feature: invalidating "records" refreshes
 * every records query and nothing else. Screens build keys only from here.
 */
type Params = Record<string, string | number | boolean | undefined>;

export const queryKeys = {
  overview: { all: ["overview"] as const, range: (p: Params) => ["overview", p] as const },
  records: {
    all: ["records"] as const,
    search: (p: Params) => ["records", "search", p] as const,
    detail: (id: string) => ["records", "detail", id] as const,
  },
  queue: { all: ["queue"] as const, list: (p: Params) => ["queue", p] as const },
  duplicates: { all: ["duplicates"] as const, list: (p: Params) => ["duplicates", p] as const },
  conflicts: { all: ["conflicts"] as const, list: (p: Params) => ["conflicts", p] as const },
  expiry: { all: ["expiry"] as const, stats: (p: Params) => ["expiry", p] as const },
  compensations: { all: ["compensations"] as const, list: (p: Params) => ["compensations", p] as const },
  retention: {
    all: ["retention"] as const,
    policies: ["retention", "policies"] as const,
    dryRun: (p: Params) => ["retention", "dry-run", p] as const,
    runs: ["retention", "runs"] as const,
    run: (id: string) => ["retention", "runs", id] as const,
    legalHolds: ["retention", "legal-holds"] as const,
  },
  reconcile: { all: ["reconcile"] as const },
  redis: {
    all: ["redis"] as const,
    stores: ["redis", "stores"] as const,
    store: (name: string) => ["redis", "store", name] as const,
    census: (name: string) => ["redis", "store", name, "census"] as const,
    wedged: (name: string) => ["redis", "store", name, "wedged"] as const,
    lookup: (name: string, p: Params) => ["redis", "store", name, "lookup", p] as const,
  },
  audit: { all: ["audit"] as const, list: (p: Params) => ["audit", "list", p] as const },
  users: { all: ["users"] as const, list: ["users", "list"] as const, sessions: (userId: string) => ["users", "sessions", userId] as const },
  tokens: { all: ["tokens"] as const },
  insights: {
    all: ["insights"] as const,
    retention: (p: Params) => ["insights", "retention", p] as const,
    keyQuality: (p: Params) => ["insights", "key-quality", p] as const,
    alerts: (source: "live" | "remembered") => ["insights", "alerts", source] as const,
    story: (id: string) => ["insights", "story", id] as const,
  },
  savedViews: { all: ["saved-views"] as const, forPage: (page: string) => ["saved-views", page] as const },
};
