"use client";

import { useQueryClient } from "@tanstack/react-query";
import { useTouched } from "@/components/client/use-touched";
import { useState, type FormEvent } from "react";
import { apiFetch } from "@/components/client/api";
import { When } from "@/components/time/When";
import { queryKeys } from "@/components/client/query-keys";
import { useIntentKey } from "@/components/client/intent-key";
import { ErrorState } from "@/components/queue/read-ui";
import { fmt, policyName, type DryRunJson, type RunJson } from "./shared";
import { ScrollBox } from "@/components/ScrollBox";
import { MAX_BATCH_SIZE } from "@/lib/retention/config";

/**
 * Dry run first (GET /api/v1/retention/dry-run): per policy, what would be deleted and
 * what is kept past the window, and why. Then "Run purge": the purge is started for the
 * dry run's moment (asOf), and only after the operator types the number of records it
 * deletes (the server checks the number again and refuses when it changed).
 */
export function DryRunPanel({ disabledReason }: { disabledReason: string | null }) {
  const [dry, setDry] = useState<DryRunJson | null>(null);
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState<unknown>(null);

  async function runDry() {
    setLoading(true);
    setError(null);
    try {
      setDry(await apiFetch<DryRunJson>("/api/v1/retention/dry-run?samples=5"));
    } catch (err) {
      setError(err);
    } finally {
      setLoading(false);
    }
  }

  return (
    <section className="panel" aria-labelledby="dry-run-h" data-testid="dry-run-panel">
      <div className="toolbar">
        <h2 id="dry-run-h">Dry run and purge</h2>
        <button type="button" className="primary" onClick={() => void runDry()} disabled={loading} data-testid="dry-run-button">
          {loading ? "Counting…" : dry ? "Dry run again" : "Dry run"}
        </button>
      </div>
      <p className="subtle">
        A purge deletes only <code>completed</code>/<code>failed</code> records past their policy&apos;s window with no legal hold (record or scope), no open
        reconciliation item, no compensation in progress and no unsent outbox message — never <code>processing</code> or <code>pending</code> ones — and events
        past their window that the overview has already counted and that no hold covers.
      </p>
      {error ? <ErrorState error={error} onRetry={() => void runDry()} /> : null}
      {dry ? <DryRunResult dry={dry} /> : null}
      {dry ? (
        disabledReason ? (
          <p className="notice-muted">{disabledReason}</p>
        ) : (
          <StartPurgeForm key={dry.asOf} dry={dry} onStarted={() => setDry(null)} />
        )
      ) : null}
    </section>
  );
}

