"use client";

import { useQueryClient } from "@tanstack/react-query";
import { useEffect, useState, type FormEvent } from "react";
import { apiFetch } from "@/components/client/api";
import { When } from "@/components/time/When";
import { queryKeys } from "@/components/client/query-keys";
import { ActionNotice, useAction } from "@/components/client/use-action";
import { useIntentKey } from "@/components/client/intent-key";
import { EmptyState, ErrorState, SkeletonRows } from "@/components/queue/read-ui";
import { fmt, ProgressBar, RunStateBadge, useRuns, type RunJson } from "./shared";
import { ScrollBox } from "@/components/ScrollBox";

/** The run in progress, live (polled every second): batches, deleted vs estimated, cancel. Then how the last one watched here ended. */
export function ActiveRun({ canRun }: { canRun: boolean }) {
  const runs = useRuns();
  const active = runs.data?.active ?? null;
  const [watched, setWatched] = useState<string | null>(null);
  useEffect(() => {
    if (active) setWatched(active.id);
  }, [active]);
  const ended = !active && watched ? (runs.data?.items.find((r) => r.id === watched) ?? null) : null;
  if (runs.isError && !runs.data) return <ErrorState error={runs.error} onRetry={() => void runs.refetch()} />;
  if (active) return <RunProgress run={active} canRun={canRun} />;
  if (ended) {
    return (
      <section className="panel purge-active" aria-label={`Purge run ${ended.id}`} data-testid="active-run" data-id={ended.id} data-state={ended.state}>
        <h2>
          Purge run #{ended.id} <RunStateBadge state={ended.state} />
        </h2>
        <p data-testid="run-summary">
          {fmt(ended.recordsDeleted)} records and {fmt(ended.eventsDeleted)} events deleted in {fmt(ended.batches)} batches
          {ended.finishedAt ? (
            <>
              , finished <When iso={ended.finishedAt} />
            </>
          ) : (
            ""
          )}
          .{ended.lastError ? ` Last error: ${ended.lastError}` : ""}
        </p>
      </section>
    );
  }
  return null;
}

function RunProgress({ run, canRun }: { run: RunJson; canRun: boolean }) {
  const estRecords = Number(run.estimatedRecords ?? 0);
  const estEvents = Number(run.estimatedEvents ?? 0);
  const stale = run.leaseUntil !== null && Date.parse(run.leaseUntil) < Date.now();
  return (
    <section className="panel purge-active" aria-label={`Purge run ${run.id} in progress`} data-testid="active-run" data-id={run.id} data-state={run.state}>
      <div className="toolbar">
        <h2>
          Purge run #{run.id} <RunStateBadge state={run.state} />
        </h2>
        <span className="subtle">
          started <When iso={run.startedAt ?? run.createdAt} /> by {run.startedByLabel} · as of <When iso={run.asOf} />
        </span>
      </div>
      <ProgressBar value={run.progress} label={`Purge run ${run.id} progress`} />
      <dl className="purge-figures">
        <div>
          <dt>Phase</dt>
          <dd data-testid="run-phase">{run.phase}</dd>
        </div>
        <div>
          <dt>Records deleted</dt>
          <dd data-testid="run-records">
            {fmt(run.recordsDeleted)} / {fmt(estRecords)}
          </dd>
        </div>
        <div>
          <dt>Events deleted</dt>
          <dd data-testid="run-events">
            {fmt(run.eventsDeleted)} / {fmt(estEvents)}
          </dd>
        </div>
        <div>
          <dt>Batches</dt>
          <dd data-testid="run-batches">{fmt(run.batches)}</dd>
        </div>
        <div>
          <dt>Batch size · pause</dt>
          <dd>
            {fmt(run.batchSize)} records ({fmt(run.eventBatchSize)} events) · {fmt(run.pauseMs)} ms
          </dd>
        </div>
        <div>
          <dt>Worker</dt>
          <dd className="subtle">
            {run.worker ?? "—"}{" "}
            {run.heartbeatAt ? (
              <>
                · heartbeat <When iso={run.heartbeatAt} />
              </>
            ) : (
              ""
            )}
          </dd>
        </div>
      </dl>
      <p className="subtle">Reason: {run.reason}</p>
      {stale ? (
        <p className="notice error" role="status">
          Its worker has not renewed its lease since <When iso={run.leaseUntil} />: another server (or <code>npm run purge -- --resume</code>) takes it over.
        </p>
      ) : null}
      {run.lastError ? <p className="notice error">Last batch error (retrying): {run.lastError}</p> : null}
      {run.state === "cancelling" ? (
        <p className="subtle">Cancelling: it stops after the batch in flight (requested by {run.cancelRequestedByLabel}).</p>
      ) : null}
      {canRun && run.state !== "cancelling" ? <CancelForm run={run} /> : null}
    </section>
  );
}

