"use client";

import type { Jsonified } from "@/lib/api/json";
import type { RecordSummary } from "@/lib/records/row";
import { useQueryClient } from "@tanstack/react-query";
import { useTouched } from "@/components/client/use-touched";
import Link from "next/link";
import { useState, type FormEvent } from "react";
import { apiFetch } from "@/components/client/api";
import { queryKeys } from "@/components/client/query-keys";
import { formatMoney } from "@/components/records/ui";
import { useIntentKey } from "@/components/client/intent-key";
import type { CompensationJson } from "./shared";

/** What the form needs of a record, as the read API returns it (the server's type). */
export type CompensableRecord = Pick<Jsonified<RecordSummary>, "id" | "amountMinor" | "currency" | "provider" | "providerReference">;

const KINDS = [
  { value: "refund", label: "Refund", hint: "give the money back (all or part)" },
  { value: "void", label: "Void", hint: "cancel an authorisation before it settles" },
  { value: "cancel", label: "Cancel", hint: "cancel the payment at the provider" },
] as const;

/**
 * The request form: kind, amount (minor units, pre-filled with what is left), reason.
 * The server checks everything again (completed record, amount ≤ what is left under a
 * row lock, the record's currency). One Idempotency-Key per submission intent.
 */
export function CompensationRequestForm({
  record,
  remainingMinor,
  relatedRecordId,
  initialReason = "",
  onRequested,
  onCancel,
}: {
  record: CompensableRecord;
  remainingMinor: bigint;
  relatedRecordId?: string;
  initialReason?: string;
  onRequested?: (c: CompensationJson) => void;
  onCancel?: () => void;
}) {
  const client = useQueryClient();
  const intent = useIntentKey();
  const [kind, setKind] = useState<(typeof KINDS)[number]["value"]>("refund");
  const [amount, setAmount] = useState(remainingMinor.toString());
  const touched = useTouched();
  const [reason, setReason] = useState(initialReason);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [done, setDone] = useState<CompensationJson | null>(null);

  const amountOk = /^\d{1,18}$/.test(amount.trim()) && BigInt(amount.trim()) > 0n;
  const tooMuch = amountOk && BigInt(amount.trim()) > remainingMinor;
  const valid = amountOk && !tooMuch && reason.trim().length >= 3;

  async function submit(e: FormEvent) {
    e.preventDefault();
    if (!valid) return;
    const body = {
      recordId: record.id,
      kind,
      amountMinor: amount.trim(),
      currency: record.currency ?? undefined,
      reason: reason.trim(),
      ...(relatedRecordId ? { relatedRecordId } : {}),
    };
    setBusy(true);
    setError(null);
    try {
      const created = await apiFetch<CompensationJson>("/api/v1/compensations", { method: "POST", body, idempotencyKey: intent.keyFor(body) });
      intent.settle();
      setDone(created);
      await client.invalidateQueries({ queryKey: queryKeys.compensations.all });
      onRequested?.(created);
    } catch (err) {
      intent.settle(err);
      setError(err instanceof Error ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  }

  if (done) {
    return (
      <div className="notice ok" role="status" data-testid="compensation-requested" data-id={done.id}>
        Compensation #{done.id} requested: a {done.kind} of {formatMoney(done.amountMinor, done.currency)}. It now waits for approval by someone else (four
        eyes). <Link href="/compensations">Open the approval queue</Link> · <Link href={`/records/${record.id}`}>record #{record.id}</Link>
      </div>
    );
  }

  return (
    <form className="comp-form" onSubmit={submit} aria-label={`Request a compensation of record ${record.id}`} data-testid="compensation-form">
      <fieldset className="comp-kinds">
        <legend>Kind</legend>
        {KINDS.map((k) => (
          <label key={k.value} title={k.hint}>
            <input type="radio" name="kind" value={k.value} checked={kind === k.value} onChange={() => setKind(k.value)} data-testid={`kind-${k.value}`} />{" "}
            {k.label} <span className="subtle">— {k.hint}</span>
          </label>
        ))}
      </fieldset>
      <label>
        Amount in minor units ({record.currency ?? "no currency"}; at most {remainingMinor.toString()} ={" "}
        {formatMoney(remainingMinor.toString(), record.currency)} left)
        <input
          data-testid="compensation-amount"
          inputMode="numeric"
          value={amount}
          onChange={(e) => {
            setAmount(e.target.value);
            touched.touch("amount");
          }}
          onBlur={touched.onBlur("amount")}
          aria-invalid={touched.invalid("amount", !amountOk || tooMuch)}
          aria-describedby="comp-amount-shown"
        />
      </label>
      <p id="comp-amount-shown" className={touched.invalid("amount", tooMuch || !amountOk) ? "form-error" : "subtle"}>
        {!amountOk
          ? "Enter a whole number of minor units greater than 0 (e.g. 1250 for 12.50)."
          : tooMuch
            ? `More than is left to compensate (${formatMoney(remainingMinor.toString(), record.currency)}).`
            : `= ${formatMoney(amount.trim(), record.currency)} on ${record.provider ?? "?"} charge ${record.providerReference ?? "?"}`}
      </p>
      <label>
        Reason <span className="subtle">(recorded in the audit log and shown to the approver)</span>
        <textarea data-testid="compensation-request-reason" rows={3} maxLength={2000} value={reason} onChange={(e) => setReason(e.target.value)} />
      </label>
      {error ? (
        <p className="form-error" role="alert" data-testid="compensation-request-error">
          {error}
        </p>
      ) : null}
      <div className="row-actions">
        <button type="submit" className="primary" data-testid="compensation-request-submit" disabled={busy || !valid}>
          {busy ? "Requesting…" : "Request compensation"}
        </button>
        {onCancel ? (
          <button type="button" onClick={onCancel} disabled={busy}>
            Cancel
          </button>
        ) : null}
        <span className="subtle">Someone else must approve it before anything is sent to the provider.</span>
      </div>
    </form>
  );
}
