"use client";

import { useQuery } from "@tanstack/react-query";
import type { Jsonified } from "@/lib/api/json";
import type { DryRun } from "@/lib/retention/dry-run";
import type { ScopeHoldView } from "@/lib/retention/legal-holds";
import type { PolicyView } from "@/lib/retention/policies";
import type { listRuns, PurgeRunView } from "@/lib/retention/runs";
import { apiFetch } from "@/components/client/api";
import { queryKeys } from "@/components/client/query-keys";

/** The retention API's JSON (bigints and dates as strings). */
export type PolicyJson = Jsonified<PolicyView>;
export type DryRunJson = Jsonified<DryRun>;
export type RunJson = Jsonified<PurgeRunView>;
export type HoldJson = Jsonified<ScopeHoldView>;
/** GET /api/v1/purges (the server's type). */
export type RunsPage = Jsonified<Awaited<ReturnType<typeof listRuns>>>;

export const fmt = (n: number | string | null | undefined) => (n === null || n === undefined ? "—" : Number(n).toLocaleString("en-US"));

export const policyName = (operation: string | null) => (operation === null ? "default (every other operation)" : operation);

/** Purge runs, newest first, and the active one: polled every second while one is active. */
export function useRuns() {
  return useQuery({
    queryKey: queryKeys.retention.runs,
    queryFn: () => apiFetch<RunsPage>("/api/v1/purges?limit=20"),
    refetchInterval: (q) => (q.state.data?.active ? 1000 : 15_000),
  });
}

export function RunStateBadge({ state }: { state: RunJson["state"] }) {
  return (
    <span className={`purge-state purge-state-${state}`} data-testid="run-state" data-state={state}>
      {state}
    </span>
  );
}

export function ProgressBar({ value, label }: { value: number; label: string }) {
  const pct = Math.round(Math.max(0, Math.min(1, value)) * 1000) / 10;
  return (
    <div className="purge-bar" role="progressbar" aria-label={label} aria-valuemin={0} aria-valuemax={100} aria-valuenow={pct} data-testid="run-progress">
      <div className="purge-bar-fill" style={{ width: `${pct}%` }} />
      <span className="purge-bar-text">{pct}%</span>
    </div>
  );
}
