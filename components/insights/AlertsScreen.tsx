"use client";

import { retryUnlessClientError } from "@/components/client/api";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { apiFetch } from "@/components/client/api";
import { useIntentKey } from "@/components/client/intent-key";
import { queryKeys } from "@/components/client/query-keys";
import { ActionNotice, useAction } from "@/components/client/use-action";
import { EmptyState, ErrorState, fmtDuration, fmtInt, fmtPercent, SkeletonRows, Stat, When } from "@/components/queue/read-ui";
import type { AlertJson, AlertsJson } from "./types";

const KIND_LABELS: Record<string, string> = {
  conflict_spike: "Conflict spike",
  stuck_growth: "Stuck growth",
  oldest_pending: "Old pending",
  replays_after_expiry: "Retries after expiry",
  new_key_finding: "New key finding",
};

/** Insights › Alerts: what fires now, its evidence, and — for alerts.acknowledge — acknowledging it with a reason. */
export function AlertsScreen({ canAcknowledge }: { canAcknowledge: boolean }) {
  const client = useQueryClient();
  const query = useQuery({
    queryKey: queryKeys.insights.alerts("live"),
    queryFn: () => apiFetch<AlertsJson>("/api/v1/insights/alerts"),
    retry: retryUnlessClientError,
  });
  const { message, busy, run } = useAction(() => client.invalidateQueries({ queryKey: queryKeys.insights.all }));
  const d = query.data;
  const t = d?.thresholds;

  return (
    <div className="rs-screen" data-testid="alerts-screen">
      <ActionNotice message={message} testId="alerts-message" />
      {query.isError && !d ? (
        <ErrorState error={query.error} onRetry={() => void query.refetch()} />
      ) : !d || !t ? (
        <SkeletonRows cols={4} label="Loading alerts" />
      ) : (
        <>
          <section className="cards" aria-label="Alerts now">
            <Stat label="Firing" value={<span data-testid="alerts-firing">{fmtInt(d.counts.firing)}</span>} />
            <Stat label="Unacknowledged" value={<span data-testid="alerts-unacknowledged">{fmtInt(d.counts.unacknowledged)}</span>} />
            <Stat label="Critical" value={fmtInt(d.counts.critical)} />
            <Stat
              label="Evaluated"
              value={<When iso={d.evaluatedAt} />}
              hint={
                d.rememberedAt ? (
                  <>
                    server last remembered them <When iso={d.rememberedAt} />
                  </>
                ) : (
                  "not remembered by the server yet"
                )
              }
            />
          </section>
          {d.alerts.length === 0 ? (
            <EmptyState title="Nothing needs attention." testId="alerts-empty" />
          ) : (
            <div className="insight-findings">
              {d.alerts.map((a) => (
                <AlertCard key={a.fingerprint} alert={a} canAcknowledge={canAcknowledge} busy={busy} run={run} />
              ))}
            </div>
          )}
          <details className="panel" data-testid="alert-thresholds">
            <summary>Thresholds (INSIGHTS_* settings)</summary>
            <ul>
              <li>
                Conflict spike: at least {t.conflictMinCount} conflicts and {fmtPercent(t.conflictMinRate)} of requests in{" "}
                {fmtDuration(t.conflictWindowSeconds)}, and {t.conflictFactor}× the scope and operation&apos;s own rate over the{" "}
                {fmtDuration(t.conflictBaselineSeconds)} before.
              </li>
              <li>
                Stuck growth: {t.stuckGrowth} records of an operation turned stuck within {fmtDuration(t.stuckWindowSeconds)}.
              </li>
              <li>Old pending: the oldest pending record of an operation older than {fmtDuration(t.oldestPendingSeconds)}.</li>
              <li>
                Retries after expiry: {t.expiredReplays} or more within {fmtDuration(t.expiredWindowSeconds)}.
              </li>
              <li>New key finding: first seen less than {t.newFindingHours} h ago.</li>
            </ul>
          </details>
        </>
      )}
    </div>
  );
}

function AlertCard({
  alert: a,
  canAcknowledge,
  busy,
  run,
}: {
  alert: AlertJson;
  canAcknowledge: boolean;
  busy: boolean;
  run: (f: () => Promise<string>) => Promise<boolean>;
}) {
  const [open, setOpen] = useState(false);
  const [reason, setReason] = useState("");
  const intent = useIntentKey();
  const valid = reason.trim().length >= 3;

  async function submit(e: FormEvent) {
    e.preventDefault();
    if (!valid) return;
    const body = { fingerprint: a.fingerprint, reason: reason.trim() };
    const ok = await run(async () => {
      try {
        await apiFetch("/api/v1/insights/alerts/acknowledge", { method: "POST", body, idempotencyKey: intent.keyFor(body) });
        intent.settle();
        return `Acknowledged: ${a.summary}`;
      } catch (err) {
        intent.settle(err);
        throw err;
      }
    });
    if (ok) setOpen(false);
  }

  return (
    <article
      className={`panel insight-alert insight-${a.severity}`}
      data-testid="alert"
      data-kind={a.kind}
      data-scope={a.scope ?? ""}
      data-operation={a.operation ?? ""}
    >
      <h2>
        <span className="role-badge">{a.severity}</span> {KIND_LABELS[a.kind] ?? a.kind}
        {a.scope || a.operation ? <span className="subtle"> · {[a.scope, a.operation].filter(Boolean).join(" · ")}</span> : null}
      </h2>
      <p data-testid="alert-summary">{a.summary}</p>
      <p className="subtle">
        {a.firstSeenAt ? (
          <>
            Firing since <When iso={a.firstSeenAt} />
          </>
        ) : (
          "Just found"
        )}
        {a.notifiedAt ? (
          <>
            {" "}
            · webhook told <When iso={a.notifiedAt} />
          </>
        ) : null}
      </p>
      {a.acknowledged ? (
        <p className="notice ok" data-testid="alert-acknowledged">
          Acknowledged by {a.acknowledged.by} <When iso={a.acknowledged.at} />: “{a.acknowledged.reason}”
        </p>
      ) : canAcknowledge ? (
        open ? (
          <form className="retention-form" onSubmit={submit} aria-label={`Acknowledge: ${a.summary}`} data-testid="ack-form">
            <label>
              Reason <span className="subtle">(kept in the audit log)</span>
              <input type="text" minLength={3} maxLength={2000} value={reason} onChange={(e) => setReason(e.target.value)} data-testid="ack-reason" required />
            </label>
            <div className="retention-buttons">
              <button type="submit" className="primary" disabled={busy || !valid} data-testid="ack-submit">
                Acknowledge
              </button>
              <button type="button" disabled={busy} onClick={() => setOpen(false)}>
                Cancel
              </button>
            </div>
          </form>
        ) : (
          <button type="button" onClick={() => setOpen(true)} data-testid="ack-open">
            Acknowledge…
          </button>
        )
      ) : (
        <p className="subtle">Not acknowledged yet (operators and admins can).</p>
      )}
    </article>
  );
}
