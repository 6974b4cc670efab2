"use client";

import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useEffect, useState, type FormEvent } from "react";
import { apiFetch } from "@/components/client/api";
import { queryKeys } from "@/components/client/query-keys";
import {
  EmptyState,
  ErrorState,
  fmtInt,
  RangePicker,
  When,
  resolveRange,
  SkeletonBlock,
  SkeletonRows,
  toQuery,
  useNow,
  useUrlFilters,
} from "@/components/queue/read-ui";
import { OperationTable } from "./OperationTable";
import { OverviewCards, StatusCards } from "./OverviewCards";
import { OverviewCharts } from "./OverviewCharts";
import { RefreshControl, useRefreshInterval } from "./RefreshControl";
import type { OverviewJson } from "./types";

/**
 * The overview screen: GET /api/v1/stats/overview through TanStack Query. The range
 * (preset `range=1h|24h|7d|30d`, or custom `from`/`to`) and the `operation`/`scope`
 * filters live in the URL, so a view is a link; the refresh interval is the user's
 * (RefreshControl). A preset range is resolved to from/to at every fetch ("the last 24 h"
 * moves with the clock); the range the data covers is the response's own from/to.
 */
const KEYS = ["range", "from", "to", "operation", "scope"] as const;
const PRESETS = ["1h", "24h", "7d", "30d"];
const DEFAULT_RANGE = "24h";

export function OverviewDashboard({ subtitle }: { subtitle: string }) {
  const [values, update] = useUrlFilters(KEYS);
  const [refreshMs, setRefreshMs] = useRefreshInterval();
  const now = useNow(15_000);

  const query = useQuery({
    queryKey: queryKeys.overview.range({
      range: values.range || DEFAULT_RANGE,
      from: values.from || undefined,
      to: values.to || undefined,
      operation: values.operation || undefined,
      scope: values.scope || undefined,
    }),
    queryFn: () => {
      const r = resolveRange(values, DEFAULT_RANGE);
      return apiFetch<OverviewJson>(`/api/v1/stats/overview?${toQuery({ from: r.from, to: r.to, operation: values.operation, scope: values.scope })}`);
    },
    refetchInterval: refreshMs || false,
    placeholderData: keepPreviousData,
  });
  const data = query.data;
  // The previous view's data while the new one loads (keepPreviousData): shown dimmed.
  const stale = query.isPlaceholderData;

  return (
    <div className="ov" data-testid="overview" data-from={data?.from} data-to={data?.to} aria-busy={query.isFetching}>
      <div className="toolbar">
        <div>
          <h1>Overview</h1>
          <p className="subtle">{subtitle}</p>
        </div>
        <RefreshControl
          asOf={data?.asOf ?? null}
          replica={data?.replica}
          ms={refreshMs}
          onMsChange={setRefreshMs}
          onRefresh={() => void query.refetch()}
          refreshing={query.isFetching}
        />
      </div>

      <div className="rs-filters ov-filters">
        <RangePicker values={values} presets={PRESETS} fallback={DEFAULT_RANGE} onChange={update} />
        <label>
          Operation
          <select aria-label="Operation" value={values.operation} onChange={(e) => update({ operation: e.target.value })}>
            <option value="">All operations</option>
            {[...new Set([...(data?.known.operations ?? []), ...(values.operation ? [values.operation] : [])])].sort().map((op) => (
              <option key={op} value={op}>
                {op}
              </option>
            ))}
          </select>
        </label>
        <ScopeFilter value={values.scope} scopes={data?.known.scopes ?? []} onApply={(scope) => update({ scope })} />
        {values.operation || values.scope || values.range || values.from || values.to ? (
          <div className="rs-filter-actions">
            <button type="button" onClick={() => update({ range: undefined, from: undefined, to: undefined, operation: undefined, scope: undefined })}>
              Reset view
            </button>
          </div>
        ) : null}
      </div>

      {data ? <RangeLine data={data} now={now} /> : null}

      {query.isError && data ? (
        <div className="notice error ov-notice" role="alert" data-testid="refresh-error">
          Showing the data as of <When iso={data.asOf} now={now} />: the latest refresh failed — {query.error.message}
        </div>
      ) : null}

      {query.isError && !data ? (
        <ErrorState error={query.error} onRetry={() => void query.refetch()} />
      ) : !data ? (
        <OverviewSkeleton />
      ) : (
        <div className={stale ? "ov-body ov-stale" : "ov-body"}>
          <StatusCards data={data} />
          <WriterDepartures data={data} now={now} />
          {data.records.total === 0 && data.events.total.requests === 0 ? (
            <EmptyState
              title={data.filters.operation || data.filters.scope ? "Nothing matches these filters" : "No idempotency records yet"}
              testId="overview-empty"
            >
              {data.filters.operation || data.filters.scope
                ? "No records and no requests for this operation and scope. Try another filter, or reset the view."
                : "Once services write idempotency_records and idempotency_events (see the README's writer contract), their numbers appear here."}
            </EmptyState>
          ) : null}
          <OverviewCards data={data} now={now} />
          <h2 className="section-title">By operation</h2>
          <OperationTable data={data} />
          <h2 className="section-title">Over time</h2>
          <OverviewCharts data={data} />
        </div>
      )}
    </div>
  );
}

