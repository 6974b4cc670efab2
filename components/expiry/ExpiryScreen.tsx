"use client";

import type { Jsonified } from "@/lib/api/json";
import type { ExpiryStats } from "@/lib/stats/expiry";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useMemo } from "react";
import { Chart } from "@/components/charts/Chart";
import { apiFetch, retryUnlessClientError } from "@/components/client/api";
import { queryKeys } from "@/components/client/query-keys";
import {
  EmptyState,
  ErrorState,
  fmtInt,
  onRowKeyDown,
  When,
  SkeletonBlock,
  SkeletonRows,
  Stat,
  Tabs,
  toQuery,
  useNow,
  useRovingRows,
  useUrlFilters,
  OperationScopeFilters,
} from "@/components/queue/read-ui";
import { bucketLabeller, formatInstant } from "@/lib/time/format";
import { useTimeZone } from "@/components/time/When";
import { ScrollBox } from "@/components/ScrollBox";

/** GET /api/v1/expiry as the browser receives it (the server's type; dates as strings). */
type ExpiryResponse = Jsonified<ExpiryStats>;

const FILTER_KEYS = ["operation", "scope", "span"] as const;
const hourLabel = bucketLabeller(3600, 86_400_000);
const dayLabel = bucketLabeller(86_400, Infinity);

