"use client";

import { keepPreviousData, useInfiniteQuery } from "@tanstack/react-query";
import { useMemo, useState } from "react";
import { apiFetch, retryUnlessClientError } from "@/components/client/api";
import { queryKeys } from "@/components/client/query-keys";
import { ActionNotice, type ActionMessage } from "@/components/client/use-action";
import { EmptyState, ErrorState, fmtInt, SkeletonRows, Tabs, toQuery, useUrlFilters } from "@/components/queue/read-ui";
import { whoCan } from "@/lib/auth/permissions";
import { CompensationsTable } from "./CompensationsTable";
import type { CompensationPage } from "./shared";

const TABS = ["requested", "failed", "executing", "approved", "executed", "rejected", "all"] as const;
type Tab = (typeof TABS)[number];
const TAB_LABEL: Record<Tab, string> = {
  requested: "Waiting for approval",
  failed: "Failed",
  executing: "Executing",
  approved: "Approved",
  executed: "Executed",
  rejected: "Rejected",
  all: "All",
};
const EMPTY: Record<Tab, string> = {
  requested: "Nothing is waiting for approval.",
  failed: "No failed compensations.",
  executing: "Nothing is being executed right now.",
  approved: "No approved compensation is waiting to be executed.",
  executed: "No compensation has been executed yet.",
  rejected: "No compensation has been rejected.",
  all: "No compensation has been requested yet.",
};
const FILTER_KEYS = ["state"] as const;
const PAGE_SIZE = 50;

/** /compensations: the approval queue (default tab: waiting for approval) and every other state, newest first. */
export function CompensationsScreen({ canApprove, canRequest }: { canApprove: boolean; canRequest: boolean }) {
  const [f, setFilters] = useUrlFilters(FILTER_KEYS);
  const tab: Tab = TABS.find((t) => t === f.state) ?? "requested";
  const params = useMemo(() => ({ state: tab === "all" ? undefined : tab, limit: PAGE_SIZE }), [tab]);
  const query = useInfiniteQuery({
    queryKey: queryKeys.compensations.list(params),
    queryFn: ({ pageParam }) => apiFetch<CompensationPage>(`/api/v1/compensations?${toQuery({ ...params, cursor: pageParam ?? undefined })}`),
    initialPageParam: null as string | null,
    getNextPageParam: (last) => last.nextCursor,
    placeholderData: keepPreviousData,
    retry: retryUnlessClientError,
  });
  const items = useMemo(() => query.data?.pages.flatMap((p) => p.items) ?? [], [query.data]);
  // The last action's outcome, kept here: its row may leave this tab when the list refetches.
  const [last, setLast] = useState<ActionMessage>(null);

  return (
    <div className="rs-screen comp-screen" data-testid="compensations-screen">
      <Tabs
        label="Compensation state"
        tabs={TABS.map((t) => {
          const counts = query.data?.pages[0]?.counts;
          const n = counts ? (t === "all" ? Object.values(counts).reduce((a, b) => a + (b ?? 0), 0) : (counts[t] ?? 0)) : null;
          return {
            value: t,
            label: (
              <>
                {TAB_LABEL[t]}
                {n !== null ? (
                  <span className="rs-count" data-testid={`count-${t}`}>
                    {fmtInt(n)}
                  </span>
                ) : null}
              </>
            ),
          };
        })}
        value={tab}
        onChange={(t) => {
          setLast(null);
          setFilters({ state: t === "requested" ? undefined : t });
        }}
      />
      <p className="subtle" data-testid="compensations-hint">
        {canApprove
          ? "You may approve or reject compensations other people requested; approving executes it at the provider at once."
          : `Approving needs the permission compensations.approve (${whoCan("compensations.approve")}).`}{" "}
        {canRequest
          ? "Request one from a completed record's page, or hand a double charge over from Duplicate charges."
          : `Requesting one needs the permission compensations.request (${whoCan("compensations.request")}).`}
      </p>
      <ActionNotice message={last} testId="compensations-outcome" />
      <div id="tabpanel" role="tabpanel" aria-labelledby={`tab-${tab}`}>
        {query.isError && !query.data ? (
          <ErrorState error={query.error} onRetry={() => void query.refetch()} />
        ) : query.isPending ? (
          <SkeletonRows rows={5} cols={7} label="Loading compensations" />
        ) : items.length === 0 ? (
          <EmptyState title={EMPTY[tab]} testId="compensations-empty" />
        ) : (
          <>
            <CompensationsTable
              items={items}
              onChanged={({ compensation, message }) => setLast({ ...message, text: `#${compensation.id}: ${message.text}` })}
            />
            {query.hasNextPage ? (
              <p className="list-more">
                <button type="button" data-testid="load-more" disabled={query.isFetchingNextPage} onClick={() => void query.fetchNextPage()}>
                  {query.isFetchingNextPage ? "Loading…" : "Load more"}
                </button>
              </p>
            ) : null}
          </>
        )}
        {query.isError && query.data ? <ErrorState error={query.error} onRetry={() => void query.refetch()} /> : null}
      </div>
    </div>
  );
}
