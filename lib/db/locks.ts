import { execute, type SqlExecutor } from "./sql";

/**
 * Every advisory lock the console takes, in one place: two concerns sharing an id would wait
 * for each other for no reason (a reconciler tick holding its lock through provider calls
 * would stall purge batches; role changes would queue behind rollup refreshes — both
 * happened, issue 13). test/locks.test.ts checks that they are distinct and that no other
 * file spells an id. PostgreSQL takes them by id; MySQL/MariaDB by name (ADR 0012, "Locks").
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

/** Prisma's migration lock on MySQL (prisma-engines, flavour/mysql.rs): GET_LOCK('prisma_migrate', 10), server-wide. */
export const MYSQL_MIGRATE_LOCK = "prisma_migrate";

/** The lock a registry id stands for (callers that hold ids, e.g. lib/db/periodic.ts). */
export function lockNameOf(id: number): LockName {
  const name = (Object.keys(LOCKS) as LockName[]).find((k) => LOCKS[k] === id);
  if (!name) throw new Error(`no lock with id ${id} in LOCKS (lib/db/locks.ts)`);
  return name;
}

/**
 * A lock's GET_LOCK name on MySQL, as an SQL expression and its parameters: `ic:<database>:<key>`
 * (GET_LOCK names are server-wide; the database keeps two consoles on one server apart; a
 * database name longer than 48 characters is hashed, so the name stays within 64).
 */
function mysqlLockName(name: LockName): { expr: string; params: unknown[] } {
  if (name === "migrate") return { expr: `'${MYSQL_MIGRATE_LOCK}'`, params: [] };
  return {
    expr: "IF(CHAR_LENGTH(DATABASE()) <= 48, CONCAT('ic:', DATABASE(), ':', ?), CONCAT('ic:', SHA1(DATABASE()), ':', ?))",
    params: [name, name],
  };
}

// MariaDB answers NULL to a negative timeout: "forever" is a year, asked again if it runs out.
const MYSQL_FOREVER_SECONDS = 31_536_000;

/**
 * Takes the session-level lock `name` if it is free: true if this session holds it now. `session`
 * must be one connection (db.withSession). Re-entrant within a session (each take needs an unlock).
 */
export async function trySessionLock(session: SqlExecutor, name: LockName): Promise<boolean> {
  if (session.dialect.name === "mysql") {
    const n = mysqlLockName(name);
    const [{ ok }] = await session.query<{ ok: number | null }>(`SELECT GET_LOCK(${n.expr}, 0) AS ok`, n.params);
    return Number(ok) === 1;
  }
  const [{ ok }] = await session.query<{ ok: boolean }>(`SELECT pg_try_advisory_lock($1) AS ok`, [LOCKS[name]]);
  return ok;
}

/** Waits for the session-level lock `name` and takes it. */
export async function sessionLock(session: SqlExecutor, name: LockName): Promise<void> {
  if (session.dialect.name === "mysql") {
    const n = mysqlLockName(name);
    for (;;) {
      const [{ ok }] = await session.query<{ ok: number | null }>(`SELECT GET_LOCK(${n.expr}, ${MYSQL_FOREVER_SECONDS}) AS ok`, n.params);
      if (Number(ok) === 1) return;
      if (ok === null) throw new Error(`GET_LOCK for ${name} failed (the wait was killed)`);
    }
  }
  await session.query(`SELECT pg_advisory_lock($1)`, [LOCKS[name]]);
}

/** Releases one take of the session-level lock `name`. */
export async function sessionUnlock(session: SqlExecutor, name: LockName): Promise<void> {
  if (session.dialect.name === "mysql") {
    const n = mysqlLockName(name);
    await session.query(`SELECT RELEASE_LOCK(${n.expr}) AS released`, n.params);
    return;
  }
  await session.query(`SELECT pg_advisory_unlock($1)`, [LOCKS[name]]);
}

/**
 * Runs `fn` only if this session gets the session-level lock `name` (one instance at a time
 * across processes; the others skip instead of queueing); null when it did not.
 */
export async function withTrySessionLock<T>(session: SqlExecutor, name: LockName, fn: () => Promise<T>): Promise<T | null> {
  if (!(await trySessionLock(session, name))) return null;
  try {
    return await fn();
  } finally {
    await sessionUnlock(session, name).catch(() => {});
  }
}

/**
 * Takes the lock `name` until the end of the current transaction: `exclusive` waits for every
 * other holder, `shared` only for an exclusive one. `tx` runs inside the transaction
 * (txExecutor(tx, db.dialect), or a session after BEGIN). PostgreSQL: pg_advisory_xact_lock(_shared);
 * MySQL: the lock's row of console_locks read FOR UPDATE / LOCK IN SHARE MODE — only inside a
 * transaction (in autocommit it ends with the statement); a wait gives up after
 * innodb_lock_wait_timeout (error 1205). On MySQL it does not exclude the session-level lock of
 * the same name (ADR 0012).
 */
export async function transactionLock(tx: SqlExecutor, name: LockName, mode: "exclusive" | "shared" = "exclusive"): Promise<void> {
  if (tx.dialect.name === "mysql") {
    const rows = await tx.query(`SELECT name FROM console_locks WHERE name = ? ${mode === "shared" ? "LOCK IN SHARE MODE" : "FOR UPDATE"}`, [name]);
    if (rows.length !== 1) throw new Error(`console_locks has no row for the lock ${name}: add it in a MySQL migration`);
    return;
  }
  await execute(tx, `SELECT ${mode === "shared" ? "pg_advisory_xact_lock_shared" : "pg_advisory_xact_lock"}($1::bigint)`, [LOCKS[name]]);
}