function DryRunResult({ dry }: { dry: DryRunJson }) {
  const recordLabels = Object.fromEntries(dry.reasons.records.map((r) => [r.reason, r.label]));
  const eventLabels = Object.fromEntries(dry.reasons.events.map((r) => [r.reason, r.label]));
  const kept = (counts: Record<string, number>, labels: Record<string, string>) =>
    Object.entries(counts)
      .filter(([, n]) => n > 0)
      .map(([k, n]) => `${labels[k] ?? k}: ${fmt(n)}`)
      .join(" · ") || "—";
  return (
    <div data-testid="dry-run-result">
      <p>
        As of <When iso={dry.asOf} />, a purge would delete <strong data-testid="dry-run-total-records">{fmt(dry.totals.records)}</strong> records and{" "}
        <strong data-testid="dry-run-total-events">{fmt(dry.totals.events)}</strong> events.
        {dry.policies.length === 0 ? " There is no retention policy, so nothing is eligible." : null}
      </p>
      {dry.policies.length ? (
        <ScrollBox label="Dry run per operation" className="rs-table-wrap">
          <table className="rs-table" data-testid="dry-run-table">
            <thead>
              <tr>
                <th>Policy</th>
                <th className="num">Records to delete</th>
                <th>Records kept past the window</th>
                <th className="num">Events to delete</th>
                <th>Events kept past the window</th>
                <th>Sample records</th>
              </tr>
            </thead>
            <tbody>
              {dry.policies.map((p) => (
                <tr key={p.policy.id} data-testid="dry-run-policy-row" data-operation={p.policy.operation ?? ""}>
                  <td>
                    {p.policy.operation === null ? <strong>{policyName(null)}</strong> : <code>{p.policy.operation}</code>}
                    <div className="subtle">
                      {p.policy.enabled
                        ? `records ${p.policy.keepRecordsDays} d after expiry, events ${p.policy.keepEventsDays} d`
                        : "disabled: keeps everything"}
                    </div>
                  </td>
                  <td className="num" data-testid="dry-run-records">
                    <strong>{fmt(p.records.eligible)}</strong>
                  </td>
                  <td className="subtle">{kept(p.records.protected, recordLabels)}</td>
                  <td className="num" data-testid="dry-run-events">
                    <strong>{fmt(p.events.eligible)}</strong>
                  </td>
                  <td className="subtle">{kept(p.events.protected, eventLabels)}</td>
                  <td>
                    {p.samples.length === 0
                      ? "—"
                      : p.samples.map((s) => (
                          <div key={s.id} className="nowrap">
                            <a href={`/records/${s.id}`}>#{s.id}</a>{" "}
                            <span className="subtle">
                              {s.scope} · {s.status} · expired <When iso={s.expiresAt} />
                            </span>
                          </div>
                        ))}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </ScrollBox>
      ) : null}
    </div>
  );
}

function StartPurgeForm({ dry, onStarted }: { dry: DryRunJson; onStarted: (run: RunJson) => void }) {
  const client = useQueryClient();
  const intent = useIntentKey();
  const [reason, setReason] = useState("");
  const [batchSize, setBatchSize] = useState("1000");
  const touched = useTouched();
  const [pauseMs, setPauseMs] = useState("100");
  const [confirm, setConfirm] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const expected = String(dry.totals.records);
  const batchOk = /^\d{1,6}$/.test(batchSize) && Number(batchSize) >= 1 && Number(batchSize) <= MAX_BATCH_SIZE;
  const pauseOk = /^\d{1,6}$/.test(pauseMs) && Number(pauseMs) <= 600_000;
  const valid = reason.trim().length >= 3 && batchOk && pauseOk && confirm.trim() === expected;

  async function submit(e: FormEvent) {
    e.preventDefault();
    if (!valid) return;
    const body = { reason: reason.trim(), confirm: confirm.trim(), asOf: dry.asOf, batchSize: Number(batchSize), pauseMs: Number(pauseMs) };
    setBusy(true);
    setError(null);
    try {
      const { run } = await apiFetch<{ run: RunJson }>("/api/v1/purges", { method: "POST", body, idempotencyKey: intent.keyFor(body) });
      intent.settle();
      await client.invalidateQueries({ queryKey: queryKeys.retention.runs });
      onStarted(run);
    } catch (err) {
      intent.settle(err);
      setError(err instanceof Error ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  }

  return (
    <form className="retention-form purge-start" onSubmit={submit} aria-label="Run the purge" data-testid="purge-form">
      <h3>Run purge</h3>
      <div className="retention-form-row">
        <label>
          Batch size <span className="subtle">(records per short transaction; events go ten times as many)</span>
          <input
            type="number"
            min={1}
            max={MAX_BATCH_SIZE}
            value={batchSize}
            onChange={(e) => {
              setBatchSize(e.target.value);
              touched.touch("batch");
            }}
            onBlur={touched.onBlur("batch")}
            aria-invalid={touched.invalid("batch", !batchOk)}
            data-testid="purge-batch-size"
          />
        </label>
        <label>
          Pause between batches (ms)
          <input
            type="number"
            min={0}
            max={600000}
            value={pauseMs}
            onChange={(e) => {
              setPauseMs(e.target.value);
              touched.touch("pause");
            }}
            onBlur={touched.onBlur("pause")}
            aria-invalid={touched.invalid("pause", !pauseOk)}
            data-testid="purge-pause-ms"
          />
        </label>
      </div>
      <label>
        Reason <span className="subtle">(kept in the audit log)</span>
        <input type="text" minLength={3} maxLength={2000} value={reason} onChange={(e) => setReason(e.target.value)} data-testid="purge-reason" />
      </label>
      <label>
        Type <strong>{expected}</strong> — the number of records this purge deletes — to confirm
        <input
          type="text"
          inputMode="numeric"
          autoComplete="off"
          value={confirm}
          onChange={(e) => setConfirm(e.target.value)}
          aria-invalid={confirm !== "" && confirm.trim() !== expected}
          data-testid="purge-confirm"
        />
      </label>
      {error ? (
        <p className="notice error" role="alert" data-testid="purge-error">
          {error}
        </p>
      ) : null}
      <div>
        <button type="submit" className="retention-danger" disabled={busy || !valid} data-testid="purge-start">
          {busy ? "Starting…" : `Delete ${fmt(dry.totals.records)} records and ${fmt(dry.totals.events)} events`}
        </button>
      </div>
    </form>
  );
}
