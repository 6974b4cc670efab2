import type { PrismaClient } from "../generated/prisma/client";

export const RECORD_STATUSES = ["processing", "pending", "completed", "failed"] as const;
export type RecordStatus = (typeof RECORD_STATUSES)[number];

export interface StatusCounts {
  byStatus: Record<RecordStatus, number>;
  total: number;
  openReconciliation: number;
  asOf: Date;
}

/** Live counts by status, straight from the shared tables. */
export async function statusCounts(prisma: PrismaClient): Promise<StatusCounts> {
  const [groups, openReconciliation] = await Promise.all([
    prisma.idempotencyRecord.groupBy({ by: ["status"], _count: { _all: true } }),
    prisma.reconciliationItem.count({ where: { state: { in: ["open", "checking", "needs_manual"] } } }),
  ]);
  const byStatus = Object.fromEntries(RECORD_STATUSES.map((s) => [s, 0])) as Record<RecordStatus, number>;
  for (const g of groups) byStatus[g.status as RecordStatus] = g._count._all;
  const total = Object.values(byStatus).reduce((a, b) => a + b, 0);
  return { byStatus, total, openReconciliation, asOf: new Date() };
}
