/**
 * Every advisory lock the console takes, in one place: two concerns sharing an id would wait
 * for each other for no reason (a reconciler tick holding its lock through provider calls
 * would stall purge batches; role changes would queue behind rollup refreshes — both
 * happened, issue 13). test/locks.test.ts checks that they are distinct and that no other
 * file spells an id.
 */
export const LOCKS = {
  /** Prisma's own migration lock (prisma migrate deploy uses the same key): our runner and Prisma exclude each other. */
  migrate: 72707369,
  /** Appending to the audit chain (lib/audit): one writer at a time keeps it one line. */
  auditChain: 72707370,
  /** Writing the rollups and the record census (refresh, rebuild, repair; the purge's census step). Also in migrations' SQL. */
  rollups: 72707371,
  /** One background refresher across servers (session-level try-lock; lib/stats/refresher.ts). */
  refresher: 72707380,
  /** One background reconciler across servers (lib/reconcile/worker.ts), held through a tick. */
  reconciler: 72707390,
  /** Legal holds vs purge batches: a hold takes it exclusively, each purge batch shared (lib/retention). */
  legalHolds: 72707391,
  /** Changes to users and roles that must not leave the console without an admin (lib/auth/users.ts). */
  userAdmin: 72707392,
} as const;

export type LockName = keyof typeof LOCKS;
