import Link from "next/link";
import type { ReactNode } from "react";
import { ScrollBox } from "@/components/ScrollBox";
import { When } from "@/components/time/When";
import { formatMoney, formatSeconds, StatusBadge } from "../ui";
import { Section, str, type RecordJson, type SuspectedDuplicateJson } from "./shared";

const WINDOWS = ["1m", "5m", "10m", "30m", "1h", "6h", "24h"];

/** The record's suspected duplicates (the window is chosen here, kept in the URL by the page), listed and side by side. */
export function DuplicatesPanel({
  record: r,
  duplicates,
  windowSeconds,
  window,
  onWindow,
}: {
  record: RecordJson;
  duplicates: SuspectedDuplicateJson[];
  windowSeconds: number;
  window?: string;
  onWindow: (window: string) => void;
}) {
  return (
    <Section title={`Suspected duplicates (${duplicates.length})`} testId="suspected-duplicates">
      <div className="toolbar">
        <p className="subtle">
          Same scope and operation under a different key, created within ±{formatSeconds(windowSeconds)} of this record or of another of its suspected
          duplicates: the same payload hash, or the same amount, currency and resource — the cluster{" "}
          <Link href={`/duplicates?scope=${encodeURIComponent(r.scope)}&operation=${encodeURIComponent(r.operation)}`}>Duplicates</Link> shows.
        </p>
        <label className="inline-label">
          Window{" "}
          <select aria-label="Duplicate window" value={WINDOWS.includes(window ?? "") ? window : "10m"} onChange={(e) => onWindow(e.target.value)}>
            {WINDOWS.map((w) => (
              <option key={w} value={w}>
                ±{w}
              </option>
            ))}
          </select>
        </label>
      </div>
      <Duplicates record={r} duplicates={duplicates} />
    </Section>
  );
}

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

function Duplicates({ record, duplicates }: { record: RecordJson; duplicates: SuspectedDuplicateJson[] }) {
  if (duplicates.length === 0)
    return (
      <p className="subtle" data-testid="no-duplicates">
        No suspected duplicates in this window.
      </p>
    );
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
              <td data-label="Provider reference" className="mono">
                {dup.providerReference ?? "—"}
              </td>
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
