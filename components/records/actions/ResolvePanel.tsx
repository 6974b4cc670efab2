"use client";

import type { Jsonified } from "@/lib/api/json";
import type { ReconcileOutcome } from "@/lib/reconcile/core";
import type { ResolveResult } from "@/lib/records/resolve";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { ApiError, apiFetch, newIdempotencyKey } from "@/components/client/api";
import { queryKeys } from "@/components/client/query-keys";
import { When } from "@/components/time/When";
import { StatusBadge } from "../ui";
import type { RecordActionProps } from "./types";

/**
 * Resolve panel of the record page, for pending and processing records:
 * - "Check with provider" (records.reconcile): POST /reconcile with a reason; shows
 *   what the provider said and what became of the record;
 * - "Resolve by hand" (records.resolve): completed (with the provider's reference) or
 *   failed, with a reason, sent with expectedVersion = the version shown here. A 409
 *   (someone changed the record first) shows its current state and offers a reload.
 * Each submission gets one Idempotency-Key, kept while its inputs stay the same, so a
 * retry after a lost answer cannot act twice; a new intent (changed inputs, or an
 * answer received) gets a new key.
 */

/** POST /api/v1/records/{id}/reconcile and …/resolve as the browser receives them (the server's types). */
type ReconcileOutcomeJson = Jsonified<ReconcileOutcome>;
type ResolveResultJson = Jsonified<ResolveResult>;

interface Conflict {
  message: string;
  current: { status?: string; version?: number; updatedAt?: string } | null;
}

type Notice = { kind: "ok" | "error"; text: string } | null;

function conflictOf(err: unknown): Conflict | null {
  if (!(err instanceof ApiError) || err.status !== 409) return null;
  const current = (err.problem?.current ?? null) as Conflict["current"];
  return { message: err.message, current };
}

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));
/** A lost answer (network) may be retried with the same key; any answer from the server ends the intent. */
const answered = (err: unknown) => !(err instanceof ApiError && err.status === 0);

export function ResolvePanel({ record, access, availability, onChanged }: RecordActionProps) {
  const client = useQueryClient();
  const [done, setDone] = useState<Notice>(null);
  const open = record.status === "pending" || record.status === "processing";
  if (!(access.resolve || access.reconcile) || (!open && !done)) return null;

  /** After a change: keep a notice when the record left pending/processing (the forms go away), refresh the page and the queue. */
  const changed = (text: string | null) => {
    if (text) setDone({ kind: "ok", text });
    void client.invalidateQueries({ queryKey: queryKeys.queue.all });
    onChanged();
  };

  return (
    <section className="panel action-panel resolve-panel" id="resolve" data-testid="resolve-panel" aria-label="Resolve">
      <h2>Resolve</h2>
      {done ? (
        <p className={`notice ${done.kind}`} role="status" data-testid="resolve-done">
          {done.text}
        </p>
      ) : null}
      {open ? (
        <>
          <p className="subtle" data-testid="resolve-state">
            The record is <StatusBadge status={record.status} /> since <When iso={record.updatedAt} />, version{" "}
            <strong data-testid="resolve-version">{record.version}</strong>.
            {record.status === "processing"
              ? " A processing record can be resolved only once it is stuck past its operation's threshold (the worker died)."
              : null}
          </p>
          <div className="resolve-grid">
            {access.reconcile ? <CheckWithProvider recordId={record.id} can={availability.check} onChanged={changed} /> : null}
            {access.resolve ? (
              <ResolveByHand key={`${record.id}:${record.version}`} recordId={record.id} version={record.version} onChanged={changed} onReload={onChanged} />
            ) : null}
          </div>
        </>
      ) : null}
    </section>
  );
}

