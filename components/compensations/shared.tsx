"use client";

import type { Jsonified } from "@/lib/api/json";
import type { listCompensationViews } from "@/lib/compensations/actions";
import type { CompensationView } from "@/lib/compensations/model";

/** A compensation as the API returns it (bigints and dates as strings), with what the viewer may do. */
export type CompensationJson = Jsonified<CompensationView>;

/** GET /api/v1/compensations as the browser receives it (the server's type): a page, and the count per state for the tabs. */
export type CompensationPage = Jsonified<Awaited<ReturnType<typeof listCompensationViews>>>;

export const STATE_LABEL: Record<CompensationJson["state"], string> = {
  requested: "waiting for approval",
  approved: "approved",
  rejected: "rejected",
  executing: "executing",
  executed: "executed",
  failed: "failed",
};

export function StateBadge({ state, stale }: { state: CompensationJson["state"]; stale?: boolean }) {
  return (
    <span className={`comp-state comp-state-${state}`} data-testid="compensation-state" data-state={state}>
      {STATE_LABEL[state]}
      {stale ? " (stalled)" : null}
    </span>
  );
}

/**
 * What is left to compensate of a record's charge: its amount minus what its
 * compensations claim (everything but rejected ones and failed ones the provider
 * refused — the server says which, per row). null when the record has no amount.
 */
export function remainingMinor(amountMinor: string | null, compensations: Pick<CompensationJson, "amountMinor" | "claimsAmount">[]): bigint | null {
  if (amountMinor === null) return null;
  const claimed = compensations.filter((c) => c.claimsAmount).reduce((sum, c) => sum + BigInt(c.amountMinor), 0n);
  const left = BigInt(amountMinor) - claimed;
  return left > 0n ? left : 0n;
}
