"use client";

import type { Jsonified } from "@/lib/api/json";
import type { RecordSummary } from "@/lib/records/row";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { useState, type FormEvent, type ReactNode } from "react";
import { apiFetch } from "@/components/client/api";
import { queryKeys } from "@/components/client/query-keys";
import { RecordCompensations } from "@/components/compensations/RecordCompensations";
import { RecordActions } from "./actions/RecordActions";
import type { RecordActionAccess, RecordActionAvailability } from "./actions/types";
import { StoredBody, type MaskedPlace } from "./StoredBody";
import { When } from "@/components/time/When";
import { formatMoney, formatSeconds, SkeletonRows, StatusBadge, retryUnlessClientError } from "./ui";
import { ScrollBox } from "@/components/ScrollBox";

/**
 * /records/[id]: everything about one record from GET /api/v1/records/{id} — every field,
 * the event timeline, reconciliation items, outbox messages, the audit entries that touch
 * it, the stored response at the viewer's level (none / masked, with the masked places
 * highlighted) and its suspected duplicates side by side. With records.reveal, "Reveal"
 * asks for a reason and POSTs /reveal (audited before anything is returned); the revealed
 * response is kept in this component's state only — never in the query cache.
 */

/** A record as the read API returns it (bigints and dates as strings). */
type RecordJson = Jsonified<RecordSummary>;

interface StoredResponse {
  access: "masked" | "revealed";
  code: number | null;
  headers: [string, string][] | null;
  headersShape: "none" | "pairs" | "object" | "lines" | "other";
  headersUnreadable: string | null;
  body: string | null;
  masked: MaskedPlace[];
}

interface Duplicate extends RecordJson {
  basis: string[];
  secondsApart: number;
  /** The cluster member it pairs with, when not this record. */
  via?: string;
}

type Row = Record<string, unknown>;

interface Detail {
  record: RecordJson;
  response: StoredResponse | null;
  bodyAccess: "none" | "masked" | "revealed";
  timeline: { events: { id: string; kind: string; occurredAt: string; payloadHash: string | null; responseCode: number | null; detail: unknown }[]; total: number; truncated: boolean };
  reconciliationItems: Row[];
  outboxMessages: Row[];
  audit: Row[];
  suspectedDuplicates: Duplicate[];
  duplicateWindowSeconds: number;
  compensations: Row[];
  checkWithProvider: RecordActionAvailability["check"];
  compensation: RecordActionAvailability["compensation"];
}

interface RevealResult {
  recordId: string;
  response: StoredResponse;
  auditId: string;
}

