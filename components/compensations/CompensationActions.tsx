"use client";

import { useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { apiFetch } from "@/components/client/api";
import { queryKeys } from "@/components/client/query-keys";
import { ActionNotice, type ActionMessage } from "@/components/client/use-action";
import { formatMoney } from "@/components/records/ui";
import { useIntentKey } from "@/components/client/intent-key";
import type { CompensationJson } from "./shared";

type Verb = "approve" | "reject" | "retry";

/** After a change: the compensation as it is now, and what to tell the user. */
export type OnCompensationChanged = (change: { compensation: CompensationJson; message: NonNullable<ActionMessage> }) => void;

const VERB: Record<Verb, { label: string; busy: string; ask: string; placeholder: string }> = {
  approve: {
    label: "Approve",
    busy: "Approving and executing…",
    ask: "Why do you approve it?",
    placeholder: "e.g. checked both charges at the provider: duplicate confirmed",
  },
  reject: { label: "Reject", busy: "Rejecting…", ask: "Why do you reject it?", placeholder: "e.g. not a duplicate: two different orders" },
  retry: {
    label: "Retry",
    busy: "Retrying…",
    ask: "Why retry now?",
    placeholder: "e.g. provider timed out; same idempotency key, safe to resend",
  },
};

function outcomeText(verb: Verb, c: CompensationJson): string {
  const amount = formatMoney(c.amountMinor, c.currency);
  if (verb === "reject") return `Compensation #${c.id} rejected.`;
  if (c.state === "executed")
    return `${verb === "approve" ? "Approved and executed" : "Executed"}: ${c.kind} of ${amount} (provider id ${c.providerCompensationId}).`;
  if (c.state === "failed") return `${verb === "approve" ? "Approved, but the" : "The"} provider call failed: ${c.lastError ?? "no detail"}`;
  return `Compensation #${c.id} is ${c.state}.`;
}

/**
 * Approve / reject / retry one compensation, each asking for a reason (audited). The
 * buttons shown are the ones the server says the viewer may use; otherwise its note
 * (e.g. "you requested it: someone else must approve") is shown.
 */
export function CompensationActions({ compensation: c, onChanged }: { compensation: CompensationJson; onChanged?: OnCompensationChanged }) {
  const client = useQueryClient();
  const [open, setOpen] = useState<Verb | null>(null);
  const [reason, setReason] = useState("");
  const [busy, setBusy] = useState(false);
  const [message, setMessage] = useState<ActionMessage>(null);
  const intent = useIntentKey();
  const verbs = (["approve", "reject", "retry"] as const).filter((v) => c.actions[v]);

  async function submit(e: FormEvent) {
    e.preventDefault();
    if (!open || reason.trim().length < 3) return;
    const body = { reason: reason.trim() };
    setBusy(true);
    setMessage(null);
    try {
      const result = await apiFetch<CompensationJson>(`/api/v1/compensations/${c.id}/${open}`, {
        method: "POST",
        body,
        idempotencyKey: intent.keyFor({ verb: open, id: c.id, ...body }),
      });
      intent.settle();
      const outcome = { kind: result.state === "failed" ? "error" : "ok", text: outcomeText(open, result) } as const;
      setMessage(outcome);
      setOpen(null);
      setReason("");
      // Tell the screen first: this row may leave the list it is in (e.g. "waiting for approval") on the refetch.
      onChanged?.({ compensation: result, message: outcome });
      await client.invalidateQueries({ queryKey: queryKeys.compensations.all });
    } catch (err) {
      intent.settle(err);
      setMessage({ kind: "error", text: err instanceof Error ? err.message : String(err) });
      await client.invalidateQueries({ queryKey: queryKeys.compensations.all });
    } finally {
      setBusy(false);
    }
  }

  return (
    <div className="comp-actions" data-testid="compensation-actions">
      {verbs.length === 0 && c.note ? (
        <span className="subtle" data-testid="compensation-note">
          {c.note}
        </span>
      ) : null}
      {open === null ? (
        verbs.length ? (
          <div className="row-actions">
            {verbs.map((v) => (
              <button
                key={v}
                type="button"
                className={v === "approve" ? "primary" : undefined}
                data-testid={`compensation-${v}`}
                onClick={() => {
                  setOpen(v);
                  setMessage(null);
                }}
              >
                {VERB[v].label}…
              </button>
            ))}
          </div>
        ) : null
      ) : (
        <form className="comp-reason-form" onSubmit={submit} aria-label={`${VERB[open].label} compensation ${c.id}`}>
          <label>
            {VERB[open].ask} <span className="subtle">(recorded in the audit log)</span>
            <input
              autoFocus
              data-testid="compensation-reason"
              value={reason}
              maxLength={2000}
              onChange={(e) => setReason(e.target.value)}
              placeholder={VERB[open].placeholder}
            />
          </label>
          {open === "approve" ? (
            <p className="subtle">
              Approving executes it at once: a {c.kind} of {formatMoney(c.amountMinor, c.currency)} on {c.provider} charge{" "}
              <span className="mono">{c.providerReference}</span>.
            </p>
          ) : null}
          <div className="row-actions">
            <button type="submit" className="primary" data-testid="compensation-submit" disabled={busy || reason.trim().length < 3}>
              {busy ? VERB[open].busy : VERB[open].label}
            </button>
            <button type="button" disabled={busy} onClick={() => setOpen(null)}>
              Cancel
            </button>
          </div>
        </form>
      )}
      <ActionNotice message={message} testId="compensation-message" />
    </div>
  );
}
