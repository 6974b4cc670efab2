import type { Jsonified } from "@/lib/api/json";
import type { RecordSummary } from "@/lib/records/row";

/** What the record page may offer the viewer (decided on the server with can()). */
export interface RecordActionAccess {
  resolve: boolean;
  reconcile: boolean;
  requestCompensation: boolean;
  approveCompensation: boolean;
  legalHold: boolean;
}

export interface RecordActionProps {
  record: Jsonified<RecordSummary>;
  access: RecordActionAccess;
  /** Refetches the record page after a change. */
  onChanged: () => void;
}
