"use client";

import type { Jsonified } from "@/lib/api/json";
import type { describeThresholds } from "@/lib/records/config";
import type { QueueResult } from "@/lib/records/queue";
import { keepPreviousData, useInfiniteQuery } from "@tanstack/react-query";
import { useMemo, useState, type FormEvent, type ReactNode } from "react";
import { apiFetch, retryUnlessClientError } from "@/components/client/api";
import { queryKeys } from "@/components/client/query-keys";
import { BulkCheck } from "./BulkCheck";
import {
  EmptyState,
  ErrorState,
  ExportLink,
  fmtDuration,
  fmtInt,
  fmtMoney,
  Mono,
  onRowKeyDown,
  pageSize,
  When,
  SkeletonRows,
  Tabs,
  toQuery,
  useNow,
  useRovingRows,
  useUrlFilters,
} from "./read-ui";
import { ScrollBox } from "@/components/ScrollBox";

/**
 * GET /api/v1/queue as the browser receives it (the server's type; bigints as decimal strings,
 * times as ISO 8601), with the thresholds described as the route sends them.
 */
export type QueueResponse = Omit<Jsonified<QueueResult>, "thresholds"> & { thresholds: ReturnType<typeof describeThresholds> };
export type QueueItemJson = QueueResponse["items"][number];

const FILTER_KEYS = ["kind", "operation", "scope", "status", "provider", "sort", "limit"] as const;
type Kind = "all" | "stuck" | "pending" | "reconciliation";
const KIND_LABEL: Record<QueueItemJson["kind"], string> = { stuck: "stuck", pending: "pending", reconciliation: "reconciliation" };
const PAGE_SIZE = 50;

/**
 * The stuck & pending queue: tabs per kind, URL filters, age sort, keyset "Load more", row selection for
 * the bulk "Check with provider" (typed confirmation, per-record outcomes: BulkCheck), and a "Resolve…"
 * link on each pending or stuck row to the record page's resolve panel.
 */
