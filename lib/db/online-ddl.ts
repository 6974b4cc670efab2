import type { SqlExecutor } from "./sql";

/**
 * Migrations on the services' live tables without stalling their writers (issue 10):
 * - The services' tables (SHARED_TABLES) are theirs, written all day. A plain CREATE INDEX
 *   blocks their writes while it builds; inside a migration's transaction it cannot be
 *   CONCURRENTLY. So before a migration's transaction, the runner builds the indexes it
 *   declares on a shared table that already exists with CREATE INDEX CONCURRENTLY (a
 *   replacement — DROP INDEX x then CREATE INDEX x in the same migration — is built under a
 *   temporary name and swapped in with a rename), and takes those statements out of the
 *   transaction. Every step is idempotent: a runner killed half-way builds again.
 * - Every lock a migration waits for is bounded (lock_timeout): a migration queued behind a
 *   writer's long transaction would otherwise block every writer behind itself. On a lock
 *   timeout the migration rolls back and is retried after a pause.
 * This file holds the statement-level work; lib/db/migrate.ts decides when it applies.
 */

export const SHARED_TABLES = ["idempotency_records", "idempotency_events", "reconciliation_items", "outbox_messages"] as const;

/** Splits an SQL script into statements (quotes, identifiers, comments and $tag$ bodies respected). */
export function splitStatements(script: string): string[] {
  const out: string[] = [];
  let cur = "";
  let i = 0;
  while (i < script.length) {
    const c = script[i];
    const rest = script.slice(i);
    if (c === "-" && script[i + 1] === "-") {
      const end = script.indexOf("\n", i);
      const stop = end < 0 ? script.length : end + 1;
      cur += script.slice(i, stop);
      i = stop;
    } else if (c === "/" && script[i + 1] === "*") {
      const end = script.indexOf("*/", i + 2);
      const stop = end < 0 ? script.length : end + 2;
      cur += script.slice(i, stop);
      i = stop;
    } else if (c === "'" || c === '"') {
      let j = i + 1;
      while (j < script.length) {
        if (script[j] === c && script[j + 1] === c) j += 2;
        else if (script[j] === c) break;
        else j++;
      }
      cur += script.slice(i, j + 1);
      i = j + 1;
    } else if (c === "$" && /^\$[A-Za-z_]*\$/.test(rest)) {
      const tag = /^\$[A-Za-z_]*\$/.exec(rest)![0];
      const end = script.indexOf(tag, i + tag.length);
      const stop = end < 0 ? script.length : end + tag.length;
      cur += script.slice(i, stop);
      i = stop;
    } else if (c === ";") {
      if (cur.trim()) out.push(cur.trim());
      cur = "";
      i++;
    } else {
      cur += c;
      i++;
    }
  }
  if (cur.trim()) out.push(cur.trim());
  return out;
}

/** The statement without its leading comments and whitespace. */
const code = (statement: string) => statement.replace(/^(\s|--[^\n]*\n?|\/\*[\s\S]*?\*\/)+/, "");

export interface IndexStatement {
  kind: "create" | "drop";
  name: string;
  /** create: the table and everything after ON "table" (columns, USING, WHERE). */
  table?: string;
  unique?: boolean;
  definition?: string;
}

export function parseIndexStatement(statement: string): IndexStatement | null {
  const s = code(statement);
  const create = /^CREATE\s+(UNIQUE\s+)?INDEX\s+(?:IF\s+NOT\s+EXISTS\s+)?"?([A-Za-z_][\w]*)"?\s+ON\s+"?([A-Za-z_][\w]*)"?\s*([\s\S]*)$/i.exec(s);
  if (create) return { kind: "create", unique: Boolean(create[1]), name: create[2], table: create[3], definition: create[4].trim() };
  const drop = /^DROP\s+INDEX\s+(?:IF\s+EXISTS\s+)?"?([A-Za-z_][\w]*)"?\s*$/i.exec(s);
  if (drop) return { kind: "drop", name: drop[1] };
  return null;
}

export interface OnlinePlan {
  /** Indexes to build concurrently before the transaction. */
  builds: { name: string; table: string; unique: boolean; definition: string; replace: boolean }[];
  /** The migration's SQL without the statements those builds take over. */
  transactional: string;
}

/**
 * Which of a migration's index statements move out of its transaction: CREATE INDEX on a
 * shared table that exists now (and the DROP INDEX of the same name before it).
 */
export function planOnline(script: string, existingTables: ReadonlySet<string>): OnlinePlan {
  const statements = splitStatements(script);
  const parsed = statements.map(parseIndexStatement);
  const builds: OnlinePlan["builds"] = [];
  const taken = new Set<number>();
  parsed.forEach((p, i) => {
    if (p?.kind !== "create" || !(SHARED_TABLES as readonly string[]).includes(p.table!) || !existingTables.has(p.table!)) return;
    const dropAt = parsed.findIndex((d, j) => j < i && d?.kind === "drop" && d.name === p.name);
    if (dropAt >= 0) taken.add(dropAt);
    taken.add(i);
    builds.push({ name: p.name, table: p.table!, unique: Boolean(p.unique), definition: p.definition!, replace: dropAt >= 0 });
  });
  return { builds, transactional: statements.filter((_, i) => !taken.has(i)).join(";\n") };
}

