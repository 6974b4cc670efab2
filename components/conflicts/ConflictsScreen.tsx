"use client";

import type { Jsonified } from "@/lib/api/json";
import type { ConflictStats } from "@/lib/stats/conflicts";
import { keepPreviousData, useInfiniteQuery } from "@tanstack/react-query";
import { useMemo } from "react";
import { Chart } from "@/components/charts/Chart";
import { apiFetch, retryUnlessClientError } from "@/components/client/api";
import { queryKeys } from "@/components/client/query-keys";
import {
  EmptyState,
  ErrorState,
  ExportLink,
  fmtInt,
  fmtPercent,
  Mono,
  onRowKeyDown,
  pageSize,
  RangePicker,
  When,
  resolveRange,
  SkeletonBlock,
  SkeletonRows,
  Stat,
  toQuery,
  useNow,
  useRovingRows,
  useUrlFilters,
  OperationScopeFilters,
} from "@/components/queue/read-ui";
import { bucketLabeller } from "@/lib/time/format";
import { ScrollBox } from "@/components/ScrollBox";

/** GET /api/v1/conflicts as the browser receives it (the server's type; dates as strings). */
type ConflictsResponse = Jsonified<ConflictStats>;

const FILTER_KEYS = ["range", "from", "to", "bucket", "operation", "scope", "limit"] as const;
const RANGES = ["24h", "7d", "30d", "90d"];
const DEFAULT_RANGE = "7d";
const DAY_MS = 86_400_000;
const PAGE_SIZE = 50;

const hourLabel = bucketLabeller(3600, Infinity);
const dayLabel = bucketLabeller(86_400, Infinity);

type PageParam = { cursor: string; from: string; to: string } | null;

