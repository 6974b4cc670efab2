"use client";

import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { apiFetch } from "@/components/client/api";
import { When } from "@/components/time/When";
import { queryKeys } from "@/components/client/query-keys";
import { ActionNotice, useAction } from "@/components/client/use-action";
import { useIntentKey } from "@/components/client/intent-key";
import { EmptyState, ErrorState, SkeletonRows } from "@/components/queue/read-ui";
import type { HoldJson } from "./shared";
import { ScrollBox } from "@/components/ScrollBox";

/** Legal holds on whole scopes: none of their records or events is purged while active. Set and lift with a reason (legal_holds.manage). */
export function ScopeHoldsPanel({ canManage }: { canManage: boolean }) {
  const client = useQueryClient();
  const [showLifted, setShowLifted] = useState(false);
  const query = useQuery({
    queryKey: [...queryKeys.retention.legalHolds, showLifted ? "all" : "active"],
    queryFn: () => apiFetch<{ holds: HoldJson[] }>(`/api/v1/legal-holds?state=${showLifted ? "all" : "active"}`),
  });
  const { message, busy, run } = useAction(() => client.invalidateQueries({ queryKey: queryKeys.retention.all }));
  const holds = query.data?.holds ?? [];

  return (
    <section className="panel" aria-labelledby="holds-h" data-testid="scope-holds-panel">
      <div className="toolbar">
        <h2 id="holds-h">Legal holds on scopes</h2>
        <label className="subtle">
          <input type="checkbox" checked={showLifted} onChange={(e) => setShowLifted(e.target.checked)} data-testid="holds-show-lifted" /> show lifted ones too
        </label>
      </div>
      <p className="subtle">
        A scope under a legal hold keeps all its records and events, whatever the policies. Single records are held from their record page.
      </p>
      <ActionNotice message={message} testId="holds-message" />
      {query.isError ? (
        <ErrorState error={query.error} onRetry={() => void query.refetch()} />
      ) : !query.data ? (
        <SkeletonRows cols={4} rows={2} label="Loading legal holds" />
      ) : holds.length === 0 ? (
        <EmptyState title={showLifted ? "No scope has ever been held." : "No scope is under a legal hold."} testId="holds-empty" />
      ) : (
        <ScrollBox label="Scope holds" className="rs-table-wrap">
          <table className="rs-table" data-testid="holds-table">
            <thead>
              <tr>
                <th>Scope</th>
                <th>Set</th>
                <th>Reason</th>
                <th>State</th>
                {canManage ? <th aria-label="Actions" /> : null}
              </tr>
            </thead>
            <tbody>
              {holds.map((h) => (
                <tr key={h.id} data-testid="hold-row" data-scope={h.scope} data-active={h.active}>
                  <td>
                    <code>{h.scope}</code>
                  </td>
                  <td className="nowrap">
                    <When iso={h.setAt} />
                    <div className="subtle">{h.setByLabel}</div>
                  </td>
                  <td>{h.reason}</td>
                  <td>
                    {h.active ? (
                      <strong>active</strong>
                    ) : (
                      <span className="subtle">
                        lifted <When iso={h.liftedAt} /> by {h.liftedByLabel}: {h.liftReason}
                      </span>
                    )}
                  </td>
                  {canManage ? <td>{h.active ? <LiftForm hold={h} busy={busy} run={run} /> : null}</td> : null}
                </tr>
              ))}
            </tbody>
          </table>
        </ScrollBox>
      )}
      {canManage ? <SetHoldForm busy={busy} run={run} /> : null}
    </section>
  );
}

type Run = (action: () => Promise<string>) => Promise<boolean>;

function LiftForm({ hold, busy, run }: { hold: HoldJson; busy: boolean; run: Run }) {
  const intent = useIntentKey();
  const [reason, setReason] = useState("");
  async function submit(e: FormEvent) {
    e.preventDefault();
    const body = { reason: reason.trim() };
    await run(async () => {
      try {
        await apiFetch(`/api/v1/legal-holds/${hold.id}/lift`, { method: "POST", body, idempotencyKey: intent.keyFor(body) });
        intent.settle();
        return `Lifted the legal hold on ${hold.scope}.`;
      } catch (err) {
        intent.settle(err);
        throw err;
      }
    });
  }
  return (
    <form className="retention-inline" onSubmit={submit} aria-label={`Lift the legal hold on ${hold.scope}`}>
      <input
        type="text"
        placeholder="Reason to lift"
        minLength={3}
        maxLength={2000}
        value={reason}
        onChange={(e) => setReason(e.target.value)}
        data-testid="hold-lift-reason"
      />
      <button type="submit" disabled={busy || reason.trim().length < 3} data-testid="hold-lift">
        Lift
      </button>
    </form>
  );
}

function SetHoldForm({ busy, run }: { busy: boolean; run: Run }) {
  const intent = useIntentKey();
  const [scope, setScope] = useState("");
  const [reason, setReason] = useState("");
  const scopeOk = /^[A-Za-z0-9_.:@/-]{1,200}$/.test(scope.trim());
  async function submit(e: FormEvent) {
    e.preventDefault();
    if (!scopeOk || reason.trim().length < 3) return;
    const body = { scope: scope.trim(), reason: reason.trim() };
    const ok = await run(async () => {
      try {
        await apiFetch("/api/v1/legal-holds", { method: "POST", body, idempotencyKey: intent.keyFor(body) });
        intent.settle();
        return `${body.scope} is now under a legal hold: none of its records or events will be purged.`;
      } catch (err) {
        intent.settle(err);
        throw err;
      }
    });
    if (ok) {
      setScope("");
      setReason("");
    }
  }
  return (
    <form className="retention-form" onSubmit={submit} aria-label="Put a scope under a legal hold" data-testid="hold-set-form">
      <h3>Hold a scope</h3>
      <div className="retention-form-row">
        <label>
          Scope
          <input
            type="text"
            value={scope}
            onChange={(e) => setScope(e.target.value)}
            placeholder="tenant:acme"
            aria-invalid={scope !== "" && !scopeOk}
            data-testid="hold-scope"
          />
        </label>
        <label>
          Reason <span className="subtle">(kept in the audit log)</span>
          <input type="text" minLength={3} maxLength={2000} value={reason} onChange={(e) => setReason(e.target.value)} data-testid="hold-reason" />
        </label>
      </div>
      <div>
        <button type="submit" disabled={busy || !scopeOk || reason.trim().length < 3} data-testid="hold-set">
          Set legal hold
        </button>
      </div>
    </form>
  );
}
