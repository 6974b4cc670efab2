"use client";

import type { Jsonified } from "@/lib/api/json";
import type { Page } from "@/lib/db/paging";
import type { SearchHit } from "@/lib/records/search";
import { useInfiniteQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { useEffect, useRef, useState, type FormEvent, type KeyboardEvent } from "react";
import { apiFetch, retryUnlessClientError } from "@/components/client/api";
import { queryKeys } from "@/components/client/query-keys";
import { filtersQuery, type SearchFilterKey, type SearchFilters } from "./search-filters";
import { SavedViews } from "./SavedViews";
import { ExportLink, formatMoney, SkeletonRows, StatusBadge } from "./ui";
import { When } from "@/components/time/When";
import { ScrollBox } from "@/components/ScrollBox";

/**
 * /records: one search box, a field selector and exact/prefix, plus status and operation
 * filters — all kept in the URL (shareable, savable as a view). Results come from
 * GET /api/v1/records (newest first, keyset "Load more"). Keyboard: "/" focuses the
 * search box, Enter searches, ↑/↓ move between result rows, Enter opens one.
 */

const FIELDS: [string, string][] = [
  ["", "Any field"],
  ["key", "Idempotency key"],
  ["scope", "Scope"],
  ["provider_reference", "Provider reference"],
  ["provider_request_id", "Provider request id"],
  ["correlation_id", "Correlation id"],
  ["resource_id", "Resource id"],
];
const STATUSES = ["processing", "pending", "completed", "failed"];
const OPERATIONS = ["create_order", "capture_payment", "accept_webhook", "issue_invoice", "refund_payment"];

/** GET /api/v1/records as the browser receives it (the server's type; bigints and dates as strings). */
type SearchPage = Jsonified<Page<SearchHit>>;

function isTyping(target: EventTarget | null): boolean {
  const el = target as HTMLElement | null;
  return !!el && (el.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(el.tagName));
}

export function RecordSearch({ filters, canExport }: { filters: SearchFilters; canExport: boolean }) {
  const router = useRouter();
  const [form, setForm] = useState<SearchFilters>({ match: "exact", ...filters });
  const input = useRef<HTMLInputElement>(null);
  const tbody = useRef<HTMLTableSectionElement>(null);
  const qs = filtersQuery(filters);

  const results = useInfiniteQuery({
    queryKey: queryKeys.records.search({ qs }),
    initialPageParam: null as string | null,
    queryFn: ({ pageParam }) => {
      const params = new URLSearchParams(qs);
      if (pageParam) params.set("cursor", pageParam);
      const query = params.toString();
      return apiFetch<SearchPage>(`/api/v1/records${query ? `?${query}` : ""}`);
    },
    retry: retryUnlessClientError,
    getNextPageParam: (last) => last.nextCursor,
  });

  // "/" focuses the search box from anywhere on the page (unless typing somewhere).
  useEffect(() => {
    const onKey = (e: globalThis.KeyboardEvent) => {
      if (e.key === "/" && !e.ctrlKey && !e.metaKey && !e.altKey && !isTyping(e.target)) {
        e.preventDefault();
        input.current?.focus();
        input.current?.select();
      }
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, []);

  function search(e: FormEvent) {
    e.preventDefault();
    const next = filtersQuery(form);
    if (next === qs) void results.refetch();
    else router.push(`/records${next ? `?${next}` : ""}`);
  }

  /** ↑/↓ between the rows' links. */
  function onRowsKey(e: KeyboardEvent<HTMLTableSectionElement>) {
    if (e.key !== "ArrowDown" && e.key !== "ArrowUp") return;
    const links = [...(tbody.current?.querySelectorAll<HTMLAnchorElement>("a.row-link") ?? [])];
    const at = links.indexOf(document.activeElement as HTMLAnchorElement);
    const next = links[e.key === "ArrowDown" ? Math.min(at + 1, links.length - 1) : Math.max(at - 1, 0)];
    if (next) {
      e.preventDefault();
      next.focus();
    }
  }

  const set = (key: SearchFilterKey) => (e: { target: { value: string } }) => setForm((f) => ({ ...f, [key]: e.target.value }));
  const rows = results.data?.pages.flatMap((p) => p.items) ?? [];
  const prefix = form.match === "prefix";

  return (
    <>
      <form className="record-search" role="search" aria-label="Search records" onSubmit={search}>
        <div className="search-main">
          <input
            ref={input}
            type="search"
            data-testid="search-input"
            aria-label="Search for"
            placeholder="Idempotency key, scope, provider reference, correlation id…  (press / to focus)"
            maxLength={255}
            value={form.q ?? ""}
            onChange={set("q")}
          />
          <select aria-label="Field" data-testid="search-field" value={form.field ?? ""} onChange={set("field")}>
            {FIELDS.map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
          <div className="segmented" role="radiogroup" aria-label="Match">
            {(["exact", "prefix"] as const).map((m) => (
              <label key={m} className={(form.match ?? "exact") === m ? "on" : undefined}>
                <input type="radio" name="match" value={m} data-testid={`match-${m}`} checked={(form.match ?? "exact") === m} onChange={set("match")} />
                {m === "exact" ? "Exact" : "Starts with"}
              </label>
            ))}
          </div>
          <button type="submit" className="primary" data-testid="search-submit">
            Search
          </button>
        </div>
        <div className="search-filters">
          <label>
            Status
            <select value={form.status ?? ""} onChange={set("status")} data-testid="search-status">
              <option value="">any</option>
              {STATUSES.map((s) => (
                <option key={s} value={s}>
                  {s}
                </option>
              ))}
            </select>
          </label>
          <label>
            Operation
            <input list="record-operations" value={form.operation ?? ""} onChange={set("operation")} placeholder="any" maxLength={100} />
            <datalist id="record-operations">
              {OPERATIONS.map((o) => (
                <option key={o} value={o} />
              ))}
            </datalist>
          </label>
          {qs ? (
            <Link href="/records" className="subtle">
              Clear
            </Link>
          ) : null}
          <span className="subtle search-hint">{prefix ? "Starts with: matches literally (% and _ are not wildcards)." : "Exact match, from indexes."}</span>
        </div>
      </form>

      <div className="toolbar list-actions">
        <SavedViews page="/records" />
        {canExport ? <ExportLink list="records" query={qs} /> : null}
      </div>

      {results.isError ? (
        <div className="error-box" role="alert" data-testid="records-error">
          <p>{results.error.message}</p>
          <button type="button" onClick={() => void results.refetch()}>
            Try again
          </button>
        </div>
      ) : null}

      <ScrollBox label="Records">
        <table className="data-table records-table" data-testid="records-table">
          <caption className="visually-hidden">Records, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Status</th>
              <th scope="col">Operation</th>
              <th scope="col">Scope</th>
              <th scope="col">Idempotency key</th>
              <th scope="col" className="num">
                Amount
              </th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody ref={tbody} onKeyDown={onRowsKey}>
            {results.isPending ? <SkeletonRows columns={6} testId="records-skeleton" /> : null}
            {rows.map((r) => (
              <tr
                key={r.id}
                data-testid="record-row"
                className="clickable"
                onClick={(e) => !(e.target as HTMLElement).closest("a") && router.push(`/records/${r.id}`)}
              >
                <td>
                  <StatusBadge status={r.status} />
                </td>
                <td>{r.operation}</td>
                <td className="truncate" title={r.scope}>
                  {r.scope}
                </td>
                <td className="mono truncate" title={r.idempotencyKey}>
                  <Link className="row-link" href={`/records/${r.id}`} data-testid="record-link">
                    {r.idempotencyKey}
                  </Link>
                  {r.matched.length && !filters.field ? <span className="matched"> · {r.matched.join(", ").replace(/_/g, " ")}</span> : null}
                </td>
                <td className="num">{formatMoney(r.amountMinor, r.currency)}</td>
                <td className="nowrap">
                  <When iso={r.createdAt} />
                </td>
              </tr>
            ))}
            {results.isSuccess && rows.length === 0 ? (
              <tr>
                <td colSpan={6}>
                  <div className="empty-state" data-testid="records-empty">
                    <strong>No records match.</strong>
                    <span className="subtle">
                      {filters.q
                        ? `Nothing ${filters.match === "prefix" ? "starts with" : "equals"} “${filters.q}”${filters.field ? ` in ${FIELDS.find(([v]) => v === filters.field)?.[1].toLowerCase()}` : " in any field"}. Try “Starts with”, another field, or fewer filters.`
                        : "There are no records with these filters."}
                    </span>
                  </div>
                </td>
              </tr>
            ) : null}
          </tbody>
        </table>
      </ScrollBox>
      <div className="list-more">
        {results.isFetchingNextPage ? <span className="subtle">Loading…</span> : null}
        {results.hasNextPage && !results.isFetchingNextPage ? (
          <button type="button" data-testid="load-more" onClick={() => void results.fetchNextPage()}>
            Load more
          </button>
        ) : null}
        {results.isSuccess && rows.length > 0 && !results.hasNextPage ? (
          <span className="subtle">
            {rows.length.toLocaleString("en")} record{rows.length === 1 ? "" : "s"} — the end of the list
          </span>
        ) : null}
      </div>
    </>
  );
}