export interface LockRetry {
  /** lock_timeout of every statement that takes a lock on a shared table (ms). */
  lockTimeoutMs: number;
  /** How often a step that hit the lock timeout is tried again (with a growing pause). */
  retries: number;
  log: (line: string) => void;
}

/**
 * A lock wait that gave up: lock_timeout (55P03), or PostgreSQL breaking a deadlock (40P01, e.g. a
 * prisma migrate deploy waiting for the migration lock while an index builds concurrently); on
 * MySQL/MariaDB lock_wait_timeout / innodb_lock_wait_timeout (1205) or a broken deadlock (1213).
 */
export const isLockTimeout = (err: unknown) => ["55P03", "40P01", "ER_LOCK_WAIT_TIMEOUT", "ER_LOCK_DEADLOCK"].includes((err as { code?: string })?.code ?? "");

/** Runs `step` again after a lock timeout, up to `retries` times, pausing 0.5 s, 1 s, 2 s … (at most 10 s). */
export async function withLockRetries<T>(what: string, opts: LockRetry, step: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await step();
    } catch (err) {
      if (!isLockTimeout(err) || attempt >= opts.retries) throw err;
      const pause = Math.min(10_000, 500 * 2 ** attempt);
      opts.log(`${what}: waited ${opts.lockTimeoutMs} ms for a lock (a writer's transaction holds it); trying again in ${pause} ms`);
      await new Promise((r) => setTimeout(r, pause));
    }
  }
}

async function indexState(sql: SqlExecutor, name: string): Promise<"absent" | "valid" | "invalid"> {
  const [row] = await sql.query<{ valid: boolean }>(
    `SELECT i.indisvalid AS valid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid WHERE c.relname = $1 AND c.relnamespace = current_schema()::regnamespace`,
    [name],
  );
  return row ? (row.valid ? "valid" : "invalid") : "absent";
}

/** A unique index (or constraint) on exactly these columns, whatever its name (an adopted table's own key). */
export async function hasUniqueOn(sql: SqlExecutor, table: string, columns: readonly string[]): Promise<boolean> {
  const rows = await sql.query<{ cols: string[] }>(
    `SELECT array_agg(a.attname::text ORDER BY k.ord) AS cols
       FROM pg_index i
       JOIN pg_class t ON t.oid = i.indrelid AND t.relname = $1 AND t.relnamespace = current_schema()::regnamespace
       CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY k(attnum, ord)
       JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
      WHERE i.indisunique AND i.indisvalid AND i.indpred IS NULL
      GROUP BY i.indexrelid`,
    [table],
  );
  return rows.some((r) => r.cols.length === columns.length && r.cols.every((c, k) => c === columns[k]));
}

/**
 * Builds one index of a plan with CREATE INDEX CONCURRENTLY (writers go on meanwhile):
 * absent → built; left invalid by an interrupted build → dropped and built again; a
 * replacement → built as <name>_icnew, then swapped in by a rename in a short transaction.
 * Idempotent. `sql` must be a session in autocommit.
 */
export async function buildConcurrently(sql: SqlExecutor, b: OnlinePlan["builds"][number], opts: LockRetry): Promise<"built" | "kept" | "replaced"> {
  const unique = b.unique ? "UNIQUE " : "";
  const create = (name: string) => `CREATE ${unique}INDEX CONCURRENTLY "${name}" ON "${b.table}" ${b.definition}`;
  const state = await indexState(sql, b.name);
  if (!b.replace && state === "valid") return "kept";
  if (state === "invalid") await withLockRetries(`drop invalid index ${b.name}`, opts, () => sql.exec(`DROP INDEX CONCURRENTLY IF EXISTS "${b.name}"`));
  if (!b.replace || state !== "valid") {
    await withLockRetries(`index ${b.name}`, opts, () => sql.exec(create(b.name)));
    return "built";
  }
  const temp = `${b.name.slice(0, 50)}_icnew`;
  await sql.exec(`DROP INDEX CONCURRENTLY IF EXISTS "${temp}"`);
  await withLockRetries(`index ${temp}`, opts, () => sql.exec(create(temp)));
  await withLockRetries(`swap in index ${b.name}`, opts, () =>
    sql
      .exec(`BEGIN; SET LOCAL lock_timeout = '${opts.lockTimeoutMs}ms'; DROP INDEX "${b.name}"; ALTER INDEX "${temp}" RENAME TO "${b.name}"; COMMIT;`)
      .catch(async (err) => {
        await sql.exec("ROLLBACK").catch(() => {});
        throw err;
      }),
  );
  return "replaced";
}
