"use client";

import { DryRunPanel } from "./DryRunPanel";
import { PoliciesPanel } from "./PoliciesPanel";
import { ActiveRun, RunHistory } from "./PurgeRuns";
import { ScopeHoldsPanel } from "./ScopeHoldsPanel";

/**
 * Retention: the run in progress (live), policies, dry run and "Run purge", run
 * history, scope legal holds. What each viewer may do is decided on the server
 * (can()); the API checks again.
 */
export function RetentionScreen({
  canManagePolicies,
  canRunPurges,
  canManageHolds,
}: {
  canManagePolicies: boolean;
  canRunPurges: boolean;
  canManageHolds: boolean;
}) {
  return (
    <div className="retention-screen" data-testid="retention-screen">
      <ActiveRun canRun={canRunPurges} />
      <PoliciesPanel canManage={canManagePolicies} />
      {canRunPurges ? (
        <DryRunPanel disabledReason={null} />
      ) : (
        <p className="notice-muted" data-testid="purges-not-permitted">
          Dry runs and purges need the permission <code>purges.run</code> (operators).
        </p>
      )}
      <RunHistory />
      <ScopeHoldsPanel canManage={canManageHolds} />
    </div>
  );
}
