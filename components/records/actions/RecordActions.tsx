"use client";

import { CompensationPanel } from "./CompensationPanel";
import { LegalHoldPanel } from "./LegalHoldPanel";
import { ResolvePanel } from "./ResolvePanel";
import type { RecordActionProps } from "./types";

/**
 * The operator actions on one record, each in its own panel: resolve by hand and
 * reconcile with the provider, compensation, legal hold. Each panel renders
 * nothing when the viewer may not use it or the record's state does not allow it.
 */
export function RecordActions(props: RecordActionProps) {
  return (
    <div className="record-actions" data-testid="record-actions">
      <ResolvePanel {...props} />
      <CompensationPanel {...props} />
      <LegalHoldPanel {...props} />
    </div>
  );
}
