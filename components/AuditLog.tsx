"use client";

import { keepPreviousData, useInfiniteQuery, useMutation } from "@tanstack/react-query";
import { useRouter } from "next/navigation";
import { useMemo, useState, type FormEvent } from "react";
import type { Jsonified } from "@/lib/api/json";
import type { ChainVerification } from "@/lib/audit";
import type { AuditEntryJson, AuditFilterKey, AuditFilterValues } from "@/lib/audit/query";
import { apiFetch, retryUnlessClientError } from "@/components/client/api";
import { queryKeys } from "@/components/client/query-keys";
import { InstantInput, When } from "@/components/time/When";
import { ScrollBox } from "@/components/ScrollBox";

/** GET /api/v1/audit/verify as the browser receives it (the server's type). */
type ChainResult = Jsonified<ChainVerification>;
/** GET /api/v1/audit: one page of entries, newest first. */
type AuditPage = { entries: AuditEntryJson[]; nextCursor: string | null };
type ChainState = { state: "idle" | "checking" } | { state: "done"; result: ChainResult } | { state: "error"; message: string };

const PROBLEM_LABELS: Record<string, string> = {
  hash_mismatch: "altered (hash mismatch)",
  link_mismatch: "an entry before it was removed or replaced (link mismatch)",
  unkeyed_after_keyed: "unkeyed entry after keyed ones (forged)",
  unknown_key: "signed with a key this server does not know",
  anchor_mismatch: "differs from the published anchor",
  anchor_missing: "the published anchor's entry is gone",
};

/** A published anchor pasted by the user (one JSON line from the log or the anchor file) → verify's query. */
function anchorQuery(text: string): string | null {
  const line = text.trim();
  if (!line) return "";
  try {
    const a = JSON.parse(line.slice(line.indexOf("{"))) as { id?: unknown; hash?: unknown; count?: unknown };
    if (typeof a.id !== "string" || typeof a.hash !== "string" || typeof a.count !== "number") return null;
    return new URLSearchParams({ anchorId: a.id, anchorHash: a.hash, anchorCount: String(a.count) }).toString();
  } catch {
    return null;
  }
}

function queryString(filters: AuditFilterValues, extra: Record<string, string> = {}): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(filters)) {
    const v = value?.trim();
    if (v) params.set(key, v);
  }
  for (const [k, v] of Object.entries(extra)) params.set(k, v);
  return params.toString();
}

// The time inputs show and take UTC (the URL keeps ISO 8601 with Z, so shared links mean the same everywhere).

function compact(value: unknown, max = 60): string {
  const s = typeof value === "string" ? value : JSON.stringify(value);
  return s === undefined ? "—" : s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** One line saying what changed: the fields that differ between before and after. */
function changeSummary(e: AuditEntryJson): string {
  const { before, after, detail } = e;
  if (isObject(before) && isObject(after)) {
    const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].filter((k) => JSON.stringify(before[k]) !== JSON.stringify(after[k]));
    if (keys.length === 0) return "no field changed";
    return (
      keys
        .slice(0, 3)
        .map((k) => `${k}: ${compact(before[k] ?? null, 24)} → ${compact(after[k] ?? null, 24)}`)
        .join("; ") + (keys.length > 3 ? ` (+${keys.length - 3} more)` : "")
    );
  }
  if (after != null && before == null) return `created ${compact(after)}`;
  if (before != null && after == null) return `removed ${compact(before)}`;
  if (detail != null) return compact(detail);
  return "";
}

function EntryChanges({ entry }: { entry: AuditEntryJson }) {
  const summary = changeSummary(entry);
  const parts = (["before", "after", "detail"] as const).filter((k) => entry[k] != null);
  if (parts.length === 0) return <span className="subtle">—</span>;
  return (
    <details className="audit-changes">
      <summary>{summary}</summary>
      {parts.map((k) => (
        <div key={k}>
          <div className="subtle">{k}</div>
          <pre>{JSON.stringify(entry[k], null, 2)}</pre>
        </div>
      ))}
      <div className="subtle audit-hash">
        request {entry.requestId ?? "—"} · ip {entry.ip ?? "—"} · hash {entry.hash.slice(0, 16)}…
      </div>
    </details>
  );
}

