"use client";

import { retryUnlessClientError } from "@/components/client/api";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useMemo } from "react";
import { apiFetch } from "@/components/client/api";
import { queryKeys } from "@/components/client/query-keys";
import {
  EmptyState,
  ErrorState,
  fmtDuration,
  fmtInt,
  Mono,
  RangePicker,
  resolveRange,
  SkeletonRows,
  toQuery,
  useUrlFilters,
  When,
} from "@/components/queue/read-ui";
import { ScrollBox } from "@/components/ScrollBox";
import { proposalHref } from "./proposal";
import type { RetentionJson } from "./types";

const FILTER_KEYS = ["range", "from", "to"] as const;
const RANGES = ["24h", "7d", "30d"];
const DEFAULT_RANGE = "30d";
const dur = (s: number | null | undefined) => (s === null || s === undefined ? "—" : fmtDuration(s));

/** Insights › Retention advisor: per operation, how long clients keep retrying beside how long keys are kept. */
export function RetentionAdvisor({ canManage }: { canManage: boolean }) {
  const [f, setFilters] = useUrlFilters(FILTER_KEYS);
  const range = useMemo(() => resolveRange({ range: f.range, from: f.from, to: f.to }, DEFAULT_RANGE), [f.range, f.from, f.to]);
  const query = useQuery({
    queryKey: queryKeys.insights.retention({ range: f.range, from: f.from, to: f.to }),
    queryFn: () => apiFetch<RetentionJson>(`/api/v1/insights/retention?${toQuery({ from: range.from, to: range.to })}`),
    placeholderData: keepPreviousData,
    retry: retryUnlessClientError,
  });
  const d = query.data;
  const late = d?.operations.flatMap((o) => o.lateRetries.items) ?? [];

  return (
    <div className="rs-screen" data-testid="retention-advisor">
      <div className="rs-filters" role="group" aria-label="Advisor filters">
        <RangePicker key={`${f.range}|${f.from}|${f.to}`} values={f} presets={RANGES} fallback={DEFAULT_RANGE} onChange={(p) => setFilters(p)} />
        <div className="rs-filter-actions">
          <button type="button" onClick={() => void query.refetch()} disabled={query.isFetching}>
            {query.isFetching ? "Refreshing…" : "Refresh"}
          </button>
        </div>
      </div>
      {query.isError && !d ? (
        <ErrorState error={query.error} onRetry={() => void query.refetch()} />
      ) : !d ? (
        <SkeletonRows cols={8} label="Loading the retention advice" />
      ) : d.operations.length === 0 ? (
        <EmptyState title="No records and no retries yet." />
      ) : (
        <>
          <section aria-labelledby="windows-h">
            <h2 id="windows-h" className="section-title">
              Retry window per operation <span className="subtle">first request → last replay, in-progress or conflict</span>
            </h2>
            <ScrollBox label="Retry windows" className="rs-table-wrap">
              <table className="rs-table" data-testid="advisor-table">
                <thead>
                  <tr>
                    <th>Operation</th>
                    <th className="num">Retried keys</th>
                    <th className="num">p50</th>
                    <th className="num">p95</th>
                    <th className="num">p99</th>
                    <th className="num">Longest</th>
                    <th className="num">Expiry</th>
                    <th>Policy</th>
                    <th>Advice</th>
                  </tr>
                </thead>
                <tbody>
                  {d.operations.map((o) => (
                    <tr key={o.operation} data-testid="advisor-row" data-operation={o.operation} data-flags={o.flags.map((x) => x.kind).join(" ")}>
                      <td>
                        <code>{o.operation}</code>
                      </td>
                      <td className="num">
                        {fmtInt(o.retries.keys)}
                        {o.retries.sampled ? <span className="subtle"> (sampled)</span> : null}
                      </td>
                      <td className="num">{dur(o.window.p50Seconds)}</td>
                      <td className="num">{dur(o.window.p95Seconds)}</td>
                      <td className="num">{dur(o.window.p99Seconds)}</td>
                      <td className="num">{dur(o.window.maxSeconds)}</td>
                      <td className="num">{dur(o.expiry.ttlSeconds)}</td>
                      <td>
                        {o.policy.source === "none"
                          ? "none (kept for ever)"
                          : `${o.policy.keepRecordsDays} d after expiry${o.policy.source === "default" ? " (default)" : ""}${o.policy.enabled ? "" : ", disabled"}`}
                      </td>
                      <td>
                        {o.flags.map((x) => (
                          <p key={x.kind} className={`notice ${x.kind === "retries_after_expiry" ? "error" : ""}`} data-testid={`flag-${x.kind}`}>
                            {x.text}
                          </p>
                        ))}
                        <p className="subtle">
                          Proposal: records {o.proposal.keepRecordsDays} d after expiry, events {o.proposal.keepEventsDays} d
                          {o.proposal.serviceTtlSeconds ? `, writers' expiry ${dur(o.proposal.serviceTtlSeconds)}` : ""} — {o.proposal.why}.
                        </p>
                        <a
                          className="button-link"
                          data-testid="propose-policy"
                          href={proposalHref(o.proposal)}
                          title={
                            canManage
                              ? "Opens the retention form pre-filled; you save it with a reason"
                              : "Opens the retention form pre-filled; an admin (retention.manage) saves it"
                          }
                        >
                          Propose policy
                        </a>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </ScrollBox>
          </section>

          <section aria-labelledby="late-h">
            <h2 id="late-h" className="section-title">
              Retries after the key expired <span className="subtle">a double charge waiting to happen once the record is purged</span>
            </h2>
            {late.length === 0 ? (
              <EmptyState title="No retry came after its key expired." testId="late-empty" />
            ) : (
              <ScrollBox label="Late retries" className="rs-table-wrap">
                <table className="rs-table" data-testid="late-table">
                  <thead>
                    <tr>
                      <th>When</th>
                      <th>Operation</th>
                      <th>Scope</th>
                      <th>Key</th>
                      <th>Expired</th>
                      <th className="num">Late by</th>
                    </tr>
                  </thead>
                  <tbody>
                    {late.map((l) => (
                      <tr key={l.eventId} data-testid="late-row" data-record={l.recordId}>
                        <td className="nowrap">
                          <When iso={l.occurredAt} />
                        </td>
                        <td>{l.operation}</td>
                        <td>{l.scope}</td>
                        <td>
                          <a href={`/records/${l.recordId}`}>
                            <Mono value={l.idempotencyKey} max={24} />
                          </a>
                        </td>
                        <td className="nowrap">
                          <When iso={l.expiresAt} />
                        </td>
                        <td className="num">{fmtDuration(l.lateBySeconds)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </ScrollBox>
            )}
          </section>
          <p className="subtle" data-testid="advisor-sampling">
            {d.sampling.note} <When iso={d.from} age={false} seconds={false} /> – <When iso={d.to} age={false} seconds={false} />.
          </p>
        </>
      )}
    </div>
  );
}