const WINDOWS = ["1m", "5m", "10m", "30m", "1h", "6h", "24h"];
const str = (v: unknown) => (v === null || v === undefined ? null : String(v));

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
    queryFn: () => apiFetch<Detail>(`/api/v1/records/${id}${window ? `?window=${encodeURIComponent(window)}` : ""}`),
  });

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

      <RecordActions record={r} access={actions} availability={{ check: d.checkWithProvider, compensation: d.compensation }} onChanged={() => void client.invalidateQueries({ queryKey: queryKeys.records.detail(id) })} />

      <div className="detail-grid">
        <Section title="Fields" testId="record-fields">
          <Fields record={r} />
        </Section>

        <Section title="Stored response" testId="stored-response">
          <StoredResponseSection detail={d} id={id} canReveal={canReveal} onRevealed={() => void client.invalidateQueries({ queryKey: queryKeys.records.detail(id) })} />
        </Section>
      </div>

      <Section title={`Event timeline (${d.timeline.total.toLocaleString("en")})`} testId="timeline">
        <Timeline timeline={d.timeline} />
      </Section>

      <Section title={`Suspected duplicates (${d.suspectedDuplicates.length})`} testId="suspected-duplicates">
        <div className="toolbar">
          <p className="subtle">
            Same scope and operation under a different key, created within ±{formatSeconds(d.duplicateWindowSeconds)} of this record or of
            another of its suspected duplicates: the same payload hash, or the same amount, currency and resource — the cluster{" "}
            <Link href={`/duplicates?scope=${encodeURIComponent(r.scope)}&operation=${encodeURIComponent(r.operation)}`}>Duplicates</Link> shows.
          </p>
          <label className="inline-label">
            Window{" "}
            <select
              aria-label="Duplicate window"
              value={WINDOWS.includes(window ?? "") ? window : "10m"}
              onChange={(e) => router.replace(`/records/${id}${e.target.value === "10m" ? "" : `?window=${e.target.value}`}`, { scroll: false })}
            >
              {WINDOWS.map((w) => (
                <option key={w} value={w}>
                  ±{w}
                </option>
              ))}
            </select>
          </label>
        </div>
        <Duplicates record={r} duplicates={d.suspectedDuplicates} />
      </Section>

      <Section title={`Compensations (${d.compensations.length})`} testId="compensations">
        <RecordCompensations recordId={id} onChanged={() => void client.invalidateQueries({ queryKey: queryKeys.records.detail(id) })} />
      </Section>

      <Section title={`Reconciliation (${d.reconciliationItems.length})`} testId="reconciliation">
        <Reconciliation items={d.reconciliationItems} />
      </Section>

      <Section title={`Outbox messages (${d.outboxMessages.length})`} testId="outbox">
        <Outbox messages={d.outboxMessages} />
      </Section>

      <Section title={`Audit trail (${d.audit.length})`} testId="record-audit">
        <AuditEntries entries={d.audit} id={id} canReadAudit={canReadAudit} />
      </Section>
    </>
  );
}

