"use client";

import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useTouched } from "@/components/client/use-touched";
import { useState, type FormEvent } from "react";
import { apiFetch } from "@/components/client/api";
import { When } from "@/components/time/When";
import { queryKeys } from "@/components/client/query-keys";
import { ActionNotice, useAction } from "@/components/client/use-action";
import { useIntentKey } from "@/components/client/intent-key";
import { EmptyState, ErrorState, SkeletonRows } from "@/components/queue/read-ui";
import { policyName, type PolicyJson } from "./shared";
import { ScrollBox } from "@/components/ScrollBox";
import { useProposal, type PolicyProposal } from "@/components/insights/proposal";

/**
 * Retention policies: per operation, and the default for every other operation.
 * Admins (retention.manage) edit, add and delete them, each with a reason.
 */
export function PoliciesPanel({ canManage }: { canManage: boolean }) {
  const client = useQueryClient();
  const query = useQuery({ queryKey: queryKeys.retention.policies, queryFn: () => apiFetch<{ policies: PolicyJson[] }>("/api/v1/retention/policies") });
  const { message, busy, run } = useAction(() => client.invalidateQueries({ queryKey: queryKeys.retention.all }));
  const [chosen, setEditing] = useState<string | null>(null);
  const policies = query.data?.policies ?? [];
  // "Propose policy" (Insights › Retention advisor): the form opens pre-filled; saving stays the admin's audited action.
  const proposal = useProposal();
  const [proposalDismissed, setProposalDismissed] = useState(false);
  const proposed = proposal ? policies.find((p) => p.operation === proposal.operation) : undefined;
  const editing = chosen ?? (canManage && proposed && !proposalDismissed ? proposed.id : null);

  return (
    <section className="panel" aria-labelledby="policies-h" data-testid="policies-panel">
      <h2 id="policies-h">Retention policies</h2>
      <p className="subtle">
        Completed and failed records are kept <em>N</em> days after they expire, events <em>M</em> days after they occurred (days of 24 h). An operation without
        its own policy follows the default; a disabled policy (or no default) keeps its rows forever.
      </p>
      <ActionNotice message={message} testId="policies-message" />
      {proposal ? (
        <p className="notice" data-testid="policy-proposal">
          The retention advisor proposes for <code>{proposal.operation}</code>: records {proposal.keepRecordsDays} days after expiry, events{" "}
          {proposal.keepEventsDays} days. {canManage ? "Check the form, give a reason and save it." : "An admin (retention.manage) saves it."}
        </p>
      ) : null}
      {query.isError ? (
        <ErrorState error={query.error} onRetry={() => void query.refetch()} />
      ) : !query.data ? (
        <SkeletonRows cols={5} rows={2} label="Loading retention policies" />
      ) : policies.length === 0 ? (
        <EmptyState title="No retention policy: nothing is ever purged." testId="policies-empty">
          {canManage ? "Add a default policy below." : "An admin (retention.manage) can add one."}
        </EmptyState>
      ) : (
        <ScrollBox label="Retention policies" className="rs-table-wrap">
          <table className="rs-table" data-testid="policies-table">
            <thead>
              <tr>
                <th>Operation</th>
                <th className="num">Keep records (days after expiry)</th>
                <th className="num">Keep events (days)</th>
                <th>State</th>
                <th>Last change</th>
                {canManage ? <th aria-label="Actions" /> : null}
              </tr>
            </thead>
            <tbody>
              {policies.map((p) =>
                editing === p.id ? (
                  <tr key={p.id} data-testid="policy-row" data-operation={p.operation ?? ""}>
                    <td colSpan={6}>
                      <PolicyForm
                        policy={p}
                        proposal={proposal?.operation === p.operation ? proposal : undefined}
                        busy={busy}
                        onCancel={() => {
                          setEditing(null);
                          setProposalDismissed(true);
                        }}
                        onSubmit={async (body, keyFor, settle) => {
                          const ok = await run(async () => {
                            try {
                              const r = await apiFetch<{ policy: PolicyJson }>(`/api/v1/retention/policies/${p.id}`, {
                                method: "PUT",
                                body,
                                idempotencyKey: keyFor(body),
                              });
                              settle();
                              return `Saved: ${policyName(r.policy.operation)} keeps records ${r.policy.keepRecordsDays} d, events ${r.policy.keepEventsDays} d${r.policy.enabled ? "" : " (disabled)"}.`;
                            } catch (err) {
                              settle(err);
                              throw err;
                            }
                          });
                          if (ok) {
                            setEditing(null);
                            setProposalDismissed(true);
                          }
                        }}
                        onDelete={async (reason, keyFor, settle) => {
                          const body = { reason };
                          const ok = await run(async () => {
                            try {
                              await apiFetch(`/api/v1/retention/policies/${p.id}`, {
                                method: "DELETE",
                                body,
                                idempotencyKey: keyFor({ delete: p.id, ...body }),
                              });
                              settle();
                              return `Deleted the policy of ${policyName(p.operation)}.`;
                            } catch (err) {
                              settle(err);
                              throw err;
                            }
                          });
                          if (ok) setEditing(null);
                        }}
                      />
                    </td>
                  </tr>
                ) : (
                  <tr key={p.id} data-testid="policy-row" data-operation={p.operation ?? ""}>
                    <td>{p.operation === null ? <strong>{policyName(null)}</strong> : <code>{p.operation}</code>}</td>
                    <td className="num" data-testid="policy-keep-records">
                      {p.keepRecordsDays}
                    </td>
                    <td className="num" data-testid="policy-keep-events">
                      {p.keepEventsDays}
                    </td>
                    <td>{p.enabled ? "enabled" : <span className="purge-state purge-state-cancelled">disabled — keeps everything</span>}</td>
                    <td className="subtle nowrap">
                      <When iso={p.updatedAt} /> {p.updatedByLabel ? `· ${p.updatedByLabel}` : ""}
                    </td>
                    {canManage ? (
                      <td>
                        <button type="button" disabled={busy} onClick={() => setEditing(p.id)} data-testid="policy-edit">
                          Edit
                        </button>
                      </td>
                    ) : null}
                  </tr>
                ),
              )}
            </tbody>
          </table>
        </ScrollBox>
      )}
      {canManage && query.data ? (
        <NewPolicyForm
          key={proposal && !proposed ? proposal.operation : ""}
          proposal={proposal && !proposed ? proposal : undefined}
          busy={busy}
          hasDefault={policies.some((p) => p.operation === null)}
          onSubmit={(body, keyFor, settle) =>
            run(async () => {
              try {
                const r = await apiFetch<{ policy: PolicyJson }>("/api/v1/retention/policies", { method: "POST", body, idempotencyKey: keyFor(body) });
                settle();
                setProposalDismissed(true);
                return `Added: ${policyName(r.policy.operation)} keeps records ${r.policy.keepRecordsDays} d, events ${r.policy.keepEventsDays} d.`;
              } catch (err) {
                settle(err);
                throw err;
              }
            })
          }
        />
      ) : null}
    </section>
  );
}

