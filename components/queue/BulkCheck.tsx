"use client";

import type { Jsonified } from "@/lib/api/json";
import type { BulkResult } from "@/lib/reconcile/bulk";
import { useMutation } from "@tanstack/react-query";
import { useEffect, useRef, useState, type FormEvent } from "react";
import { ApiError, apiFetch, newIdempotencyKey } from "@/components/client/api";
import { ACTION_LABEL } from "@/components/records/actions/ResolvePanel";
import { BULK_LIMIT, confirmationText } from "@/lib/reconcile/confirm";
import { ScrollBox } from "@/components/ScrollBox";

/**
 * The queue's bulk "Check with provider": the selected rows (at most 100) go to
 * POST /api/v1/reconcile after a typed confirmation — the operator types the exact
 * text the API expects ("check 3 records"); when the API answers that it expects
 * another text (the selection changed), that text is shown instead. The answer is
 * one outcome per record, shown in the dialog. One Idempotency-Key per submission,
 * reused if the answer was lost and the same submission is retried.
 */

/** POST /api/v1/reconcile as the browser receives it (the server's type): one outcome per record. */
type BulkAnswer = Jsonified<BulkResult>;

export function BulkCheck({ selectedIds, canReconcile, onDone }: { selectedIds: string[]; canReconcile: boolean; onDone: () => void }) {
  const dialog = useRef<HTMLDialogElement>(null);
  // The ids as they were when the dialog opened (the selection is cleared once the check is done).
  const [openIds, setOpenIds] = useState<string[] | null>(null);
  const open = openIds !== null;
  const n = selectedIds.length;
  const tooMany = n > BULK_LIMIT;
  const disabled = !canReconcile || n === 0 || tooMany;

  useEffect(() => {
    const d = dialog.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);

  return (
    <>
      <button
        type="button"
        className={disabled ? undefined : "primary"}
        disabled={disabled}
        aria-describedby="bulk-check-note"
        data-testid="bulk-check"
        data-record-ids={selectedIds.join(",")}
        onClick={() => setOpenIds(selectedIds)}
      >
        Check with provider{n ? ` (${n.toLocaleString("en")})` : ""}
      </button>
      <span id="bulk-check-note" className="subtle">
        {!canReconcile
          ? "Checking with the provider needs the records.reconcile permission."
          : tooMany
            ? `At most ${BULK_LIMIT} records per check: select fewer.`
            : n === 0
              ? "Select rows to check them with their providers."
              : "Asks each record's provider and resolves it accordingly."}
      </span>
      <dialog ref={dialog} className="bulk-dialog" aria-labelledby="bulk-title" data-testid="bulk-dialog" onClose={() => setOpenIds(null)}>
        {openIds ? <BulkForm ids={openIds} onClose={() => setOpenIds(null)} onDone={onDone} /> : null}
      </dialog>
    </>
  );
}

function BulkForm({ ids, onClose, onDone }: { ids: string[]; onClose: () => void; onDone: () => void }) {
  const [expected, setExpected] = useState(() => confirmationText(ids.length));
  const [typed, setTyped] = useState("");
  const [reason, setReason] = useState("");
  const [key, setKey] = useState(newIdempotencyKey);
  const [answer, setAnswer] = useState<BulkAnswer | null>(null);
  const run = useMutation({
    mutationFn: () =>
      apiFetch<BulkAnswer>("/api/v1/reconcile", {
        method: "POST",
        idempotencyKey: key,
        body: { recordIds: ids, confirm: typed.trim(), reason: reason.trim() },
      }),
    onSuccess: (a) => {
      setKey(newIdempotencyKey());
      setAnswer(a);
      onDone();
    },
    onError: (err) => {
      if (!(err instanceof ApiError && err.status === 0)) setKey(newIdempotencyKey());
      const text = err instanceof ApiError ? err.problem?.expectedConfirmation : undefined;
      if (typeof text === "string") {
        setExpected(text);
        setTyped("");
      }
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    run.mutate();
  };
  const edit = (set: (v: string) => void) => (v: string) => {
    set(v);
    setKey(newIdempotencyKey());
  };

  return (
    <div className="bulk-body">
      <h2 id="bulk-title">
        Check {ids.length.toLocaleString("en")} record{ids.length === 1 ? "" : "s"} with the provider
      </h2>
      {answer ? (
        <>
          <p className="notice ok" role="status" data-testid="bulk-summary">
            Checked {answer.count.toLocaleString("en")}:{" "}
            {Object.entries(answer.summary)
              .map(([k, v]) => `${v} ${(ACTION_LABEL[k] ?? k).toLowerCase()}`)
              .join(", ")}
            .
          </p>
          <ScrollBox label="Outcomes per record">
            <table className="data-table compact stack-table" data-testid="bulk-outcomes">
              <thead>
                <tr>
                  <th scope="col">Record</th>
                  <th scope="col">Result</th>
                  <th scope="col">Details</th>
                </tr>
              </thead>
              <tbody>
                {answer.outcomes.map((o) => {
                  // A refusal says its own reason (nothing to ask the provider, not found …), never a generic "refused".
                  const kind = o.outcome?.action ?? (o.error?.cause ? "nothing_to_check" : "refused");
                  return (
                    <tr key={o.recordId} data-testid="bulk-outcome" data-id={o.recordId} data-action={kind} data-cause={o.error?.cause}>
                      <td data-label="Record">
                        <a href={`/records/${o.recordId}`}>{o.recordId}</a>
                      </td>
                      <td data-label="Result">
                        <span className={`bulk-action bulk-action-${kind}`}>{o.outcome ? (ACTION_LABEL[kind] ?? kind) : (o.error?.title ?? "Refused")}</span>
                      </td>
                      <td data-label="Details">{o.outcome ? o.outcome.message : o.error?.detail}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </ScrollBox>
          <div className="bulk-buttons">
            <button type="button" className="primary" data-testid="bulk-close" onClick={onClose}>
              Close
            </button>
          </div>
        </>
      ) : (
        <form onSubmit={submit} className="resolve-form" aria-label="Confirm the bulk check">
          <p>
            Each record&apos;s provider is asked what became of its request; records it answers for are completed or failed, the others get their next check
            scheduled. Every check is audited with your reason.
          </p>
          <label>
            Reason
            <input
              type="text"
              data-testid="bulk-reason"
              value={reason}
              onChange={(e) => edit(setReason)(e.target.value)}
              minLength={3}
              maxLength={2000}
              required
              autoFocus
            />
          </label>
          <label>
            <span>
              Type <code data-testid="bulk-expected">{expected}</code> to confirm
            </span>
            <input
              type="text"
              data-testid="bulk-confirm-input"
              value={typed}
              onChange={(e) => edit(setTyped)(e.target.value)}
              autoComplete="off"
              spellCheck={false}
              aria-invalid={typed !== "" && typed.trim() !== expected}
            />
          </label>
          {run.isError ? (
            <p className="notice error" role="alert" data-testid="bulk-error">
              {run.error.message}
            </p>
          ) : null}
          <div className="bulk-buttons">
            <button
              type="submit"
              className="primary"
              data-testid="bulk-confirm-submit"
              disabled={run.isPending || typed.trim() !== expected || reason.trim().length < 3}
            >
              {run.isPending ? "Checking…" : "Check with provider"}
            </button>
            <button type="button" onClick={onClose} disabled={run.isPending}>
              Cancel
            </button>
          </div>
        </form>
      )}
    </div>
  );
}