export function QueueScreen({ canExport, canReconcile, canResolve = canReconcile }: { canExport: boolean; canReconcile: boolean; canResolve?: boolean }) {
  const [f, setFilters] = useUrlFilters(FILTER_KEYS);
  const now = useNow();
  const kind: Kind = (["stuck", "pending", "reconciliation"] as const).find((k) => k === f.kind) ?? "all";
  const sort = f.sort === "age_asc" ? "age_asc" : "age_desc";
  const params = useMemo(
    () => ({
      kind: kind === "all" ? undefined : kind,
      operation: f.operation || undefined,
      scope: f.scope || undefined,
      status: f.status === "processing" || f.status === "pending" ? f.status : undefined,
      provider: f.provider || undefined,
      sort: sort === "age_desc" ? undefined : sort,
    }),
    [kind, f.operation, f.scope, f.status, f.provider, sort],
  );
  const filterQuery = toQuery(params);
  const limit = pageSize(f.limit, PAGE_SIZE);

  const query = useInfiniteQuery({
    queryKey: queryKeys.queue.list({ ...params, limit }),
    queryFn: ({ pageParam }) => apiFetch<QueueResponse>(`/api/v1/queue?${toQuery({ ...params, limit, cursor: pageParam ?? undefined })}`),
    initialPageParam: null as string | null,
    getNextPageParam: (last) => last.nextCursor,
    placeholderData: keepPreviousData,
    retry: retryUnlessClientError,
  });
  const pages = useMemo(() => query.data?.pages ?? [], [query.data]);
  const items = useMemo(() => pages.flatMap((p) => p.items), [pages]);
  const first = pages[0];

  // Selection: kept in component state (not in the URL), per filter set; "select all" = the rows loaded.
  const [selection, setSelection] = useState<{ filters: string; ids: Set<string> }>({ filters: filterQuery, ids: new Set() });
  const selected = selection.filters === filterQuery ? selection.ids : new Set<string>();
  const setSelected = (ids: Set<string>) => setSelection({ filters: filterQuery, ids });
  const toggle = (id: string) => {
    const next = new Set(selected);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    setSelected(next);
  };
  const allOnPage = items.length > 0 && items.every((i) => selected.has(i.id));
  const someOnPage = items.some((i) => selected.has(i.id));
  const roving = useRovingRows(items.length);

  const operations = useMemo(
    () => [...new Set([...Object.keys(first?.thresholds ?? {}).filter((k) => k !== "default"), ...items.map((i) => i.operation)])].sort(),
    [first, items],
  );
  const providers = useMemo(() => [...new Set(items.map((i) => i.provider).filter((p): p is string => Boolean(p)))].sort(), [items]);

  const summary = first?.summary;
  const tabs: { value: Kind; label: ReactNode; title?: string }[] = [
    { value: "all", label: "All" },
    {
      value: "stuck",
      label: <>Stuck processing {summary ? <span className="rs-count">{fmtInt(summary.stuck)}</span> : null}</>,
      title: "processing and unchanged for longer than its operation's threshold (count across all operations)",
    },
    {
      value: "pending",
      label: <>Pending {summary ? <span className="rs-count">{fmtInt(summary.pending)}</span> : null}</>,
      title: "outcome at the provider unknown, awaiting reconciliation (count across all operations)",
    },
    {
      value: "reconciliation",
      label: <>Other open reconciliation {summary ? <span className="rs-count">{fmtInt(summary.reconciliationOther)}</span> : null}</>,
      title: `records neither processing nor pending that still have an open reconciliation item (${summary ? fmtInt(summary.openReconciliation) : "…"} open items in all, pending ones included)`,
    },
  ];

  return (
    <div className="rs-screen" data-testid="queue-screen">
      <Tabs label="Queue" tabs={tabs} value={kind} onChange={(k) => setFilters({ kind: k === "all" ? undefined : k })} />

      <QueueFilters
        key={filterQuery}
        values={f}
        operations={operations}
        providers={providers}
        onApply={(patch) => setFilters(patch)}
        exportLink={<ExportLink list="queue" query={filterQuery} canExport={canExport} />}
      />

      {first ? (
        <p className="subtle rs-thresholds" data-testid="thresholds">
          Stuck after:{" "}
          {Object.entries(first.thresholds)
            .map(([op, d]) => `${op === "default" ? "any operation" : op} ${d}`)
            .join(" · ")}
          {summary?.oldestPendingSince ? (
            <>
              {" "}
              · oldest pending since <When iso={summary.oldestPendingSince} now={now} />
            </>
          ) : null}
          {summary?.oldestStuckSince ? (
            <>
              {" "}
              · oldest stuck since <When iso={summary.oldestStuckSince} now={now} />
            </>
          ) : null}
        </p>
      ) : null}

      <div className="rs-bulkbar" role="region" aria-label="Bulk actions" data-testid="bulk-bar">
        <span data-testid="selection-count" aria-live="polite">
          {fmtInt(selected.size)} selected
        </span>
        {selected.size > 0 ? (
          <button type="button" onClick={() => setSelected(new Set())}>
            Clear selection
          </button>
        ) : null}
        <BulkCheck
          selectedIds={[...selected]}
          canReconcile={canReconcile}
          onDone={() => {
            setSelected(new Set());
            void query.refetch();
          }}
        />
      </div>

      <div id="tabpanel" role="tabpanel" aria-labelledby={`tab-${kind}`}>
        {query.isError && !query.data ? (
          <ErrorState error={query.error} onRetry={() => void query.refetch()} />
        ) : query.isPending ? (
          <SkeletonRows cols={8} label="Loading the queue" />
        ) : items.length === 0 ? (
          <EmptyState title="Nothing is waiting here.">
            {kind === "reconciliation"
              ? "No completed or failed record has an open reconciliation item. Open items of pending and stuck records are shown on those rows, with attempts and next check."
              : filterQuery
                ? "No stuck, pending or open items match these filters."
                : "No record is stuck, pending or awaiting reconciliation."}
          </EmptyState>
        ) : (
          <ScrollBox label="Queue" className="rs-table-wrap" busy={query.isFetching}>
            <table className="rs-table" data-testid="queue-table">
              <caption className="sr-only">Stuck and pending records. Arrow keys move between rows, Space selects, Enter opens the record.</caption>
              <thead>
                <tr>
                  <th className="rs-check">
                    <input
                      type="checkbox"
                      aria-label="Select all rows on this page"
                      data-testid="select-all"
                      checked={allOnPage}
                      ref={(el) => {
                        if (el) el.indeterminate = someOnPage && !allOnPage;
                      }}
                      onChange={() => {
                        const next = new Set(selected);
                        for (const i of items) {
                          if (allOnPage) next.delete(i.id);
                          else next.add(i.id);
                        }
                        setSelected(next);
                      }}
                    />
                  </th>
                  <th>Kind</th>
                  <th>Record</th>
                  <th>Status</th>
                  <th>Provider</th>
                  <th className="num">Amount</th>
                  <th aria-sort={sort === "age_desc" ? "descending" : "ascending"}>
                    <button
                      type="button"
                      className="rs-sort"
                      data-testid="sort-age"
                      onClick={() => setFilters({ sort: sort === "age_desc" ? "age_asc" : undefined })}
                      title="Time in the current state (since the record last changed)"
                    >
                      Age {sort === "age_desc" ? "↓ oldest first" : "↑ newest first"}
                    </button>
                  </th>
                  <th>Reconciliation</th>
                </tr>
              </thead>
              <tbody>
                {items.map((i, n) => (
                  <tr
                    key={`${i.kind}:${i.id}`}
                    data-row
                    {...roving(n)}
                    data-testid="queue-row"
                    data-kind={i.kind}
                    data-id={i.id}
                    aria-selected={selected.has(i.id)}
                    className={selected.has(i.id) ? "rs-selected" : undefined}
                    onKeyDown={(e) => {
                      if (e.target === e.currentTarget && (e.key === " " || e.key === "x")) {
                        e.preventDefault();
                        toggle(i.id);
                      } else onRowKeyDown(e);
                    }}
                  >
                    <td className="rs-check">
                      <input
                        type="checkbox"
                        aria-label={`Select ${i.operation} ${i.idempotencyKey}`}
                        data-testid="row-select"
                        checked={selected.has(i.id)}
                        onChange={() => toggle(i.id)}
                      />
                    </td>
                    <td>
                      <span className={`rs-badge rs-kind-${i.kind}`}>{KIND_LABEL[i.kind]}</span>
                    </td>
                    <td className="rs-record">
                      <a href={`/records/${i.id}`} data-testid="record-link">
                        {i.operation}
                      </a>
                      {canResolve && (i.kind === "pending" || i.kind === "stuck") ? (
                        <>
                          {" "}
                          <a
                            href={`/records/${i.id}#resolve`}
                            className="rs-resolve-link"
                            data-testid="row-resolve"
                            title="Open the record to check it with the provider or resolve it by hand"
                          >
                            Resolve…
                          </a>
                        </>
                      ) : null}
                      <div>
                        <Mono value={i.idempotencyKey} max={28} />
                      </div>
                      <div className="subtle">{i.scope}</div>
                    </td>
                    <td>
                      <span className={`rs-status ${i.status}`}>
                        <span className={`dot ${i.status}`} aria-hidden /> {i.status}
                      </span>
                      {i.legalHold ? <div className="rs-badge">legal hold</div> : null}
                    </td>
                    <td>
                      {i.provider ?? <span className="subtle">—</span>}
                      {i.providerRequestId ? (
                        <div className="subtle" title="provider request id">
                          req <Mono value={i.providerRequestId} max={14} />
                        </div>
                      ) : null}
                      {i.providerReference ? (
                        <div className="subtle" title="provider reference">
                          ref <Mono value={i.providerReference} max={14} />
                        </div>
                      ) : null}
                    </td>
                    <td className="num">{fmtMoney(i.amountMinor, i.currency)}</td>
                    <td className="nowrap" title={`in this state since ${i.updatedAt}`}>
                      <strong>{fmtDuration(Math.max(0, (now - Date.parse(i.updatedAt)) / 1000))}</strong>
                      <div className="subtle">
                        since <When iso={i.updatedAt} now={now} />
                      </div>
                      {i.thresholdSeconds !== null ? <div className="subtle">threshold {fmtDuration(i.thresholdSeconds)}</div> : null}
                    </td>
                    <td>
                      {i.reconciliation ? (
                        <>
                          <span className="rs-badge">{i.reconciliation.state.replace("_", " ")}</span>{" "}
                          <span data-testid="attempts">
                            {fmtInt(i.reconciliation.attempts)} attempt{i.reconciliation.attempts === 1 ? "" : "s"}
                          </span>
                          <div className="subtle">
                            next check <When iso={i.reconciliation.nextCheckAt} now={now} />
                          </div>
                          {i.reconciliation.lastCheckedAt ? (
                            <div className="subtle">
                              last <When iso={i.reconciliation.lastCheckedAt} now={now} />
                            </div>
                          ) : null}
                          {i.reconciliation.lastError ? (
                            <div className="rs-error-text" title={i.reconciliation.lastError}>
                              {i.reconciliation.lastError.slice(0, 60)}
                            </div>
                          ) : null}
                        </>
                      ) : i.providerRequestId ? (
                        <span className="subtle">none open</span>
                      ) : (
                        <span className="subtle" data-testid="not-checkable">
                          none open · no provider request id: nothing to ask the provider, resolve it by hand
                        </span>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </ScrollBox>
        )}
        {query.isError && query.data ? <ErrorState error={query.error} onRetry={() => void query.refetch()} /> : null}
        <div className="rs-more">
          {items.length > 0 ? (
            <span className="subtle">
              {fmtInt(items.length)} shown
              {first ? (
                <>
                  {" "}
                  · as of <When iso={pages[pages.length - 1].asOf} now={now} />
                </>
              ) : null}
            </span>
          ) : null}
          {query.hasNextPage ? (
            <button type="button" data-testid="load-more" disabled={query.isFetchingNextPage} onClick={() => void query.fetchNextPage()}>
              {query.isFetchingNextPage ? "Loading…" : "Load more"}
            </button>
          ) : null}
          {!query.isPending ? (
            <button type="button" onClick={() => void query.refetch()} disabled={query.isFetching}>
              {query.isFetching && !query.isFetchingNextPage ? "Refreshing…" : "Refresh"}
            </button>
          ) : null}
        </div>
      </div>
    </div>
  );
}

function QueueFilters({
  values,
  operations,
  providers,
  onApply,
  exportLink,
}: {
  values: Record<(typeof FILTER_KEYS)[number], string>;
  operations: string[];
  providers: string[];
  onApply: (patch: Partial<Record<(typeof FILTER_KEYS)[number], string | undefined>>) => void;
  exportLink: ReactNode;
}) {
  const [form, setForm] = useState({ operation: values.operation, scope: values.scope, provider: values.provider });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onApply(form);
  };
  const any = values.operation || values.scope || values.provider || values.status;
  return (
    <form className="rs-filters" onSubmit={submit} aria-label="Queue filters">
      <label>
        Operation
        <input
          name="operation"
          list="queue-operations"
          value={form.operation}
          onChange={(e) => setForm({ ...form, operation: e.target.value })}
          placeholder="any"
          maxLength={100}
        />
        <datalist id="queue-operations">
          {operations.map((o) => (
            <option key={o} value={o} />
          ))}
        </datalist>
      </label>
      <label>
        Scope
        <input name="scope" value={form.scope} onChange={(e) => setForm({ ...form, scope: e.target.value })} placeholder="tenant:…" maxLength={200} />
      </label>
      <label>
        Provider
        <input
          name="provider"
          list="queue-providers"
          value={form.provider}
          onChange={(e) => setForm({ ...form, provider: e.target.value })}
          placeholder="any"
          maxLength={100}
        />
        <datalist id="queue-providers">
          {providers.map((o) => (
            <option key={o} value={o} />
          ))}
        </datalist>
      </label>
      <label>
        Status
        <select name="status" value={values.status} onChange={(e) => onApply({ ...form, status: e.target.value })}>
          <option value="">any</option>
          <option value="processing">processing (stuck)</option>
          <option value="pending">pending</option>
        </select>
      </label>
      <div className="rs-filter-actions">
        <button type="submit">Apply</button>
        {any ? (
          <button type="button" onClick={() => onApply({ operation: undefined, scope: undefined, provider: undefined, status: undefined })}>
            Clear filters
          </button>
        ) : null}
        {exportLink}
      </div>
    </form>
  );
}
