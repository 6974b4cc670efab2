import type { Database } from "../db/client";

/** Purge-run worker: resumes runs left by a crashed process (stub until the retention work lands). */
export function startPurgeWorker(_getDb: () => Promise<Database>): { stop(): Promise<void> } | null {
  return null;
}
