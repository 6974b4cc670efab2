import type { Jsonified } from "@/lib/api/json";
import type { RecordDetail } from "@/lib/records/detail";
import type { RecordSummary } from "@/lib/records/row";

/** What the record page may offer the viewer (decided on the server with can()). */
export interface RecordActionAccess {
  resolve: boolean;
  reconcile: boolean;
  requestCompensation: boolean;
  approveCompensation: boolean;
  legalHold: boolean;
}

/** What can work on the record right now (from the record API, GET /api/v1/records/{id}), and why not. */
export interface RecordActionAvailability {
  check: Jsonified<RecordDetail["checkWithProvider"]>;
  compensation: Jsonified<RecordDetail["compensation"]>;
}

export interface RecordActionProps {
  record: Jsonified<RecordSummary>;
  access: RecordActionAccess;
  availability: RecordActionAvailability;
  /** Refetches the record page after a change. */
  onChanged: () => void;
}
