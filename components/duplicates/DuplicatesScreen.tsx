"use client";

import type { Jsonified } from "@/lib/api/json";
import type { DuplicatesResult } from "@/lib/records/duplicates";
import type { DuplicateBasis as Basis } from "@/lib/records/vocabulary";
import { whoCan } from "@/lib/auth/permissions";
import { compensability } from "@/lib/compensations/compensable";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useMemo, useState, type FormEvent, type ReactNode } from "react";
import { apiFetch, retryUnlessClientError } from "@/components/client/api";
import { queryKeys } from "@/components/client/query-keys";
import {
  EmptyState,
  ErrorState,
  ExportLink,
  fmtDuration,
  fmtInt,
  fmtMoney,
  Mono,
  onRowKeyDown,
  RangePicker,
  When,
  resolveRange,
  SkeletonRows,
  toQuery,
  useNow,
  useUrlFilters,
} from "@/components/queue/read-ui";

/** GET /api/v1/duplicates as the browser receives it (the server's type; bigints and dates as strings). */
type DuplicatesResponse = Jsonified<DuplicatesResult>;
type ClusterJson = DuplicatesResponse["clusters"][number];
/** A record as the read API returns it. */
type RecordJson = ClusterJson["records"][number];

const FILTER_KEYS = ["range", "from", "to", "window", "scope", "operation", "basis"] as const;
// The question is asked about a customer, not a week: by default every record still held.
const RANGES = ["all", "24h", "7d", "30d"];
const DEFAULT_RANGE = "all";
const WINDOWS = ["1m", "2m", "5m", "10m", "30m", "1h", "6h", "24h"];
const DEFAULT_WINDOW = "10m";

export const BASIS_LABEL: Record<Basis, string> = {
  payload_hash: "same payload hash",
  amount_resource: "same amount + currency + resource",
};

