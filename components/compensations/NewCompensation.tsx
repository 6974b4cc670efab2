"use client";

import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { apiFetch, retryUnlessClientError } from "@/components/client/api";
import { queryKeys } from "@/components/client/query-keys";
import { ErrorState, SkeletonRows } from "@/components/queue/read-ui";
import type { RecordDetailJson } from "@/components/records/detail/shared";
import { formatMoney, StatusBadge } from "@/components/records/ui";
import { CompensationRequestForm } from "./CompensationRequestForm";
import { remainingMinor } from "./shared";

/** What the form needs of GET /api/v1/records/{id} (the server's type). */
type DetailJson = Pick<RecordDetailJson, "record" | "compensations">;

/**
 * /compensations/new?recordId=…&relatedRecordId=…&reason=…: the request form for one
 * record, opened from the duplicate-charge screen ("Hand over to compensation") with
 * the pair pre-filled: the later record is the one refunded, the earlier one is named
 * as the related record, and the reason says why.
 */
export function NewCompensation({ recordId, relatedRecordId, reason }: { recordId: string; relatedRecordId?: string; reason?: string }) {
  const detail = useQuery({
    queryKey: [...queryKeys.records.detail(recordId), "for-compensation"],
    queryFn: () => apiFetch<DetailJson>(`/api/v1/records/${encodeURIComponent(recordId)}`),
    retry: retryUnlessClientError,
  });
  if (detail.isPending) return <SkeletonRows rows={4} cols={2} label="Loading the record" />;
  if (detail.isError) return <ErrorState error={detail.error} onRetry={() => void detail.refetch()} />;
  const r = detail.data.record;
  const left = remainingMinor(r.amountMinor, detail.data.compensations);
  const missing = [
    r.provider === null && "provider",
    r.providerReference === null && "provider reference",
    r.amountMinor === null && "amount",
    r.currency === null && "currency",
  ].filter(Boolean);
  return (
    <div className="comp-new" data-testid="compensation-new">
      <section className="panel" aria-label="The charge to compensate">
        <h2>
          Record <Link href={`/records/${r.id}`}>#{r.id}</Link>
        </h2>
        <p>
          <StatusBadge status={r.status} /> {r.operation} · {r.scope} · {formatMoney(r.amountMinor, r.currency)} · {r.provider ?? "no provider"}{" "}
          <span className="mono">{r.providerReference ?? ""}</span>
        </p>
        <p className="subtle mono">{r.idempotencyKey}</p>
        {relatedRecordId ? (
          <p data-testid="compensation-related">
            Suspected duplicate of <Link href={`/records/${relatedRecordId}`}>record #{relatedRecordId}</Link>: this (later) record&apos;s charge is the one to
            give back.
          </p>
        ) : null}
        {detail.data.compensations.length ? (
          <p className="subtle">
            Already {detail.data.compensations.length} compensation{detail.data.compensations.length === 1 ? "" : "s"} for this record (
            {detail.data.compensations.map((c) => `#${c.id} ${c.state}`).join(", ")}).
          </p>
        ) : null}
      </section>
      <section className="panel" aria-label="Request">
        <h2>Request</h2>
        {r.status !== "completed" ? (
          <p className="notice error" role="alert">
            Record #{r.id} is {r.status}: only completed records can be compensated (nothing was charged, or the outcome is not known yet).
          </p>
        ) : missing.length ? (
          <p className="notice error" role="alert">
            Record #{r.id} has no {missing.join(", ")}: there is no charge at a provider to compensate.
          </p>
        ) : left === 0n || left === null ? (
          <p className="notice error" role="alert" data-testid="compensation-nothing-left">
            Nothing left to compensate: this record&apos;s compensations already claim all of {formatMoney(r.amountMinor, r.currency)}.
          </p>
        ) : (
          <CompensationRequestForm record={r} remainingMinor={left} relatedRecordId={relatedRecordId} initialReason={reason} />
        )}
      </section>
    </div>
  );
}