/** Expiry & retention: when records stop protecting their intent, and what expired but is still there. */
export function ExpiryScreen() {
  const [f, setFilters] = useUrlFilters(FILTER_KEYS);
  const now = useNow();
  const timeZone = useTimeZone();
  const span = f.span === "30d" ? "30d" : "24h";
  const params = useMemo(() => ({ operation: f.operation || undefined, scope: f.scope || undefined }), [f.operation, f.scope]);
  const query = useQuery({
    queryKey: queryKeys.expiry.stats(params),
    queryFn: () => apiFetch<ExpiryResponse>(`/api/v1/expiry?${toQuery(params)}`),
    placeholderData: keepPreviousData,
    retry: retryUnlessClientError,
  });
  const data = query.data;
  const expiredRows = useRovingRows(data?.expired.groups.length ?? 0);

  const rows = useMemo(() => {
    if (!data) return [];
    const buckets = span === "24h" ? data.next24h : data.next30d;
    return buckets.map((b) => ({ label: (span === "24h" ? hourLabel : dayLabel)(b.start), records: b.count }));
  }, [data, span]);

  const byOperation = useMemo(() => {
    const m = new Map<string, { count: number; purgeable: number; legalHold: number; openReconciliation: number; unfinished: number }>();
    for (const g of data?.expired.groups ?? []) {
      const o = m.get(g.operation) ?? { count: 0, purgeable: 0, legalHold: 0, openReconciliation: 0, unfinished: 0 };
      o.count += g.count;
      o.purgeable += g.purgeable;
      o.legalHold += g.legalHold;
      o.openReconciliation += g.openReconciliation;
      if (g.status === "processing" || g.status === "pending") o.unfinished += g.count;
      m.set(g.operation, o);
    }
    return [...m.entries()].sort((a, b) => a[0].localeCompare(b[0]));
  }, [data]);
  const operations = useMemo(() => byOperation.map(([op]) => op), [byOperation]);

  return (
    <div className="rs-screen" data-testid="expiry-screen">
      <div className="rs-filters" role="group" aria-label="Expiry filters">
        <OperationScopeFilters
          key={`${f.operation}|${f.scope}`}
          operation={f.operation}
          scope={f.scope}
          operations={operations}
          listId="expiry-operations"
          onApply={(p) => setFilters(p)}
        />
        <div className="rs-filter-actions">
          <button type="button" onClick={() => void query.refetch()} disabled={query.isFetching}>
            {query.isFetching ? "Refreshing…" : "Refresh"}
          </button>
          {data ? (
            <span className="subtle">
              as of <When iso={data.asOf} now={now} />
            </span>
          ) : null}
        </div>
      </div>

      {query.isError && !data ? (
        <ErrorState error={query.error} onRetry={() => void query.refetch()} />
      ) : !data ? (
        <>
          <div className="cards">
            {[0, 1, 2, 3].map((i) => (
              <SkeletonBlock key={i} height={86} />
            ))}
          </div>
          <SkeletonBlock height={260} label="Loading the expiry histogram" />
          <SkeletonRows cols={7} label="Loading expired records" />
        </>
      ) : (
        <>
          {query.isError ? <ErrorState error={query.error} onRetry={() => void query.refetch()} /> : null}
          <section className="cards" aria-label="Expiry in numbers">
            <Stat label="Expiring in 24 h" value={<span data-testid="expiring-24h">{fmtInt(data.expiringNext24h)}</span>} />
            <Stat label="Expiring in 30 days" value={<span data-testid="expiring-30d">{fmtInt(data.expiringNext30d)}</span>} />
            <Stat
              label="Expired, not purged"
              value={<span data-testid="expired-total">{fmtInt(data.expired.total)}</span>}
              hint="still in the table past expires_at"
            />
            <Stat
              label="Purge candidates"
              value={<span data-testid="purgeable-total">{fmtInt(data.expired.purgeable)}</span>}
              hint="read-only preview, see below"
            />
          </section>

          <section aria-labelledby="hist-h">
            <div className="toolbar">
              <h2 id="hist-h" className="section-title">
                When records expire
              </h2>
              <Tabs
                label="Histogram span"
                value={span}
                onChange={(v) => setFilters({ span: v === "24h" ? undefined : v })}
                tabs={[
                  { value: "24h", label: "Next 24 hours, by hour" },
                  { value: "30d", label: "Next 30 days, by day" },
                ]}
              />
            </div>
            <div id="tabpanel" role="tabpanel" aria-labelledby={`tab-${span}`}>
              <Chart
                kind="bar"
                rows={rows}
                emptyText={span === "24h" ? "No record expires in the next 24 hours." : "No record expires in the next 30 days."}
                x="label"
                series={[{ key: "records", label: "records expiring" }]}
                title={
                  span === "24h"
                    ? `Records expiring per clock hour (UTC) from ${formatInstant(data.asOf, timeZone, { seconds: false })} (${fmtInt(data.expiringNext24h)} in all)`
                    : `Records expiring per day (UTC) from ${formatInstant(data.asOf, timeZone, { seconds: false })} (${fmtInt(data.expiringNext30d)} in all)`
                }
                yFormat={(v) => fmtInt(v)}
                testId="expiry-histogram"
              />
            </div>
          </section>

          <section aria-labelledby="expired-h">
            <h2 id="expired-h" className="section-title">
              Expired but not purged, by operation and status
            </h2>
            {data.expired.groups.length === 0 ? (
              <EmptyState title="Nothing expired is left over." testId="expired-empty">
                Every record past its expires_at has been purged{params.operation || params.scope ? " (for these filters)" : ""}.
              </EmptyState>
            ) : (
              <ScrollBox label="Expiry per operation" className="rs-table-wrap">
                <table className="rs-table" data-testid="expired-table">
                  <thead>
                    <tr>
                      <th>Operation</th>
                      <th>Status</th>
                      <th className="num">Records</th>
                      <th className="num">Legal hold</th>
                      <th className="num">Open reconciliation</th>
                      <th className="num">Purge candidates</th>
                      <th>Oldest expiry</th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.expired.groups.map((g, n) => (
                      <tr
                        key={`${g.operation}|${g.status}`}
                        data-row
                        {...expiredRows(n)}
                        onKeyDown={onRowKeyDown}
                        data-testid="expired-row"
                        data-operation={g.operation}
                        data-status={g.status}
                      >
                        <td>{g.operation}</td>
                        <td>
                          <span className={`rs-status ${g.status}`}>
                            <span className={`dot ${g.status}`} aria-hidden /> {g.status}
                          </span>
                        </td>
                        <td className="num" data-testid="expired-count">
                          {fmtInt(g.count)}
                        </td>
                        <td className="num">{fmtInt(g.legalHold)}</td>
                        <td className="num">{fmtInt(g.openReconciliation)}</td>
                        <td className="num" data-testid="expired-purgeable">
                          {fmtInt(g.purgeable)}
                        </td>
                        <td className="nowrap">
                          <When iso={g.oldestExpiresAt} now={now} />
                        </td>
                      </tr>
                    ))}
                  </tbody>
                  <tfoot>
                    <tr>
                      <th colSpan={2}>All</th>
                      <td className="num">{fmtInt(data.expired.total)}</td>
                      <td className="num">{fmtInt(data.expired.groups.reduce((s, g) => s + g.legalHold, 0))}</td>
                      <td className="num">{fmtInt(data.expired.groups.reduce((s, g) => s + g.openReconciliation, 0))}</td>
                      <td className="num">{fmtInt(data.expired.purgeable)}</td>
                      <td />
                    </tr>
                  </tfoot>
                </table>
              </ScrollBox>
            )}
          </section>

          <section className="rs-preview" aria-labelledby="preview-h" data-testid="retention-preview">
            <h2 id="preview-h" className="section-title">
              What a retention purge would remove <span className="rs-badge">read-only preview</span>
            </h2>
            <p className="subtle">
              Under the current retention policies, a purge removes <code>completed</code> and <code>failed</code> records past their policy&apos;s window (days
              after <code>expires_at</code>) without a legal hold on the record or its scope, an open reconciliation item, a compensation in progress or an
              unsent outbox message; it never touches <code>processing</code> or <code>pending</code> ones, and with no policy it removes nothing. Nothing is
              removed from this page: policies, the dry run and purge runs are on <a href="/retention">Retention</a>. As of <When iso={data.asOf} now={now} />:
            </p>
            {byOperation.length === 0 ? (
              <EmptyState title="Nothing to purge." />
            ) : (
              <ScrollBox label="Expired, not purged" className="rs-table-wrap">
                <table className="rs-table" data-testid="preview-table">
                  <thead>
                    <tr>
                      <th>Operation</th>
                      <th className="num">Would remove</th>
                      <th className="num">Kept: legal hold</th>
                      <th className="num">Kept: open reconciliation</th>
                      <th className="num">Kept: still processing / pending</th>
                    </tr>
                  </thead>
                  <tbody>
                    {byOperation.map(([op, o]) => (
                      <tr key={op} data-testid="preview-row" data-operation={op}>
                        <td>{op}</td>
                        <td className="num">
                          <strong>{fmtInt(o.purgeable)}</strong>
                        </td>
                        <td className="num">{fmtInt(o.legalHold)}</td>
                        <td className="num">{fmtInt(o.openReconciliation)}</td>
                        <td className="num">{fmtInt(o.unfinished)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </ScrollBox>
            )}
          </section>
        </>
      )}
    </div>
  );
}