type KeyFor = (body: unknown) => string;
type Settle = (err?: unknown) => void;

function PolicyForm({
  policy,
  proposal,
  busy,
  onSubmit,
  onDelete,
  onCancel,
}: {
  policy: PolicyJson;
  proposal?: PolicyProposal;
  busy: boolean;
  onSubmit: (body: { keepRecordsDays: number; keepEventsDays: number; enabled: boolean; reason: string }, keyFor: KeyFor, settle: Settle) => Promise<void>;
  onDelete: (reason: string, keyFor: KeyFor, settle: Settle) => Promise<void>;
  onCancel: () => void;
}) {
  const intent = useIntentKey();
  const [records, setRecords] = useState(String(proposal?.keepRecordsDays ?? policy.keepRecordsDays));
  const [events, setEvents] = useState(String(proposal?.keepEventsDays ?? policy.keepEventsDays));
  const [enabled, setEnabled] = useState(policy.enabled);
  const [reason, setReason] = useState("");
  const days = (v: string) => /^\d{1,5}$/.test(v.trim()) && Number(v) <= 36500;
  const valid = days(records) && days(events) && reason.trim().length >= 3;

  function submit(e: FormEvent) {
    e.preventDefault();
    if (!valid) return;
    void onSubmit({ keepRecordsDays: Number(records), keepEventsDays: Number(events), enabled, reason: reason.trim() }, intent.keyFor, intent.settle);
  }

  return (
    <form className="retention-form" onSubmit={submit} aria-label={`Edit the policy of ${policyName(policy.operation)}`} data-testid="policy-form">
      <strong>{policyName(policy.operation)}</strong>
      <div className="retention-form-row">
        <label>
          Keep records (days after expiry)
          <input type="number" min={0} max={36500} value={records} onChange={(e) => setRecords(e.target.value)} data-testid="policy-records-days" required />
        </label>
        <label>
          Keep events (days)
          <input type="number" min={0} max={36500} value={events} onChange={(e) => setEvents(e.target.value)} data-testid="policy-events-days" required />
        </label>
        <label className="retention-check">
          <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.target.checked)} data-testid="policy-enabled" /> enabled
        </label>
      </div>
      <label>
        Reason <span className="subtle">(kept in the audit log)</span>
        <input type="text" minLength={3} maxLength={2000} value={reason} onChange={(e) => setReason(e.target.value)} data-testid="policy-reason" required />
      </label>
      <div className="retention-buttons">
        <button type="submit" className="primary" disabled={busy || !valid} data-testid="policy-save">
          Save
        </button>
        <button type="button" disabled={busy} onClick={onCancel}>
          Cancel
        </button>
        <button
          type="button"
          className="retention-danger"
          disabled={busy || reason.trim().length < 3}
          title={reason.trim().length < 3 ? "Give a reason first" : undefined}
          onClick={() => void onDelete(reason.trim(), intent.keyFor, intent.settle)}
          data-testid="policy-delete"
        >
          Delete policy
        </button>
      </div>
    </form>
  );
}

