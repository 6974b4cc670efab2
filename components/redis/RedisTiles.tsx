"use client";

import { useQuery } from "@tanstack/react-query";
import { apiFetch } from "@/components/client/api";
import { queryKeys } from "@/components/client/query-keys";
import { fmtInt, When, useNow } from "@/components/queue/read-ui";
import type { StoresJson } from "./types";

/** The overview's tile per Redis key store (nothing when none is configured): wedged, processing, completed, as of the census. */
export function RedisTiles() {
  const now = useNow();
  const q = useQuery({ queryKey: queryKeys.redis.stores, queryFn: () => apiFetch<StoresJson>("/api/v1/redis/stores"), refetchInterval: 60_000 });
  const stores = q.data?.stores ?? [];
  if (stores.length === 0) return null;
  return (
    <section className="cards ov-cards" aria-label="Redis key stores" data-testid="redis-tiles">
      {stores.map((s) => {
        const c = s.census;
        const wedged = c?.wedged.count ?? 0;
        return (
          <a
            key={s.store.name}
            href={`/redis?store=${encodeURIComponent(s.store.name)}`}
            className={`card${wedged > 0 ? " ov-tone-bad" : ""}`}
            data-testid="redis-tile"
            data-store={s.store.name}
          >
            <div className="label">Redis · {s.store.name}</div>
            <div className="value">{c ? `${fmtInt(wedged)} wedged` : s.error ? "unreachable" : "…"}</div>
            <div className="subtle ov-hint">
              {c ? (
                <>
                  {fmtInt(c.records.processing)} processing · {fmtInt(c.records.completed)} completed · <When iso={c.takenAt} now={now} />
                </>
              ) : s.error ? (
                s.error.message
              ) : (
                "census running"
              )}
            </div>
          </a>
        );
      })}
    </section>
  );
}
