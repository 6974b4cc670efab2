"use client";

import { useQuery } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { apiFetch } from "@/components/client/api";
import { When } from "@/components/time/When";
import { queryKeys } from "@/components/client/query-keys";
import { useIntentKey } from "@/components/client/intent-key";
import type { HoldJson } from "@/components/retention/shared";
import type { RecordActionProps } from "./types";

/**
 * Legal hold of this record: its state (and an active hold on its whole scope),
 * and — for holders of legal_holds.manage — set / lift with a reason, against the
 * record version on screen (409 when it changed meanwhile). A held record (or a
 * record of a held scope) is never purged.
 */
export function LegalHoldPanel({ record, access, onChanged }: RecordActionProps) {
  const intent = useIntentKey();
  const [reason, setReason] = useState("");
  const [busy, setBusy] = useState(false);
  const [message, setMessage] = useState<{ kind: "ok" | "error"; text: string } | null>(null);
  const scopeHold = useQuery({
    queryKey: [...queryKeys.retention.legalHolds, "scope", record.scope],
    queryFn: () => apiFetch<{ holds: HoldJson[] }>(`/api/v1/legal-holds?state=active&scope=${encodeURIComponent(record.scope)}`),
    retry: false,
  });
  const held = scopeHold.data?.holds[0] ?? null;

  async function submit(e: FormEvent) {
    e.preventDefault();
    if (reason.trim().length < 3) return;
    const body = { hold: !record.legalHold, reason: reason.trim(), expectedVersion: record.version };
    setBusy(true);
    setMessage(null);
    try {
      const r = await apiFetch<{ noop: boolean; record: { legalHold: boolean } }>(`/api/v1/records/${record.id}/legal-hold`, {
        method: "POST",
        body,
        idempotencyKey: intent.keyFor(body),
      });
      intent.settle();
      setMessage({ kind: "ok", text: r.record.legalHold ? "Legal hold set: this record will not be purged." : "Legal hold lifted." });
      setReason("");
      onChanged();
    } catch (err) {
      intent.settle(err);
      setMessage({ kind: "error", text: err instanceof Error ? err.message : String(err) });
    } finally {
      setBusy(false);
    }
  }

  return (
    <section className="panel action-panel legal-hold-panel" aria-label="Legal hold" data-testid="legal-hold-panel" data-held={record.legalHold}>
      <h2>Legal hold</h2>
      <p data-testid="legal-hold-state">
        {record.legalHold ? <strong>This record is under a legal hold: it is never purged.</strong> : <>No legal hold on this record.</>}{" "}
        {held ? (
          <span data-testid="scope-hold-state">
            Its scope <code>{record.scope}</code> is under a legal hold too (since <When iso={held.setAt} />, {held.reason}).
          </span>
        ) : null}
      </p>
      {access.legalHold ? (
        <form className="retention-inline" onSubmit={submit} aria-label={record.legalHold ? "Lift the legal hold" : "Set a legal hold"}>
          <input
            type="text"
            placeholder={record.legalHold ? "Reason to lift the hold" : "Reason for the hold (case, request…)"}
            minLength={3}
            maxLength={2000}
            value={reason}
            onChange={(e) => setReason(e.target.value)}
            data-testid="legal-hold-reason"
          />
          <button type="submit" disabled={busy || reason.trim().length < 3} data-testid="legal-hold-toggle">
            {record.legalHold ? "Lift legal hold" : "Set legal hold"}
          </button>
        </form>
      ) : null}
      {message ? (
        <p className={`notice ${message.kind}`} role={message.kind === "error" ? "alert" : "status"} data-testid="legal-hold-message">
          {message.text}
        </p>
      ) : null}
    </section>
  );
}