function NewPolicyForm({
  proposal,
  busy,
  hasDefault,
  onSubmit,
}: {
  proposal?: PolicyProposal;
  busy: boolean;
  hasDefault: boolean;
  onSubmit: (
    body: { operation: string | null; keepRecordsDays: number; keepEventsDays: number; reason: string },
    keyFor: KeyFor,
    settle: Settle,
  ) => Promise<boolean>;
}) {
  const intent = useIntentKey();
  const [operation, setOperation] = useState(proposal?.operation ?? "");
  const touched = useTouched();
  const [records, setRecords] = useState(String(proposal?.keepRecordsDays ?? 30));
  const [events, setEvents] = useState(String(proposal?.keepEventsDays ?? 90));
  const [reason, setReason] = useState("");
  const opOk = operation.trim() === "" ? !hasDefault : /^[a-z][a-z0-9_.]{0,99}$/.test(operation.trim());
  const days = (v: string) => /^\d{1,5}$/.test(v.trim()) && Number(v) <= 36500;
  const valid = opOk && days(records) && days(events) && reason.trim().length >= 3;

  async function submit(e: FormEvent) {
    e.preventDefault();
    if (!valid) return;
    const ok = await onSubmit(
      { operation: operation.trim() || null, keepRecordsDays: Number(records), keepEventsDays: Number(events), reason: reason.trim() },
      intent.keyFor,
      intent.settle,
    );
    if (ok) {
      setOperation("");
      setReason("");
    }
  }

  return (
    <form className="retention-form" onSubmit={submit} aria-label="Add a retention policy" data-testid="policy-add-form">
      <h3>Add a policy</h3>
      <div className="retention-form-row">
        <label>
          Operation <span className="subtle">{hasDefault ? "(lower_snake_case)" : "(empty = the default)"}</span>
          <input
            type="text"
            value={operation}
            onChange={(e) => {
              setOperation(e.target.value);
              touched.touch("operation");
            }}
            onBlur={touched.onBlur("operation")}
            placeholder={hasDefault ? "capture_payment" : "empty: default"}
            aria-invalid={touched.invalid("operation", !opOk)}
            data-testid="policy-add-operation"
          />
        </label>
        <label>
          Keep records (days after expiry)
          <input type="number" min={0} max={36500} value={records} onChange={(e) => setRecords(e.target.value)} data-testid="policy-add-records-days" />
        </label>
        <label>
          Keep events (days)
          <input type="number" min={0} max={36500} value={events} onChange={(e) => setEvents(e.target.value)} data-testid="policy-add-events-days" />
        </label>
      </div>
      <label>
        Reason <span className="subtle">(kept in the audit log)</span>
        <input type="text" minLength={3} maxLength={2000} value={reason} onChange={(e) => setReason(e.target.value)} data-testid="policy-add-reason" />
      </label>
      <div>
        <button type="submit" disabled={busy || !valid} data-testid="policy-add">
          Add policy
        </button>
      </div>
    </form>
  );
}