function CheckWithProvider({
  recordId,
  can,
  onChanged,
}: {
  recordId: string;
  can: RecordActionProps["availability"]["check"];
  onChanged: (text: string | null) => void;
}) {
  const [reason, setReason] = useState("");
  const [key, setKey] = useState(newIdempotencyKey);
  const [result, setResult] = useState<ReconcileOutcomeJson | null>(null);
  const check = useMutation({
    mutationFn: () =>
      apiFetch<ReconcileOutcomeJson>(`/api/v1/records/${recordId}/reconcile`, { method: "POST", body: { reason: reason.trim() }, idempotencyKey: key }),
    onSuccess: (out) => {
      setKey(newIdempotencyKey());
      setResult(out);
      onChanged(out.action === "completed" || out.action === "failed" ? out.message : null);
    },
    onError: (err) => {
      if (answered(err)) setKey(newIdempotencyKey());
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setResult(null);
    check.mutate();
  };
  return (
    <form className="resolve-form" onSubmit={submit} aria-label="Check with provider" data-testid="reconcile-form">
      <h3>Check with provider</h3>
      {can.allowed ? (
        <p className="subtle">Asks the provider what became of the request; the record follows its answer. No answer yet: the next check is scheduled.</p>
      ) : (
        <p className="notice-muted" id={`check-why-${recordId}`} data-testid="reconcile-unavailable" data-cause={can.cause ?? undefined}>
          Not available: {can.reason}
        </p>
      )}
      <label>
        Reason
        <input
          type="text"
          data-testid="reconcile-reason"
          value={reason}
          onChange={(e) => {
            setReason(e.target.value);
            setKey(newIdempotencyKey());
          }}
          placeholder="e.g. customer asks whether they were charged"
          minLength={3}
          maxLength={2000}
          required
          disabled={!can.allowed}
        />
      </label>
      <div>
        <button
          type="submit"
          className="primary"
          data-testid="reconcile-submit"
          disabled={!can.allowed || check.isPending || reason.trim().length < 3}
          aria-describedby={can.allowed ? undefined : `check-why-${recordId}`}
        >
          {check.isPending ? "Asking the provider…" : "Check with provider"}
        </button>
      </div>
      {result ? (
        <p
          className={`notice ${result.action === "needs_manual" || result.action === "superseded" ? "error" : "ok"}`}
          role="status"
          data-testid="reconcile-result"
          data-action={result.action}
        >
          <strong>{ACTION_LABEL[result.action] ?? result.action}.</strong> {result.message}
          {result.item && result.item.state === "open" && result.item.nextCheckAt ? (
            <>
              {" "}
              Next check: <When iso={result.item.nextCheckAt} />.
            </>
          ) : null}
        </p>
      ) : null}
      {check.isError ? (
        <p className="notice error" role="alert" data-testid="reconcile-error">
          {message(check.error)}
        </p>
      ) : null}
    </form>
  );
}

export const ACTION_LABEL: Record<string, string> = {
  completed: "Completed",
  failed: "Failed",
  rescheduled: "No final answer yet",
  needs_manual: "Needs a decision by hand",
  confirmed: "Already decided; the provider agrees",
  superseded: "Someone else resolved it first",
  nothing_to_check: "Nothing to ask the provider",
  not_found: "Not found",
  refused: "Refused",
};

function ResolveByHand({
  recordId,
  version,
  onChanged,
  onReload,
}: {
  recordId: string;
  version: number;
  onChanged: (text: string) => void;
  onReload: () => void;
}) {
  const [outcome, setOutcome] = useState<"completed" | "failed">("completed");
  const [reference, setReference] = useState("");
  const [reason, setReason] = useState("");
  // What the service created and answered, when the operator knows it (optional): a retry then replays that.
  const [resourceType, setResourceType] = useState("");
  const [resourceId, setResourceId] = useState("");
  const [responseCode, setResponseCode] = useState("");
  const [responseType, setResponseType] = useState("application/json");
  const [responseBody, setResponseBody] = useState("");
  const [key, setKey] = useState(newIdempotencyKey);
  const [conflict, setConflict] = useState<Conflict | null>(null);
  const edit =
    <T,>(set: (v: T) => void) =>
    (v: T) => {
      set(v);
      setKey(newIdempotencyKey());
    };
  const resolve = useMutation({
    mutationFn: () =>
      apiFetch<ResolveResultJson>(`/api/v1/records/${recordId}/resolve`, {
        method: "POST",
        idempotencyKey: key,
        body: {
          outcome,
          ...(outcome === "completed" ? { providerReference: reference.trim() } : {}),
          ...(resourceType.trim() ? { resourceType: resourceType.trim() } : {}),
          ...(resourceId.trim() ? { resourceId: resourceId.trim() } : {}),
          ...(responseCode.trim()
            ? { response: { code: Number(responseCode), headers: responseType.trim() ? [["content-type", responseType.trim()]] : [], body: responseBody } }
            : {}),
          reason: reason.trim(),
          expectedVersion: version,
        },
      }),
    onSuccess: (r) => {
      setKey(newIdempotencyKey());
      onChanged(
        r.outcome === "completed"
          ? `Resolved by hand: completed with provider reference ${r.record.providerReference} (version ${r.record.version}).`
          : `Resolved by hand: failed (version ${r.record.version}).`,
      );
    },
    onError: (err) => {
      if (answered(err)) setKey(newIdempotencyKey());
      setConflict(conflictOf(err));
    },
  });
  const codeOk =
    !responseCode.trim() || (/^\d{3}$/.test(responseCode.trim()) && (outcome === "completed" ? Number(responseCode) < 400 : Number(responseCode) >= 400));
  const valid = reason.trim().length >= 3 && (outcome === "failed" || reference.trim().length > 0) && codeOk;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setConflict(null);
    resolve.mutate();
  };
  return (
    <form className="resolve-form" onSubmit={submit} aria-label="Resolve by hand" data-testid="resolve-form">
      <h3>Resolve by hand</h3>
      <fieldset className="resolve-outcomes">
        <legend>Outcome</legend>
        <label>
          <input
            type="radio"
            name="outcome"
            value="completed"
            data-testid="resolve-outcome-completed"
            checked={outcome === "completed"}
            onChange={() => edit(setOutcome)("completed")}
          />{" "}
          Completed — the provider has the charge
        </label>
        <label>
          <input
            type="radio"
            name="outcome"
            value="failed"
            data-testid="resolve-outcome-failed"
            checked={outcome === "failed"}
            onChange={() => edit(setOutcome)("failed")}
          />{" "}
          Failed — nothing happened at the provider
        </label>
      </fieldset>
      {outcome === "completed" ? (
        <label>
          Provider reference
          <input
            type="text"
            data-testid="resolve-reference"
            value={reference}
            onChange={(e) => edit(setReference)(e.target.value)}
            placeholder="e.g. ch_3PqK…"
            maxLength={200}
            required
          />
        </label>
      ) : null}
      <details className="resolve-service-response" data-testid="resolve-service-response">
        <summary>What the service created and answered (optional)</summary>
        <p className="subtle">
          If you know them, a retry of the original request will replay the service&apos;s own answer. Otherwise it replays a small JSON answer made by the
          console, with a top-level <code>resolution</code> member that marks it as the console&apos;s.
        </p>
        <label>
          Resource type
          <input
            type="text"
            data-testid="resolve-resource-type"
            value={resourceType}
            onChange={(e) => edit(setResourceType)(e.target.value)}
            placeholder="e.g. order"
            maxLength={200}
          />
        </label>
        <label>
          Resource id
          <input
            type="text"
            data-testid="resolve-resource-id"
            value={resourceId}
            onChange={(e) => edit(setResourceId)(e.target.value)}
            placeholder="e.g. ord_1042"
            maxLength={200}
          />
        </label>
        <label>
          HTTP status the service answered
          <input
            type="text"
            inputMode="numeric"
            data-testid="resolve-response-code"
            value={responseCode}
            onChange={(e) => edit(setResponseCode)(e.target.value)}
            placeholder={outcome === "completed" ? "e.g. 201" : "e.g. 402"}
            aria-invalid={!codeOk}
            maxLength={3}
          />
        </label>
        {!codeOk ? (
          <p className="field-error" role="alert">
            {outcome === "completed" ? "A completed record answered below 400." : "A failed record answered 400 or above."}
          </p>
        ) : null}
        <label>
          Content-Type
          <input type="text" data-testid="resolve-response-type" value={responseType} onChange={(e) => edit(setResponseType)(e.target.value)} maxLength={200} />
        </label>
        <label>
          Body
          <textarea
            data-testid="resolve-response-body"
            value={responseBody}
            onChange={(e) => edit(setResponseBody)(e.target.value)}
            rows={3}
            maxLength={60000}
            placeholder='e.g. {"order_id":"ord_1042"}'
          />
        </label>
      </details>
      <label>
        Reason
        <input
          type="text"
          data-testid="resolve-reason"
          value={reason}
          onChange={(e) => edit(setReason)(e.target.value)}
          placeholder="e.g. provider dashboard shows the charge succeeded"
          minLength={3}
          maxLength={2000}
          required
        />
      </label>
      <div>
        <button type="submit" className="primary" data-testid="resolve-submit" disabled={resolve.isPending || !valid}>
          {resolve.isPending ? "Resolving…" : `Resolve as ${outcome}`}
        </button>{" "}
        <span className="subtle">against version {version}</span>
      </div>
      {conflict ? (
        <div className="notice error resolve-conflict" role="alert" data-testid="resolve-conflict">
          <p>
            <strong>Someone changed this record first.</strong> {conflict.message}
          </p>
          {conflict.current ? (
            <p data-testid="resolve-conflict-current">
              Now: {conflict.current.status ? <StatusBadge status={conflict.current.status} /> : null} version {conflict.current.version ?? "?"}
              {conflict.current.updatedAt ? (
                <>
                  , changed <When iso={conflict.current.updatedAt} />
                </>
              ) : null}
              .
            </p>
          ) : null}
          <button
            type="button"
            data-testid="resolve-reload"
            onClick={() => {
              setConflict(null);
              onReload();
            }}
          >
            Reload the record
          </button>
        </div>
      ) : resolve.isError ? (
        <p className="notice error" role="alert" data-testid="resolve-error">
          {message(resolve.error)}
        </p>
      ) : null}
    </form>
  );
}