function CancelForm({ run }: { run: RunJson }) {
  const client = useQueryClient();
  const intent = useIntentKey();
  const [reason, setReason] = useState("");
  const { message, busy, run: act } = useAction(() => client.invalidateQueries({ queryKey: queryKeys.retention.runs }));
  async function submit(e: FormEvent) {
    e.preventDefault();
    const body = { reason: reason.trim() };
    await act(async () => {
      try {
        const r = await apiFetch<{ run: RunJson; noop: boolean }>(`/api/v1/purges/${run.id}/cancel`, {
          method: "POST",
          body,
          idempotencyKey: intent.keyFor(body),
        });
        intent.settle();
        return r.run.state === "cancelled" ? `Run #${run.id} cancelled.` : `Run #${run.id} stops after the batch in flight.`;
      } catch (err) {
        intent.settle(err);
        throw err;
      }
    });
  }
  return (
    <form className="retention-inline" onSubmit={submit} aria-label={`Cancel purge run ${run.id}`}>
      <input
        type="text"
        placeholder="Reason to cancel"
        minLength={3}
        maxLength={2000}
        value={reason}
        onChange={(e) => setReason(e.target.value)}
        data-testid="cancel-reason"
      />
      <button type="submit" disabled={busy || reason.trim().length < 3} data-testid="cancel-run">
        Cancel run
      </button>
      <ActionNotice message={message} testId="cancel-message" />
    </form>
  );
}

/** Every run, newest first. */
export function RunHistory() {
  const runs = useRuns();
  const items = runs.data?.items ?? [];
  return (
    <section aria-labelledby="runs-h" data-testid="run-history">
      <h2 id="runs-h" className="section-title">
        Purge runs
      </h2>
      {runs.isError && !runs.data ? (
        <ErrorState error={runs.error} onRetry={() => void runs.refetch()} />
      ) : !runs.data ? (
        <SkeletonRows cols={8} rows={3} label="Loading purge runs" />
      ) : items.length === 0 ? (
        <EmptyState title="No purge has run yet." testId="runs-empty" />
      ) : (
        <ScrollBox label="Purge runs" className="rs-table-wrap">
          <table className="rs-table" data-testid="runs-table">
            <thead>
              <tr>
                <th>Run</th>
                <th>State</th>
                <th>Started</th>
                <th>By · reason</th>
                <th className="num">Records deleted / estimated</th>
                <th className="num">Events deleted / estimated</th>
                <th className="num">Batches</th>
                <th>Finished</th>
              </tr>
            </thead>
            <tbody>
              {items.map((r) => (
                <tr key={r.id} data-testid="run-row" data-id={r.id} data-state={r.state}>
                  <td>#{r.id}</td>
                  <td>
                    <RunStateBadge state={r.state} />
                  </td>
                  <td className="nowrap">
                    <When iso={r.startedAt ?? r.createdAt} />
                  </td>
                  <td>
                    {r.startedByLabel}
                    <div className="subtle">{r.reason}</div>
                    {r.cancelRequestedByLabel ? <div className="subtle">cancelled by {r.cancelRequestedByLabel}</div> : null}
                    {r.lastError ? <div className="subtle">last error: {r.lastError}</div> : null}
                  </td>
                  <td className="num" data-testid="run-row-records">
                    {fmt(r.recordsDeleted)} / {fmt(r.estimatedRecords)}
                  </td>
                  <td className="num" data-testid="run-row-events">
                    {fmt(r.eventsDeleted)} / {fmt(r.estimatedEvents)}
                  </td>
                  <td className="num">{fmt(r.batches)}</td>
                  <td className="nowrap">
                    <When iso={r.finishedAt} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </ScrollBox>
      )}
    </section>
  );
}