/** Duplicate-charge investigation: suspected double charges under different keys, side by side. */
export function DuplicatesScreen({ canExport, canRequestCompensation = false }: { canExport: boolean; canRequestCompensation?: boolean }) {
  const [f, setFilters] = useUrlFilters(FILTER_KEYS);
  const now = useNow();
  const win = WINDOWS.includes(f.window) || /^\d{1,7}[smhd]?$/.test(f.window) ? f.window : DEFAULT_WINDOW;
  const basis = f.basis === "payload_hash" || f.basis === "amount_resource" ? f.basis : "both";
  const params = useMemo(
    () => ({
      range: f.from || f.to ? undefined : f.range || DEFAULT_RANGE,
      from: f.from || undefined,
      to: f.to || undefined,
      window: win,
      scope: f.scope || undefined,
      operation: f.operation || undefined,
      basis: basis === "both" ? undefined : basis,
    }),
    [f.range, f.from, f.to, f.scope, f.operation, win, basis],
  );

  const query = useQuery({
    queryKey: queryKeys.duplicates.list(params),
    queryFn: () => {
      // A preset range ends now, when the query runs (the URL keeps "the last 7 days"); "all" sends none.
      const { from, to } = resolveRange({ range: params.range ?? "", from: params.from ?? "", to: params.to ?? "" }, DEFAULT_RANGE);
      return apiFetch<DuplicatesResponse>(
        `/api/v1/duplicates?${toQuery({ from, to, window: params.window, scope: params.scope, operation: params.operation, basis: params.basis })}`,
      );
    },
    placeholderData: keepPreviousData,
    retry: retryUnlessClientError,
  });
  const data = query.data;
  const exportQuery = data
    ? toQuery({
        from: data.lifetime ? undefined : data.from,
        to: data.lifetime ? undefined : data.to,
        window: params.window,
        scope: params.scope,
        operation: params.operation,
        basis: params.basis,
      })
    : "";
  const pairCount = data?.clusters.reduce((s, c) => s + c.pairs.length, 0) ?? 0;
  const twiceCompleted = data?.clusters.filter((c) => c.completed >= 2).length ?? 0;

  return (
    <div className="rs-screen" data-testid="duplicates-screen">
      <div className="rs-filters" role="group" aria-label="Duplicate filters">
        <RangePicker key={`${f.range}|${f.from}|${f.to}`} values={f} presets={RANGES} fallback={DEFAULT_RANGE} onChange={(patch) => setFilters(patch)} />
        <label>
          Window
          <select
            value={win}
            onChange={(e) => setFilters({ window: e.target.value === DEFAULT_WINDOW ? undefined : e.target.value })}
            title="How far apart the two records may have been created"
          >
            {[...new Set([...WINDOWS, win])].map((w) => (
              <option key={w} value={w}>
                {w}
                {w === DEFAULT_WINDOW ? " (default)" : ""}
              </option>
            ))}
          </select>
        </label>
        <label>
          Rule
          <select value={basis} onChange={(e) => setFilters({ basis: e.target.value === "both" ? undefined : e.target.value })}>
            <option value="both">either rule</option>
            <option value="payload_hash">{BASIS_LABEL.payload_hash}</option>
            <option value="amount_resource">{BASIS_LABEL.amount_resource}</option>
          </select>
        </label>
        <TextFilters key={`${f.scope}|${f.operation}`} scope={f.scope} operation={f.operation} onApply={(p) => setFilters(p)} />
        <div className="rs-filter-actions">
          <ExportLink list="duplicates" query={exportQuery} canExport={canExport && Boolean(data)} />
        </div>
      </div>

      {query.isError && !data ? (
        <ErrorState error={query.error} onRetry={() => void query.refetch()} />
      ) : query.isPending ? (
        <SkeletonRows rows={4} cols={3} label="Looking for duplicate charges" />
      ) : data ? (
        <>
          <p className="subtle" data-testid="duplicates-summary" aria-live="polite">
            {fmtInt(data.clusters.length)} suspected double charge{data.clusters.length === 1 ? "" : "s"} ({fmtInt(pairCount)} pair
            {pairCount === 1 ? "" : "s"}): records of the same{" "}
            {params.scope ? (
              <>
                scope <code>{params.scope}</code> and{" "}
              </>
            ) : (
              "scope and "
            )}
            operation
            {params.operation ? (
              <>
                {" "}
                (<code>{params.operation}</code>)
              </>
            ) : null}{" "}
            under different idempotency keys, created within {fmtDuration(data.windowSeconds)} of each other. Searched{" "}
            <span data-testid="duplicates-range">
              {data.lifetime ? "every record still held, " : null}created <When iso={data.from} age={false} /> to <When iso={data.to} age={false} />
            </span>
            {data.lifetime ? " (the keys' whole lifetime)" : null}.
            {twiceCompleted ? (
              <>
                {" "}
                · <strong className="rs-warn">{fmtInt(twiceCompleted)} with more than one completed charge</strong>
              </>
            ) : null}
            {query.isFetching ? " · refreshing…" : null}
          </p>
          {data.truncated ? (
            <p className="notice error" role="status">
              More suspected duplicates exist than are shown: narrow the range or filter by scope or operation.
            </p>
          ) : null}
          {data.clusters.length === 0 ? (
            <EmptyState title="No suspected double charges.">
              No two records of the same scope and operation match under different keys within {fmtDuration(data.windowSeconds)}
              {data.lifetime ? " among every record still held" : " in this range"}.{" "}
              {data.lifetime ? "Widen the window to look further." : "Widen the range or the window to look further."}
            </EmptyState>
          ) : (
            <div data-rows className="rs-clusters">
              {data.clusters.map((c) => (
                <Cluster key={`${c.records[0]?.id}`} cluster={c} now={now} canHandOver={canRequestCompensation} />
              ))}
            </div>
          )}
          {query.isError ? <ErrorState error={query.error} onRetry={() => void query.refetch()} /> : null}
        </>
      ) : null}
    </div>
  );
}