function Section({ title, testId, children }: { title: string; testId: string; children: ReactNode }) {
  return (
    <section className="panel detail-section" data-testid={testId} aria-label={title}>
      <h2>{title}</h2>
      {children}
    </section>
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

const Mono = ({ v }: { v: string | null }) => (v === null ? <span className="subtle">—</span> : <span className="mono">{v}</span>);

function Fields({ record: r }: { record: RecordJson }) {
  const rows: [string, ReactNode][] = [
    ["Id", <Mono key="id" v={r.id} />],
    ["Status", <StatusBadge key="s" status={r.status} />],
    ["Scope", <Mono key="sc" v={r.scope} />],
    ["Operation", <Mono key="op" v={r.operation} />],
    ["Idempotency key", <Mono key="k" v={r.idempotencyKey} />],
    ["Payload hash", <Mono key="h" v={r.payloadHash} />],
    ["Amount", r.amountMinor === null ? "—" : `${formatMoney(r.amountMinor, r.currency)} (${r.amountMinor} minor units${r.currency ? ` ${r.currency}` : ""})`],
    ["Response code", r.responseCode ?? "—"],
    ["Resource", r.resourceType || r.resourceId ? `${r.resourceType ?? "?"} ${r.resourceId ?? ""}` : "—"],
    ["Correlation id", <Mono key="c" v={r.correlationId} />],
    ["Provider", r.provider ?? "—"],
    ["Provider request id", <Mono key="pr" v={r.providerRequestId} />],
    ["Provider reference", <Mono key="pf" v={r.providerReference} />],
    ["Last error", r.lastError ?? "—"],
    ["Created", <When key="c1" iso={r.createdAt} />],
    ["Updated", <When key="u" iso={r.updatedAt} />],
    ["Expires", <When key="e" iso={r.expiresAt} />],
    ["Version", r.version],
    ["Legal hold", r.legalHold ? "yes" : "no"],
  ];
  return (
    <dl className="fields">
      {rows.map(([label, value]) => (
        <div key={label} className="field">
          <dt>{label}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}

// --- Stored response and reveal ---------------------------------------------------------

function StoredResponseSection({ detail, id, canReveal, onRevealed }: { detail: Detail; id: string; canReveal: boolean; onRevealed: () => void }) {
  const [asking, setAsking] = useState(false);
  const [reason, setReason] = useState("");
  const [revealed, setRevealed] = useState<RevealResult | null>(null);
  const reveal = useMutation({
    mutationFn: (why: string) => apiFetch<RevealResult>(`/api/v1/records/${id}/reveal`, { method: "POST", body: { reason: why } }),
    onSuccess: (result) => {
      setRevealed(result);
      setAsking(false);
      setReason("");
      onRevealed();
    },
  });

  if (detail.response === null) {
    return (
      <p className="notice-muted" data-testid="response-withheld">
        Not shown: stored responses need the permission <code>records.read_body</code>, which your roles do not grant. The response code is{" "}
        {detail.record.responseCode ?? "not set"}.
      </p>
    );
  }

  function submit(e: FormEvent) {
    e.preventDefault();
    if (reason.trim().length >= 3) reveal.mutate(reason.trim());
  }

  const masked = detail.response;
  return (
    <>
      {revealed ? (
        <div className="revealed" data-testid="revealed-response">
          <p className="notice reveal-note" role="status">
            Revealed: shown as stored. This reveal was recorded in the audit log (entry #{revealed.auditId}) with your reason.{" "}
            <button type="button" onClick={() => setRevealed(null)}>
              Hide again
            </button>
          </p>
          <ResponseView response={revealed.response} mode="revealed" testId="revealed-body" />
        </div>
      ) : (
        <ResponseView response={masked} mode="masked" testId="masked-body" />
      )}
      {canReveal && !revealed ? (
        asking ? (
          <form className="reveal-form" onSubmit={submit}>
            <label>
              Why do you need to see the masked values? <span className="subtle">(recorded in the audit log)</span>
              <input
                autoFocus
                data-testid="reveal-reason"
                value={reason}
                onChange={(e) => setReason(e.target.value)}
                maxLength={2000}
                placeholder="e.g. ticket SUP-1234: customer disputes the charge"
              />
            </label>
            <div className="row-actions">
              <button type="submit" className="primary" data-testid="reveal-submit" disabled={reveal.isPending || reason.trim().length < 3}>
                {reveal.isPending ? "Revealing…" : "Reveal and record"}
              </button>
              <button type="button" onClick={() => setAsking(false)}>
                Cancel
              </button>
            </div>
            {reveal.isError ? (
              <p className="form-error" role="alert">
                {reveal.error.message}
              </p>
            ) : null}
          </form>
        ) : (
          <p>
            <button type="button" data-testid="reveal-button" onClick={() => setAsking(true)}>
              Reveal…
            </button>{" "}
            <span className="subtle">Shows the response as stored; asks for a reason and records it in the audit log.</span>
          </p>
        )
      ) : null}
    </>
  );
}

function ResponseView({ response, mode, testId }: { response: StoredResponse; mode: "masked" | "revealed"; testId: string }) {
  const headerMarks = new Map<number, string[]>();
  for (const m of response.masked) {
    const k = /^headers\[(\d+)\]$/.exec(m.path);
    if (k) headerMarks.set(Number(k[1]), [...(headerMarks.get(Number(k[1])) ?? []), m.rule]);
  }
  return (
    <div className="response-view">
      <p>
        <strong>HTTP {response.code ?? "—"}</strong>{" "}
        <span className="subtle" data-testid="masked-fields">
          {response.masked.length === 0
            ? "Nothing sensitive found: nothing is masked."
            : `${mode === "masked" ? "Masked" : "Masked for others"}: ${response.masked.map((m) => `${m.path} (${m.rule})`).join(", ")}`}
        </span>
      </p>
      {response.headers?.length ? (
        <table className="data-table headers-table">
          <tbody>
            {response.headers.map(([name, value], k) => (
              <tr key={k}>
                <th scope="row" className="mono">
                  {name}
                </th>
                <td className="mono">
                  {headerMarks.has(k) ? (
                    <mark className={`masked-value ${mode}`} data-testid="masked-value" title={headerMarks.get(k)!.join(", ")}>
                      {value}
                    </mark>
                  ) : (
                    value
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        <p className="subtle">No headers stored.</p>
      )}
      {response.headersShape === "object" || response.headersShape === "lines" ? (
        <p className="subtle" data-testid="headers-shape">
          The service stored these headers as {response.headersShape === "object" ? "a JSON object" : "header lines"}, not as [name, value] pairs: shown as pairs
          {response.headersShape === "object" ? " (an object keeps one entry per name, so the order and repeats of the original response are lost)" : ""}.
        </p>
      ) : null}
      {response.headersUnreadable !== null ? (
        <div data-testid="headers-unreadable">
          <p className="subtle">Stored with the headers, but not a header (shown as stored{mode === "masked" ? ", masked" : ""}):</p>
          <pre className="mono stored-body">{response.headersUnreadable}</pre>
        </div>
      ) : null}
      {response.body === null ? <p className="subtle">No body stored.</p> : <StoredBody body={response.body} masked={response.masked} mode={mode} testId={testId} />}
    </div>
  );
}

// --- Timeline -----------------------------------------------------------------------------

function Timeline({ timeline }: { timeline: Detail["timeline"] }) {
  if (timeline.events.length === 0) return <p className="subtle">No events recorded for this record.</p>;
  return (
    <>
      {timeline.truncated ? (
        <p className="subtle">
          Showing the newest {timeline.events.length.toLocaleString("en")} of {timeline.total.toLocaleString("en")} events.
        </p>
      ) : null}
      <ol className="timeline">
        {timeline.events.map((e) => {
          const detail = (e.detail ?? null) as Record<string, unknown> | null;
          return (
            <li key={e.id} className={`timeline-event kind-${e.kind}`} data-testid="timeline-event">
              <span className="timeline-kind">{e.kind.replace(/_/g, " ")}</span>
              <span className="nowrap">
                <When iso={e.occurredAt} />
              </span>
              {e.responseCode !== null ? <span className="subtle">HTTP {e.responseCode}</span> : null}
              {e.kind === "conflict" && detail ? (
                <span className="subtle mono">
                  stored {String(detail.expectedPayloadHash ?? "?").slice(0, 12)}… ≠ received {String(detail.receivedPayloadHash ?? e.payloadHash ?? "?").slice(0, 12)}…
                </span>
              ) : e.payloadHash ? (
                <span className="subtle mono" title={e.payloadHash}>
                  payload {e.payloadHash.slice(0, 12)}…
                </span>
              ) : null}
              {detail && e.kind !== "conflict" ? <span className="subtle mono truncate">{JSON.stringify(detail)}</span> : null}
            </li>
          );
        })}
      </ol>
    </>
  );
}

// --- Duplicates, side by side ----------------------------------------------------------------

const COMPARE: [string, (r: RecordJson) => ReactNode, (r: RecordJson) => string | null][] = [
  ["Idempotency key", (r) => <span className="mono">{r.idempotencyKey}</span>, (r) => r.idempotencyKey],
  ["Status", (r) => <StatusBadge status={r.status} />, (r) => r.status],
  ["Created", (r) => <When iso={r.createdAt} age={false} />, (r) => r.createdAt],
  ["Amount", (r) => formatMoney(r.amountMinor, r.currency), (r) => `${r.amountMinor} ${r.currency}`],
  ["Payload hash", (r) => <span className="mono">{r.payloadHash.slice(0, 16)}…</span>, (r) => r.payloadHash],
  ["Resource", (r) => <span className="mono">{r.resourceId ?? "—"}</span>, (r) => r.resourceId],
  ["Provider", (r) => r.provider ?? "—", (r) => r.provider],
  ["Provider request id", (r) => <span className="mono">{r.providerRequestId ?? "—"}</span>, (r) => r.providerRequestId],
  ["Provider reference", (r) => <span className="mono">{r.providerReference ?? "—"}</span>, (r) => r.providerReference],
  ["Response code", (r) => r.responseCode ?? "—", (r) => str(r.responseCode)],
  ["Correlation id", (r) => <span className="mono">{r.correlationId ?? "—"}</span>, (r) => r.correlationId],
];

function Duplicates({ record, duplicates }: { record: RecordJson; duplicates: Duplicate[] }) {
  if (duplicates.length === 0) return <p className="subtle" data-testid="no-duplicates">No suspected duplicates in this window.</p>;
  const all = [record, ...duplicates];
  const completed = all.filter((r) => r.status === "completed");
  const refs = new Set(completed.map((r) => r.providerReference).filter((x): x is string => x !== null));
  const shown = duplicates.slice(0, 5);
  return (
    <>
      <p className={refs.size > 1 ? "notice verdict warn" : "notice verdict"} data-testid="duplicate-verdict">
        {completed.length} of {all.length} completed
        {refs.size > 1
          ? ` with ${refs.size} different provider references — the provider likely charged ${refs.size} times; check each reference with the provider.`
          : refs.size === 1
            ? ", one provider reference between them."
            : ", no provider reference yet."}
      </p>
      <table className="data-table stack-table" data-testid="duplicate-list">
        <thead>
          <tr>
            <th scope="col">Record</th>
            <th scope="col">Status</th>
            <th scope="col">Key</th>
            <th scope="col">Created</th>
            <th scope="col">Why</th>
            <th scope="col">Provider reference</th>
          </tr>
        </thead>
        <tbody>
          {duplicates.map((dup) => (
            <tr key={dup.id} data-testid="duplicate-row">
              <td data-label="Record">
                <Link href={`/records/${dup.id}`}>#{dup.id}</Link>
              </td>
              <td data-label="Status">
                <StatusBadge status={dup.status} />
              </td>
              <td data-label="Key" className="mono truncate" title={dup.idempotencyKey}>
                {dup.idempotencyKey}
              </td>
              <td data-label="Created">
                <When iso={dup.createdAt} age={false} />
                <div className="subtle">
                  {formatSeconds(dup.secondsApart)} {dup.secondsApart >= 0 ? "after" : "before"}
                </div>
              </td>
              <td data-label="Why">
                {dup.basis.map((b) => (b === "payload_hash" ? "same payload" : "same amount & resource")).join(", ")}
                {dup.via ? <div className="subtle">as #{dup.via}, which pairs with this one</div> : null}
              </td>
              <td data-label="Provider reference" className="mono">{dup.providerReference ?? "—"}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h3 className="compare-title">Side by side</h3>
      <ScrollBox label="Duplicates side by side">
        <table className="data-table compare-table" data-testid="duplicate-compare">
          <thead>
            <tr>
              <th scope="col" />
              <th scope="col">This record (#{record.id})</th>
              {shown.map((dup) => (
                <th scope="col" key={dup.id}>
                  <Link href={`/records/${dup.id}`}>#{dup.id}</Link>
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {COMPARE.map(([label, show, value]) => (
              <tr key={label}>
                <th scope="row">{label}</th>
                <td>{show(record)}</td>
                {shown.map((dup) => (
                  <td key={dup.id} className={value(dup) !== value(record) ? "differs" : "same"}>
                    {show(dup)}
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </ScrollBox>
      {duplicates.length > shown.length ? <p className="subtle">The comparison shows the first {shown.length}; every one is listed above.</p> : null}
    </>
  );
}

// --- Reconciliation, outbox, audit -----------------------------------------------------------

function Reconciliation({ items }: { items: Row[] }) {
  if (items.length === 0) return <p className="subtle">No reconciliation items: the outcome was never uncertain.</p>;
  return (
    <ScrollBox label="Reconciliation items">
      <table className="data-table">
        <thead>
          <tr>
            <th scope="col">#</th>
            <th scope="col">State</th>
            <th scope="col">Attempts</th>
            <th scope="col">Provider request id</th>
            <th scope="col">Last check</th>
            <th scope="col">Next check</th>
            <th scope="col">Last error</th>
            <th scope="col">Resolved</th>
          </tr>
        </thead>
        <tbody>
          {items.map((i) => (
            <tr key={String(i.id)}>
              <td className="num">{String(i.id)}</td>
              <td>
                <span className="role-badge">{String(i.state)}</span>
              </td>
              <td className="num">{String(i.attempts)}</td>
              <td className="mono">{str(i.providerRequestId) ?? "—"}</td>
              <td>
                <When iso={str(i.lastCheckedAt)} fallback="never" />
              </td>
              <td>
                <When iso={str(i.nextCheckAt)} />
              </td>
              <td>{str(i.lastError) ?? "—"}</td>
              <td>{i.resolvedAt ? <>{str(i.resolvedBy) ?? "?"}, <When iso={String(i.resolvedAt)} /></> : "—"}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </ScrollBox>
  );
}

function Outbox({ messages }: { messages: Row[] }) {
  if (messages.length === 0) return <p className="subtle">No outbox messages were written with this record.</p>;
  return (
    <ScrollBox label="Outbox messages">
      <table className="data-table">
        <thead>
          <tr>
            <th scope="col">#</th>
            <th scope="col">Topic</th>
            <th scope="col">Status</th>
            <th scope="col">Attempts</th>
            <th scope="col">Sent / next attempt</th>
            <th scope="col">Payload</th>
          </tr>
        </thead>
        <tbody>
          {messages.map((m) => (
            <tr key={String(m.id)}>
              <td className="num">{String(m.id)}</td>
              <td className="mono">{String(m.topic)}</td>
              <td>{String(m.status)}</td>
              <td className="num">{String(m.attempts)}</td>
              <td>{m.sentAt ? <When iso={str(m.sentAt)} /> : <When iso={str(m.nextAttemptAt)} />}</td>
              <td>
                {m.payloadHidden ? (
                  <span className="subtle">hidden (needs records.read_body)</span>
                ) : (
                  <details>
                    <summary className="mono truncate">{JSON.stringify(m.payload)}</summary>
                    <pre className="stored-body">{JSON.stringify(m.payload, null, 2)}</pre>
                  </details>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </ScrollBox>
  );
}

function AuditEntries({ entries, id, canReadAudit }: { entries: Row[]; id: string; canReadAudit: boolean }) {
  return (
    <>
      {entries.length === 0 ? (
        <p className="subtle">No console action has touched this record yet.</p>
      ) : (
        <ScrollBox label="Audit entries">
          <table className="data-table">
            <thead>
              <tr>
                <th scope="col">#</th>
                <th scope="col">When</th>
                <th scope="col">Who</th>
                <th scope="col">Action</th>
                <th scope="col">Outcome</th>
                <th scope="col">Reason</th>
              </tr>
            </thead>
            <tbody>
              {entries.map((e) => (
                <tr key={String(e.id)} data-testid="record-audit-row">
                  <td className="num">{String(e.id)}</td>
                  <td className="nowrap">
                    <When iso={str(e.occurredAt)} />
                  </td>
                  <td>{str(e.actorLabel) ?? String(e.actorType)}</td>
                  <td>
                    <code>{String(e.action)}</code>
                  </td>
                  <td>
                    <span className={`outcome outcome-${String(e.outcome)}`}>{String(e.outcome)}</span>
                  </td>
                  <td>{str(e.reason) ?? ""}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </ScrollBox>
      )}
      {canReadAudit ? (
        <p>
          <Link href={`/audit?targetTable=idempotency_records&targetId=${id}`}>Open in the audit log</Link>
        </p>
      ) : null}
    </>
  );
}
