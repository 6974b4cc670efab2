/**
 * The one test for "the unique key said no", whichever way the error arrives: Prisma's model API
 * (P2002), a raw statement through Prisma's driver adapters (the adapter's UniqueConstraintViolation,
 * with the server's own code), or a driver directly — PostgreSQL's SQLSTATE 23505, MySQL's
 * ER_DUP_ENTRY (1062).
 */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as {
    errno?: number;
    code?: unknown;
    meta?: { driverAdapterError?: { cause?: { kind?: string; originalCode?: string; code?: string } } };
  } | null;
  const cause = e?.meta?.driverAdapterError?.cause;
  return (
    e?.code === "P2002" ||
    e?.code === "23505" ||
    e?.code === "ER_DUP_ENTRY" ||
    e?.errno === 1062 ||
    cause?.kind === "UniqueConstraintViolation" ||
    cause?.originalCode === "1062" ||
    cause?.originalCode === "23505"
  );
}

/**
 * The server chose this transaction as a deadlock's victim (or, on PostgreSQL, a serialization
 * failure): it was rolled back whole, so running it again is safe. InnoDB picks victims among
 * ordinary writers too (an INSERT of a key a purge batch is deleting), so a writer retries.
 */
export function isDeadlock(err: unknown): boolean {
  const e = err as {
    errno?: number;
    code?: unknown;
    meta?: { driverAdapterError?: { cause?: { kind?: string; originalCode?: string } } };
  } | null;
  const cause = e?.meta?.driverAdapterError?.cause;
  return (
    e?.code === "P2034" ||
    e?.code === "40P01" ||
    e?.code === "40001" ||
    e?.code === "ER_LOCK_DEADLOCK" ||
    (e?.meta as { code?: string } | undefined)?.code === "1213" ||
    e?.errno === 1213 ||
    cause?.kind === "TransactionWriteConflict" ||
    cause?.originalCode === "1213" ||
    cause?.originalCode === "40P01"
  );
}

/**
 * Runs `attempt` again while it ends as a deadlock's victim: up to `times` more, pausing 10 ms,
 * 20 ms, 40 ms … (at most 500 ms, jittered) so that the transaction it collided with can finish.
 */
export async function retryDeadlocks<T>(attempt: () => Promise<T>, times = 10): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await attempt();
    } catch (err) {
      if (!isDeadlock(err) || i >= times) throw err;
      const pause = Math.min(500, 10 * 2 ** i);
      await new Promise((r) => setTimeout(r, pause / 2 + Math.random() * pause));
    }
  }
}