function TextFilters({ scope, operation, onApply }: { scope: string; operation: string; onApply: (p: { scope?: string; operation?: string }) => void }) {
  const [form, setForm] = useState({ scope, operation });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onApply(form);
  };
  return (
    <form className="rs-inline-form" onSubmit={submit} aria-label="Scope and operation">
      <label>
        Scope (customer)
        <input name="scope" value={form.scope} onChange={(e) => setForm({ ...form, scope: e.target.value })} placeholder="tenant:…" maxLength={200} />
      </label>
      <label>
        Operation
        <input
          name="operation"
          value={form.operation}
          onChange={(e) => setForm({ ...form, operation: e.target.value })}
          placeholder="capture_payment"
          maxLength={100}
        />
      </label>
      <button type="submit">Apply</button>
      {scope || operation ? (
        <button type="button" onClick={() => onApply({ scope: undefined, operation: undefined })}>
          Clear
        </button>
      ) : null}
    </form>
  );
}

function Cluster({ cluster: c, now, canHandOver }: { cluster: ClusterJson; now: number; canHandOver: boolean }) {
  const byId = new Map(c.records.map((r) => [r.id, r]));
  return (
    <section className="rs-cluster" aria-label={`Suspected duplicate: ${c.operation} for ${c.scope}`} data-testid="duplicate-cluster">
      <header className="rs-cluster-head">
        <div>
          <strong>{c.operation}</strong> · {c.scope}
          {c.amountMinor !== null ? <> · {fmtMoney(c.amountMinor, c.currency)}</> : null}
        </div>
        <div className="subtle">
          {fmtInt(c.records.length)} records within {fmtDuration(c.spanSeconds)} · first <When iso={c.firstAt} now={now} />
          {" · "}
          {c.completed >= 2 ? (
            <strong className="rs-warn">{fmtInt(c.completed)} completed — money taken more than once unless refunded</strong>
          ) : (
            <>{fmtInt(c.completed)} completed</>
          )}
          {c.providerReferences.length ? <> · provider references: {c.providerReferences.join(", ")}</> : null}
        </div>
      </header>
      {c.pairs.map((p) => {
        const a = byId.get(p.first);
        const b = byId.get(p.second);
        if (!a || !b) return null;
        return <Pair key={`${p.first}:${p.second}`} a={a} b={b} basis={p.basis} secondsApart={p.secondsApart} now={now} canHandOver={canHandOver} />;
      })}
    </section>
  );
}

const FIELDS: { label: string; value: (r: RecordJson, now: number) => ReactNode; compare?: (r: RecordJson) => string | null }[] = [
  { label: "Idempotency key", value: (r) => <Mono value={r.idempotencyKey} max={40} />, compare: (r) => r.idempotencyKey },
  {
    label: "Created",
    value: (r, now) => <When iso={r.createdAt} now={now} />,
  },
  { label: "Amount", value: (r) => fmtMoney(r.amountMinor, r.currency), compare: (r) => `${r.amountMinor} ${r.currency}` },
  {
    label: "Status",
    value: (r) => (
      <span className={`rs-status ${r.status}`}>
        <span className={`dot ${r.status}`} aria-hidden /> {r.status}
        {r.responseCode ? <span className="subtle"> ({r.responseCode})</span> : null}
      </span>
    ),
    compare: (r) => r.status,
  },
  { label: "Provider", value: (r) => r.provider ?? "—", compare: (r) => r.provider },
  { label: "Provider reference", value: (r) => <Mono value={r.providerReference} max={40} />, compare: (r) => r.providerReference },
  { label: "Provider request id", value: (r) => <Mono value={r.providerRequestId} max={40} />, compare: (r) => r.providerRequestId },
  {
    label: "Resource",
    value: (r) =>
      r.resourceId ? (
        <>
          {r.resourceType ? `${r.resourceType} ` : ""}
          <Mono value={r.resourceId} max={32} />
        </>
      ) : (
        "—"
      ),
    compare: (r) => `${r.resourceType} ${r.resourceId}`,
  },
  { label: "Payload hash", value: (r) => <Mono value={r.payloadHash} max={20} />, compare: (r) => r.payloadHash },
  { label: "Correlation id", value: (r) => <Mono value={r.correlationId} max={32} />, compare: (r) => r.correlationId },
];

