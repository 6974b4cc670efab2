"use client";

import { useMutation } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { apiFetch } from "@/components/client/api";
import { StoredBody } from "../StoredBody";
import { ScrollBox } from "@/components/ScrollBox";
import { Section, type RecordDetailJson, type RevealJson, type StoredResponseJson } from "./shared";

/**
 * The stored response at the viewer's level: withheld without records.read_body, else masked
 * (the masked places highlighted). With records.reveal, "Reveal" asks for a reason and POSTs
 * /reveal (audited before anything is returned); the revealed response is kept in this
 * component's state only — never in the query cache.
 */
export function StoredResponsePanel(props: { detail: RecordDetailJson; id: string; canReveal: boolean; onRevealed: () => void }) {
  return (
    <Section title="Stored response" testId="stored-response">
      <StoredResponse {...props} />
    </Section>
  );
}

function StoredResponse({ detail, id, canReveal, onRevealed }: { detail: RecordDetailJson; id: string; canReveal: boolean; onRevealed: () => void }) {
  const [asking, setAsking] = useState(false);
  const [reason, setReason] = useState("");
  const [revealed, setRevealed] = useState<RevealJson | null>(null);
  const reveal = useMutation({
    mutationFn: (why: string) => apiFetch<RevealJson>(`/api/v1/records/${id}/reveal`, { method: "POST", body: { reason: why } }),
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

function ResponseView({ response, mode, testId }: { response: StoredResponseJson; mode: "masked" | "revealed"; testId: string }) {
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
          The service stored these headers as {response.headersShape === "object" ? "a JSON object" : "header lines"}, not as [name, value] pairs: shown as
          pairs
          {response.headersShape === "object" ? " (an object keeps one entry per name, so the order and repeats of the original response are lost)" : ""}.
        </p>
      ) : null}
      {response.headersUnreadable !== null ? (
        <div data-testid="headers-unreadable">
          <p className="subtle">Stored with the headers, but not a header (shown as stored{mode === "masked" ? ", masked" : ""}):</p>
          <ScrollBox as="pre" className="mono stored-body" label="Stored headers, as stored">
            {response.headersUnreadable}
          </ScrollBox>
        </div>
      ) : null}
      {response.body === null ? (
        <p className="subtle">No body stored.</p>
      ) : (
        <StoredBody body={response.body} masked={response.masked} mode={mode} testId={testId} />
      )}
    </div>
  );
}