/** The range the data covers, its bucket size, and how far the rollups lag behind. */
function RangeLine({ data, now }: { data: OverviewJson; now: number }) {
  const r = data.rollups;
  return (
    <p className="subtle ov-range" data-testid="overview-range">
      <span>
        <When iso={data.from} age={false} seconds={false} /> – <When iso={data.to} age={false} seconds={false} />
      </span>
      {data.filters.operation ? (
        <>
          {" "}
          · operation <code>{data.filters.operation}</code>
        </>
      ) : null}
      {data.filters.scope ? (
        <>
          {" "}
          · scope <code>{data.filters.scope}</code>
        </>
      ) : null}
      {" · "}
      <span title="Event counts are exact: day, hour, 15-minute and minute rollups plus the raw events they do not cover (partial minutes, events not rolled up yet).">
        rollups {r.lagEvents === 0 ? "up to date" : `${fmtInt(r.lagEvents)} events behind (counted raw)`}
        {r.refreshedAt ? (
          <>
            , refreshed <When iso={r.refreshedAt} now={now} />
          </>
        ) : (
          ", never refreshed"
        )}
      </span>
    </p>
  );
}

/**
 * What the record census saw writers do outside the protocol (moved expiry, deletes of their own,
 * records found late): the numbers stay exact — each is followed or repaired — but the services'
 * owners should know.
 */
function WriterDepartures({ data, now }: { data: OverviewJson; now: number }) {
  const d = data.census.departures;
  if (!d.length) return null;
  return (
    <div className="notice ov-notice" role="status" data-testid="writer-departures">
      <strong>Writers departed from the protocol</strong> — the numbers here stay exact (each record is counted where it is now), but the services should know:
      <ul>
        {d.map((x) => (
          <li key={x.kind} data-kind={x.kind}>
            {fmtInt(Number(x.records))} record(s): {x.description}; last seen <When iso={x.lastSeenAt} now={now} />.
          </li>
        ))}
      </ul>
    </div>
  );
}

function ScopeFilter({ value, scopes, onApply }: { value: string; scopes: string[]; onApply: (scope: string) => void }) {
  const [text, setText] = useState(value);
  useEffect(() => setText(value), [value]);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onApply(text);
  };
  return (
    <form className="rs-inline-form" onSubmit={submit} role="search" aria-label="Scope filter">
      <label>
        Scope
        <input
          type="text"
          value={text}
          onChange={(e) => setText(e.target.value)}
          list="ov-scopes"
          placeholder="all scopes, e.g. tenant:acme"
          spellCheck={false}
          autoComplete="off"
        />
      </label>
      <datalist id="ov-scopes">
        {scopes.map((s) => (
          <option key={s} value={s} />
        ))}
      </datalist>
      <button type="submit">Apply</button>
    </form>
  );
}

function OverviewSkeleton() {
  return (
    <div className="ov-body" data-testid="overview-loading">
      <SkeletonRows rows={2} cols={6} label="Loading the overview" />
      <SkeletonRows rows={1} cols={7} label="Loading" />
      <SkeletonRows rows={5} cols={10} label="Loading" />
      <div className="ov-charts">
        {[0, 1, 2, 3].map((i) => (
          <SkeletonBlock key={i} height={240} label="Loading chart" />
        ))}
      </div>
    </div>
  );
}
