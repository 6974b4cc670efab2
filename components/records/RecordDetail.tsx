"use client";

import { useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { apiFetch, retryUnlessClientError } from "@/components/client/api";
import { queryKeys } from "@/components/client/query-keys";
import { RecordCompensations } from "@/components/compensations/RecordCompensations";
import { StoryPanel } from "@/components/insights/StoryPanel";
import { RecordActions } from "./actions/RecordActions";
import type { RecordActionAccess } from "./actions/types";
import { AuditPanel } from "./detail/AuditPanel";
import { DuplicatesPanel } from "./detail/DuplicatesPanel";
import { FieldsPanel } from "./detail/FieldsPanel";
import { OutboxPanel } from "./detail/OutboxPanel";
import { ReconciliationPanel } from "./detail/ReconciliationPanel";
import { Section, type RecordDetailJson } from "./detail/shared";
import { StoredResponsePanel } from "./detail/StoredResponsePanel";
import { TimelinePanel } from "./detail/TimelinePanel";
import { When } from "@/components/time/When";
import { formatMoney, SkeletonRows, StatusBadge } from "./ui";

/**
 * /records/[id]: everything about one record from GET /api/v1/records/{id} — every field,
 * the event timeline, reconciliation items, outbox messages, the audit entries that touch
 * it, the stored response at the viewer's level and its suspected duplicates side by side,
 * one panel each (./detail/); the actions the viewer may take above them (./actions/).
 */
export function RecordDetail({
  id,
  window,
  canReveal,
  canReadAudit,
  actions,
}: {
  id: string;
  window?: string;
  canReveal: boolean;
  canReadAudit: boolean;
  actions: RecordActionAccess;
}) {
  const router = useRouter();
  const client = useQueryClient();
  const key = [...queryKeys.records.detail(id), window ?? "10m"] as const;
  const detail = useQuery({
    queryKey: key,
    retry: retryUnlessClientError,
    queryFn: () => apiFetch<RecordDetailJson>(`/api/v1/records/${id}${window ? `?window=${encodeURIComponent(window)}` : ""}`),
  });
  const refresh = () => void client.invalidateQueries({ queryKey: queryKeys.records.detail(id) });

  if (detail.isPending) return <DetailSkeleton />;
  if (detail.isError) {
    return (
      <div className="error-box" role="alert" data-testid="record-error">
        <h1>{/not found|no record/i.test(detail.error.message) ? "Record not found" : "Could not load the record"}</h1>
        <p>{detail.error.message}</p>
        <p>
          <Link href="/records">Back to search</Link> ·{" "}
          <button type="button" onClick={() => void detail.refetch()}>
            Try again
          </button>
        </p>
      </div>
    );
  }
  const d = detail.data;
  const r = d.record;
  return (
    <>
      <nav className="breadcrumbs" aria-label="Breadcrumb">
        <Link href="/records">Search</Link> › <span>Record {r.id}</span>
      </nav>
      <div className="toolbar record-head">
        <div>
          <h1 className="mono record-key" title={r.idempotencyKey}>
            {r.idempotencyKey}
          </h1>
          <p className="subtle">
            <StatusBadge status={r.status} /> {r.operation} · {r.scope} · {formatMoney(r.amountMinor, r.currency)} · created <When iso={r.createdAt} />
            {r.legalHold ? <span className="role-badge"> legal hold</span> : null}
          </p>
        </div>
        <button type="button" onClick={() => void detail.refetch()} disabled={detail.isFetching}>
          {detail.isFetching ? "Refreshing…" : "Refresh"}
        </button>
      </div>

      <RecordActions record={r} access={actions} availability={{ check: d.checkWithProvider, compensation: d.compensation }} onChanged={refresh} />

      <StoryPanel recordId={id} />

      <div className="detail-grid">
        <FieldsPanel record={r} />
        <StoredResponsePanel detail={d} id={id} canReveal={canReveal} onRevealed={refresh} />
      </div>

      <TimelinePanel timeline={d.timeline} />

      <DuplicatesPanel
        record={r}
        duplicates={d.suspectedDuplicates}
        windowSeconds={d.duplicateWindowSeconds}
        window={window}
        onWindow={(w) => router.replace(`/records/${id}${w === "10m" ? "" : `?window=${w}`}`, { scroll: false })}
      />

      <Section title={`Compensations (${d.compensations.length})`} testId="compensations">
        <RecordCompensations recordId={id} onChanged={refresh} />
      </Section>

      <ReconciliationPanel items={d.reconciliationItems} />
      <OutboxPanel messages={d.outboxMessages} />
      <AuditPanel entries={d.audit} id={id} canReadAudit={canReadAudit} />
    </>
  );
}

function DetailSkeleton() {
  return (
    <div aria-busy="true" aria-label="Loading the record" data-testid="record-skeleton">
      <span className="skeleton skeleton-title" />
      <div className="detail-grid">
        {[0, 1].map((k) => (
          <div className="panel" key={k}>
            <table className="data-table">
              <tbody>
                <SkeletonRows rows={8} columns={2} />
              </tbody>
            </table>
          </div>
        ))}
      </div>
    </div>
  );
}
