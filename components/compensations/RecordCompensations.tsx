"use client";

import { useQuery } from "@tanstack/react-query";
import { apiFetch } from "@/components/client/api";
import { queryKeys } from "@/components/client/query-keys";
import { ErrorState, SkeletonRows } from "@/components/queue/read-ui";
import { CompensationsTable } from "./CompensationsTable";
import type { CompensationPage } from "./shared";

/** The record's compensations with the viewer's allowed actions (one query the panel and the section share). */
export function useRecordCompensations(recordId: string) {
  return useQuery({
    queryKey: queryKeys.compensations.list({ recordId, limit: 200 }),
    queryFn: () => apiFetch<CompensationPage>(`/api/v1/compensations?recordId=${encodeURIComponent(recordId)}&limit=200`),
  });
}

/** The record page's Compensations section: each one with its state and the approve/reject/retry the viewer may use. */
export function RecordCompensations({ recordId, onChanged }: { recordId: string; onChanged?: () => void }) {
  const query = useRecordCompensations(recordId);
  if (query.isPending) return <SkeletonRows rows={2} cols={6} label="Loading compensations" />;
  if (query.isError) return <ErrorState error={query.error} onRetry={() => void query.refetch()} />;
  if (query.data.items.length === 0) {
    return (
      <p className="subtle" data-testid="no-compensations">
        No refund, void or cancel has been requested for this record.
      </p>
    );
  }
  return <CompensationsTable items={query.data.items} showRecord={false} onChanged={() => onChanged?.()} />;
}