/** The audit page body: filters (kept in the URL), the table, Load more, CSV export and chain verification. */
export function AuditLog({ filters, canExport }: { filters: AuditFilterValues; canExport: boolean }) {
  const router = useRouter();
  const [form, setForm] = useState<AuditFilterValues>(filters);
  const [anchor, setAnchor] = useState("");
  const [anchorError, setAnchorError] = useState<string | null>(null);
  const filterQuery = queryString(filters);

  const pages = useInfiniteQuery({
    queryKey: queryKeys.audit.list({ filters: filterQuery }),
    queryFn: ({ pageParam }) => {
      const qs = queryString(filters, pageParam ? { cursor: pageParam } : {});
      return apiFetch<AuditPage>(`/api/v1/audit${qs ? `?${qs}` : ""}`);
    },
    initialPageParam: null as string | null,
    getNextPageParam: (last) => last.nextCursor ?? undefined,
    placeholderData: keepPreviousData,
    // The evidence: read afresh whenever the page is shown (a cached page could miss an action just taken).
    staleTime: 0,
    retry: retryUnlessClientError,
  });
  const entries = useMemo(() => pages.data?.pages.flatMap((p) => p.entries) ?? [], [pages.data]);
  const loading = pages.isFetching;
  const hasMore = pages.hasNextPage;
  const error = pages.error?.message ?? null;

  // On demand (it walks the whole chain): run when asked, never cached or refetched by itself.
  const verification = useMutation({
    mutationFn: (query: string) => apiFetch<ChainResult>(`/api/v1/audit/verify${query ? `?${query}` : ""}`),
  });
  const chain: ChainState = anchorError
    ? { state: "error", message: anchorError }
    : verification.isPending
      ? { state: "checking" }
      : verification.isError
        ? { state: "error", message: verification.error.message }
        : verification.isSuccess
          ? { state: "done", result: verification.data }
          : { state: "idle" };

  function apply(e: FormEvent) {
    e.preventDefault();
    const qs = queryString(form);
    router.push(`/audit${qs ? `?${qs}` : ""}`);
  }

  function verify() {
    const q = anchorQuery(anchor);
    if (q === null) {
      verification.reset();
      setAnchorError("The anchor is not one: paste one line `audit anchor {…}` from the server's log or the anchor file.");
      return;
    }
    setAnchorError(null);
    verification.mutate(q);
  }

  const set = (key: AuditFilterKey) => (e: { target: { value: string } }) => setForm((f) => ({ ...f, [key]: e.target.value }));

  return (
    <>
      <form className="audit-filters" onSubmit={apply} aria-label="Audit filters">
        <label>
          Actor
          <input value={form.actor ?? ""} onChange={set("actor")} placeholder="user id or email" maxLength={300} />
        </label>
        <label>
          Action
          <input value={form.action ?? ""} onChange={set("action")} placeholder="users.create or users.*" maxLength={200} />
        </label>
        <label>
          Target table
          <input value={form.targetTable ?? ""} onChange={set("targetTable")} placeholder="console_users" maxLength={63} />
        </label>
        <label>
          Target id
          <input value={form.targetId ?? ""} onChange={set("targetId")} maxLength={200} />
        </label>
        <label>
          Outcome
          <select value={form.outcome ?? ""} onChange={set("outcome")}>
            <option value="">any</option>
            <option value="done">done</option>
            <option value="refused">refused</option>
            <option value="failed">failed</option>
          </select>
        </label>
        <InstantInput label="From" value={form.from ?? ""} onChange={(iso) => setForm((f) => ({ ...f, from: iso }))} />
        <InstantInput label="To" value={form.to ?? ""} onChange={(iso) => setForm((f) => ({ ...f, to: iso }))} />
        <div className="audit-filter-actions">
          <button type="submit">Apply</button>
          {filterQuery ? (
            <a
              href="/audit"
              onClick={(e) => {
                e.preventDefault();
                router.push("/audit");
              }}
            >
              Clear
            </a>
          ) : null}
        </div>
      </form>

      <div className="toolbar audit-actions">
        <div>
          <label className="anchor-input">
            Published anchor <span className="subtle">(optional: a line from the log or the anchor file)</span>
            <input
              data-testid="verify-anchor"
              value={anchor}
              onChange={(e) => setAnchor(e.target.value)}
              placeholder='{"type":"idempotency-console.audit-anchor","id":"…","hash":"…","count":…}'
            />
          </label>{" "}
          <button type="button" data-testid="verify-chain" onClick={verify} disabled={chain.state === "checking"}>
            Verify chain
          </button>{" "}
          <span data-testid="chain-status" role="status" className={chainClass(chain)}>
            {chain.state === "checking"
              ? "Verifying…"
              : chain.state === "error"
                ? chain.message
                : chain.state === "done"
                  ? chain.result.intact
                    ? `Chain intact — ${chain.result.checked} entries checked${chain.result.anchorsChecked ? `, ${chain.result.anchorsChecked} published anchor${chain.result.anchorsChecked === 1 ? "" : "s"} hold` : ""}${chain.result.unkeyed ? ` (${chain.result.unkeyed} from before keys)` : ""}`
                    : `Chain broken in ${chain.result.breakCount} place${chain.result.breakCount === 1 ? "" : "s"} — ${chain.result.checked} entries checked`
                  : ""}
          </span>
          {chain.state === "done" && chain.result.breaks.length > 0 && (
            <ol className="chain-breaks" data-testid="chain-breaks">
              {chain.result.breaks.map((b, i) => (
                <li key={`${b.id}-${b.problem}-${i}`}>
                  Entry #{b.id}: {PROBLEM_LABELS[b.problem] ?? b.problem}
                  {b.detail ? <span className="subtle"> — {b.detail}</span> : null}
                </li>
              ))}
              {chain.result.breakCount > chain.result.breaks.length && <li>… and {chain.result.breakCount - chain.result.breaks.length} more</li>}
            </ol>
          )}
        </div>
        {canExport ? (
          <a className="button-link" data-testid="export-csv" href={`/api/v1/audit/export${filterQuery ? `?${filterQuery}` : ""}`} download>
            Export CSV
          </a>
        ) : null}
      </div>

      {error ? (
        <div className="error-box" role="alert" data-testid="audit-error">
          {error}
        </div>
      ) : null}

      <ScrollBox label="Audit entries" className="audit-table-wrap">
        <table className="audit-table" data-testid="audit-table">
          <thead>
            <tr>
              <th>#</th>
              <th>Time</th>
              <th>Actor</th>
              <th>Action</th>
              <th>Target</th>
              <th>Outcome</th>
              <th>Reason</th>
              <th>Changes</th>
            </tr>
          </thead>
          <tbody>
            {entries.map((e) => (
              <tr key={e.id} data-testid="audit-row">
                <td className="num">{e.id}</td>
                <td>
                  <When iso={e.occurredAt} />
                </td>
                <td title={e.actorId ? `${e.actorType} ${e.actorId}` : e.actorType}>{e.actorLabel ?? e.actorType}</td>
                <td>
                  <code>{e.action}</code>
                </td>
                <td>{e.targetTable ? `${e.targetTable} ${e.targetId ?? ""}` : "—"}</td>
                <td>
                  <span className={`outcome outcome-${e.outcome}`}>{e.outcome}</span>
                </td>
                <td>{e.reason ?? ""}</td>
                <td>
                  <EntryChanges entry={e} />
                </td>
              </tr>
            ))}
            {!loading && entries.length === 0 && !error ? (
              <tr>
                <td colSpan={8} className="subtle">
                  No audit entries match these filters.
                </td>
              </tr>
            ) : null}
          </tbody>
        </table>
      </ScrollBox>
      <div className="audit-more">
        {loading ? <span className="subtle">Loading…</span> : null}
        {!loading && hasMore ? (
          <button type="button" data-testid="load-more" onClick={() => void pages.fetchNextPage()}>
            Load more
          </button>
        ) : null}
      </div>
    </>
  );
}

function chainClass(chain: { state: string; result?: ChainResult }): string {
  if (chain.state === "done") return chain.result?.intact ? "chain-ok" : "chain-broken";
  if (chain.state === "error") return "chain-broken";
  return "subtle";
}
