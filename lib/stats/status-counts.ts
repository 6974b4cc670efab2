export const RECORD_STATUSES = ["processing", "pending", "completed", "failed"] as const;
export type RecordStatus = (typeof RECORD_STATUSES)[number];