/** Conflicts: key reuse with a different payload, by operation and scope, trend, and every conflicting request. */
export function ConflictsScreen({ canExport }: { canExport: boolean }) {
  const [f, setFilters] = useUrlFilters(FILTER_KEYS);
  const now = useNow();
  const params = useMemo(
    () => ({
      range: f.from || f.to ? undefined : f.range || DEFAULT_RANGE,
      from: f.from || undefined,
      to: f.to || undefined,
      bucket: f.bucket === "hour" || f.bucket === "day" ? f.bucket : undefined,
      operation: f.operation || undefined,
      scope: f.scope || undefined,
    }),
    [f.range, f.from, f.to, f.bucket, f.operation, f.scope],
  );
  const rangeMs = useMemo(() => {
    const r = resolveRange({ range: params.range ?? "", from: params.from ?? "", to: params.to ?? "" }, DEFAULT_RANGE);
    return Date.parse(r.to) - Date.parse(r.from);
  }, [params]);

  const limit = pageSize(f.limit, PAGE_SIZE);
  const query = useInfiniteQuery({
    queryKey: queryKeys.conflicts.list({ ...params, limit }),
    queryFn: ({ pageParam }: { pageParam: PageParam }) => {
      // Later pages keep the first page's from/to, so "the last 7 days" does not move under the cursor.
      const range = pageParam ?? resolveRange({ range: params.range ?? "", from: params.from ?? "", to: params.to ?? "" }, DEFAULT_RANGE);
      return apiFetch<ConflictsResponse>(
        `/api/v1/conflicts?${toQuery({
          from: range.from,
          to: range.to,
          bucket: params.bucket,
          operation: params.operation,
          scope: params.scope,
          limit,
          cursor: pageParam?.cursor,
        })}`,
      );
    },
    initialPageParam: null as PageParam,
    getNextPageParam: (last): PageParam | undefined => (last.events.nextCursor ? { cursor: last.events.nextCursor, from: last.from, to: last.to } : undefined),
    placeholderData: keepPreviousData,
    retry: retryUnlessClientError,
  });
  const first = query.data?.pages[0];
  const events = useMemo(() => query.data?.pages.flatMap((p) => p.events.items) ?? [], [query.data]);
  const groupRows = useRovingRows(first?.groups.length ?? 0);
  const eventRows = useRovingRows(events.length);

  const operations = useMemo(() => {
    if (!first) return [];
    return [
      ...new Set([...first.rates.map((r) => r.operation), ...first.groups.map((g) => g.operation), ...first.trend.flatMap((t) => Object.keys(t.counts))]),
    ].sort();
  }, [first]);
  const chartOps = useMemo(() => (first ? operations.filter((op) => first.trend.some((t) => (t.counts[op] ?? 0) > 0)) : []), [first, operations]);
  const chartRows = useMemo(
    () =>
      first
        ? first.trend.map((t) => ({
            label: (first.bucket === "hour" ? hourLabel : dayLabel)(t.bucket),
            ...Object.fromEntries(chartOps.map((op) => [op, t.counts[op] ?? 0])),
          }))
        : [],
    [first, chartOps],
  );
  const totals = useMemo(() => {
    if (!first) return null;
    const requests = first.rates.reduce((s, r) => s + r.requests, 0);
    const conflicts = first.rates.reduce((s, r) => s + r.conflicts, 0);
    return { requests, rate: requests ? conflicts / requests : null, keys: first.groups.reduce((s, g) => s + g.keys, 0) };
  }, [first]);
  const exportQuery = first ? toQuery({ from: first.from, to: first.to, bucket: params.bucket, operation: params.operation, scope: params.scope }) : "";

  return (
    <div className="rs-screen" data-testid="conflicts-screen">
      <div className="rs-filters" role="group" aria-label="Conflict filters">
        <RangePicker
          key={`${f.range}|${f.from}|${f.to}`}
          values={f}
          presets={RANGES}
          fallback={DEFAULT_RANGE}
          onChange={(patch) => setFilters({ ...patch, bucket: patch.range === "90d" && params.bucket === "hour" ? undefined : params.bucket })}
        />
        <label>
          Trend by
          <select value={params.bucket ?? ""} onChange={(e) => setFilters({ bucket: e.target.value })}>
            <option value="">auto</option>
            <option value="hour" disabled={rangeMs > 31 * DAY_MS}>
              hour{rangeMs > 31 * DAY_MS ? " (≤ 31 days)" : ""}
            </option>
            <option value="day">day</option>
          </select>
        </label>
        <OperationScopeFilters
          key={`${f.operation}|${f.scope}`}
          operation={f.operation}
          scope={f.scope}
          operations={operations}
          listId="conflict-operations"
          scopeLabel="Scope (client)"
          onApply={(p) => setFilters(p)}
        />
        <div className="rs-filter-actions">
          <ExportLink list="conflicts" query={exportQuery} canExport={canExport && Boolean(first)} />
        </div>
      </div>

      {query.isError && !first ? (
        <ErrorState error={query.error} onRetry={() => void query.refetch()} />
      ) : !first || !totals ? (
        <>
          <div className="cards">
            {[0, 1, 2, 3].map((i) => (
              <SkeletonBlock key={i} height={86} />
            ))}
          </div>
          <SkeletonBlock height={260} label="Loading the trend" />
          <SkeletonRows cols={6} label="Loading conflicts" />
        </>
      ) : (
        <>
          <section className="cards" aria-label="Conflicts in this range">
            <Stat
              label="Conflicts"
              value={<span data-testid="conflicts-total">{fmtInt(first.total)}</span>}
              hint="requests refused: key reused, payload changed"
            />
            <Stat label="Keys reused" value={fmtInt(totals.keys)} hint="distinct keys per operation and scope" />
            <Stat label="Conflict rate" value={fmtPercent(totals.rate)} hint={`of ${fmtInt(totals.requests)} requests`} />
            <Stat label="Operation · scope pairs" value={fmtInt(first.groups.length)} />
          </section>

          <Chart
            kind="stacked-bar"
            rows={first.total === 0 ? [] : chartRows}
            x="label"
            series={chartOps.map((op) => ({ key: op, label: op }))}
            title={`Conflicts per ${first.bucket} (UTC) by operation`}
            emptyText="No conflicts in this range: no key was reused with a different payload."
            yFormat={(v) => fmtInt(v)}
            testId="conflicts-trend"
          />

          <div className="rs-two">
            <section aria-labelledby="rates-h">
              <h2 id="rates-h" className="section-title">
                Rate per operation
              </h2>
              {first.rates.length === 0 ? (
                <EmptyState title="No requests in this range." />
              ) : (
                <ScrollBox label="Conflicts per operation" className="rs-table-wrap">
                  <table className="rs-table" data-testid="rates-table">
                    <thead>
                      <tr>
                        <th>Operation</th>
                        <th className="num">Conflicts</th>
                        <th className="num">Requests</th>
                        <th className="num">Rate</th>
                      </tr>
                    </thead>
                    <tbody>
                      {first.rates.map((r) => (
                        <tr key={r.operation} data-testid="rate-row" data-operation={r.operation}>
                          <td>{r.operation}</td>
                          <td className="num" data-testid="rate-conflicts">
                            {fmtInt(r.conflicts)}
                          </td>
                          <td className="num" data-testid="rate-requests">
                            {fmtInt(r.requests)}
                          </td>
                          <td className="num">{fmtPercent(r.rate)}</td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </ScrollBox>
              )}
            </section>

            <section aria-labelledby="groups-h">
              <h2 id="groups-h" className="section-title">
                By operation and scope
              </h2>
              {first.groups.length === 0 ? (
                <EmptyState title="No conflicts in this range." testId="conflicts-empty">
                  No key was reused with a different payload{params.operation || params.scope ? " for these filters" : ""}.
                </EmptyState>
              ) : (
                <ScrollBox label="Conflicts per key" className="rs-table-wrap">
                  <table className="rs-table" data-testid="groups-table">
                    <thead>
                      <tr>
                        <th>Operation</th>
                        <th>Scope</th>
                        <th className="num">Conflicts</th>
                        <th className="num">Keys</th>
                        <th>Last</th>
                        <th>
                          <span className="sr-only">Drill down</span>
                        </th>
                      </tr>
                    </thead>
                    <tbody>
                      {first.groups.map((g, n) => {
                        const active = params.operation === g.operation && params.scope === g.scope;
                        return (
                          <tr
                            key={`${g.operation}|${g.scope}`}
                            data-row
                            {...groupRows(n)}
                            onKeyDown={(e) => {
                              if (e.target === e.currentTarget && e.key === "Enter") {
                                e.preventDefault();
                                setFilters({ operation: g.operation, scope: g.scope });
                              } else onRowKeyDown(e);
                            }}
                            data-testid="conflict-group"
                            data-operation={g.operation}
                            data-scope={g.scope}
                            className={active ? "rs-selected" : undefined}
                          >
                            <td>{g.operation}</td>
                            <td>{g.scope}</td>
                            <td className="num" data-testid="group-conflicts">
                              {fmtInt(g.conflicts)}
                            </td>
                            <td className="num">{fmtInt(g.keys)}</td>
                            <td className="nowrap">
                              <When iso={g.lastAt} now={now} />
                            </td>
                            <td>
                              {active ? (
                                <span className="subtle">shown below</span>
                              ) : (
                                <button type="button" className="rs-link-button" onClick={() => setFilters({ operation: g.operation, scope: g.scope })}>
                                  Keys
                                </button>
                              )}
                            </td>
                          </tr>
                        );
                      })}
                    </tbody>
                  </table>
                </ScrollBox>
              )}
            </section>
          </div>

          <section aria-labelledby="events-h">
            <h2 id="events-h" className="section-title">
              Conflicting requests{params.operation ? ` · ${params.operation}` : ""}
              {params.scope ? ` · ${params.scope}` : ""} <span className="subtle">newest first</span>
            </h2>
            {events.length === 0 ? (
              <EmptyState title="No conflicting requests." />
            ) : (
              <ScrollBox label="Conflict events" className="rs-table-wrap">
                <table className="rs-table" data-testid="events-table">
                  <caption className="sr-only">Each request that reused a key with another payload: the stored hash and the one received.</caption>
                  <thead>
                    <tr>
                      <th>When</th>
                      <th>Operation</th>
                      <th>Scope</th>
                      <th>Key</th>
                      <th title="payload hash stored with the key (expected)">Stored hash</th>
                      <th title="payload hash of the refused request">Received hash</th>
                    </tr>
                  </thead>
                  <tbody>
                    {events.map((e, n) => (
                      <tr key={e.id} data-row {...eventRows(n)} onKeyDown={onRowKeyDown} data-testid="conflict-event" data-id={e.id}>
                        <td className="nowrap">
                          <When iso={e.occurredAt} now={now} />
                        </td>
                        <td>{e.operation}</td>
                        <td>{e.scope}</td>
                        <td>
                          {e.recordId ? (
                            <a href={`/records/${e.recordId}`} title={e.idempotencyKey}>
                              <Mono value={e.idempotencyKey} max={24} />
                            </a>
                          ) : (
                            <Mono value={e.idempotencyKey} max={24} />
                          )}
                        </td>
                        <td>
                          <Mono value={e.expectedPayloadHash} max={12} />
                        </td>
                        <td>
                          <Mono value={e.receivedPayloadHash} max={12} />
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </ScrollBox>
            )}
            <div className="rs-more">
              <span className="subtle">
                {fmtInt(events.length)} of {fmtInt(first.total)} shown · <When iso={first.from} age={false} seconds={false} /> –{" "}
                <When iso={first.to} age={false} seconds={false} />
              </span>
              {query.hasNextPage ? (
                <button type="button" data-testid="load-more" disabled={query.isFetchingNextPage} onClick={() => void query.fetchNextPage()}>
                  {query.isFetchingNextPage ? "Loading…" : "Load more"}
                </button>
              ) : null}
              <button type="button" onClick={() => void query.refetch()} disabled={query.isFetching}>
                {query.isFetching && !query.isFetchingNextPage ? "Refreshing…" : "Refresh"}
              </button>
            </div>
            {query.isError ? <ErrorState error={query.error} onRetry={() => void query.refetch()} /> : null}
          </section>
        </>
      )}
    </div>
  );
}