/**
 * "Hand over to compensation": the request form with the pair pre-filled — the later
 * record (b) is the charge to give back, the earlier one (a) the related record.
 * `href` when it can be offered (and what it does), else null and why not.
 */
function handOver(a: RecordJson, b: RecordJson, basis: Basis[], secondsApart: number, allowed: boolean): { href: string | null; why: string } {
  if (!allowed) return { href: null, why: `Handing over needs the permission compensations.request (${whoCan("compensations.request")}).` };
  if (b.status !== "completed") return { href: null, why: `Record #${b.id} is ${b.status}: nothing was charged twice to give back.` };
  const can = compensability(b);
  if (!can.allowed) return { href: null, why: can.reason! };
  const reason =
    `Duplicate of record #${a.id} (${basis.map((x) => BASIS_LABEL[x]).join(", ")}, created ${fmtDuration(secondsApart)} later under a different ` +
    `idempotency key ${b.idempotencyKey}): refund the second charge ${b.providerReference}.`;
  const q = new URLSearchParams({ recordId: b.id, relatedRecordId: a.id, reason });
  return {
    href: `/compensations/new?${q}`,
    why: `Opens the compensation request for record #${b.id} (${fmtMoney(b.amountMinor, b.currency)}), the later of the two.`,
  };
}

function Pair({
  a,
  b,
  basis,
  secondsApart,
  now,
  canHandOver,
}: {
  a: RecordJson;
  b: RecordJson;
  basis: Basis[];
  secondsApart: number;
  now: number;
  canHandOver: boolean;
}) {
  const bothCompleted = a.status === "completed" && b.status === "completed";
  const noteId = `handover-${a.id}-${b.id}`;
  const handover = handOver(a, b, basis, secondsApart, canHandOver);
  return (
    <article
      className="rs-pair"
      data-row
      tabIndex={0}
      onKeyDown={onRowKeyDown}
      data-testid="duplicate-pair"
      data-first={a.id}
      data-second={b.id}
      aria-label={`Records ${a.id} and ${b.id}, ${fmtDuration(secondsApart)} apart`}
    >
      <div className="rs-pair-head">
        <span>
          Matched on{" "}
          {basis.map((x) => (
            <span key={x} className="rs-badge rs-basis" data-testid="pair-basis">
              {BASIS_LABEL[x]}
            </span>
          ))}
        </span>
        <span data-testid="pair-gap">
          created <strong>{fmtDuration(secondsApart)}</strong> apart
        </span>
        {bothCompleted ? <strong className="rs-warn">both completed: charged twice?</strong> : null}
      </div>
      <table className="rs-table rs-compare">
        <thead>
          <tr>
            <th scope="col">
              <span className="sr-only">Field</span>
            </th>
            <th scope="col">
              First · <a href={`/records/${a.id}`}>record #{a.id}</a>
            </th>
            <th scope="col">
              Second · <a href={`/records/${b.id}`}>record #{b.id}</a>
            </th>
          </tr>
        </thead>
        <tbody>
          {FIELDS.map((field) => {
            const differs = field.compare ? field.compare(a) !== field.compare(b) : false;
            return (
              <tr key={field.label} className={differs ? "rs-differs" : undefined}>
                <th scope="row">
                  {field.label}
                  {differs ? <span className="sr-only"> (differs)</span> : null}
                </th>
                <td>{field.value(a, now)}</td>
                <td>{field.value(b, now)}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      <div className="rs-pair-actions">
        {handover.href ? (
          <a className="button-link" href={handover.href} aria-describedby={noteId} data-testid="handover" data-record-ids={`${a.id},${b.id}`}>
            Hand over to compensation
          </a>
        ) : (
          <button type="button" disabled aria-describedby={noteId} data-testid="handover" data-record-ids={`${a.id},${b.id}`}>
            Hand over to compensation
          </button>
        )}
        <span id={noteId} className="subtle" data-testid="handover-note">
          {handover.why}
        </span>
      </div>
    </article>
  );
}
