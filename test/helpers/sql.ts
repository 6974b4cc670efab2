import { byDialect, type Dialect } from "@/lib/db/dialect";
import { paramList } from "@/lib/db/params";
import { execute, type SqlExecutor } from "@/lib/db/sql";

/**
 * Test SQL that differs by dialect in more than its placeholders (ADR 0012): an INSERT's new
 * id (PostgreSQL RETURNING, MySQL's insert id), and audit_log's append-only triggers out of
 * the way, as a database superuser could have them.
 */

/**
 * A test's statement written with PostgreSQL's placeholders (`$1`, `$2`…, possibly repeated or out
 * of order) in `dialect`'s: on MySQL each `$n` becomes `?` with its value, in order (lib/db/params).
 * For the tests' own SQL only; `$` must not appear in its string literals.
 */
export function bound(dialect: Dialect, text: string, values: unknown[] = []): [string, unknown[]] {
  if (dialect.name === "postgres") return [text, values];
  const p = paramList(dialect);
  return [text.replace(/\$(\d+)/g, (_m, n: string) => p.add(values[Number(n) - 1])), p.values];
}

/** `ex.query` of a statement written with `$n` placeholders (see bound). */
export const queryBound = <T = Record<string, unknown>>(ex: SqlExecutor, text: string, values: unknown[] = []) =>
  ex.query<T>(...bound(ex.dialect, text, values));

/** Runs an INSERT (no RETURNING clause) and answers the id it took. */
export async function insertReturningId(ex: SqlExecutor, text: string, values: unknown[] = []): Promise<bigint> {
  return byDialect(ex, {
    postgres: async () => (await ex.query<{ id: bigint }>(`${text} RETURNING id`, values))[0].id,
    mysql: async () => (await execute(ex, text, values)).insertId!,
  })();
}

/**
 * Runs `fn` on `session` in one transaction with audit_log's append-only triggers bypassed.
 * PostgreSQL: `session_replication_role = replica` for the transaction, or `disable`: ALTER TABLE
 * … DISABLE TRIGGER and ENABLE again. MySQL has no way to disable a trigger: they are dropped and
 * created again from their own definitions (each DDL statement commits, so another session could
 * write meanwhile — the tests run one file per database).
 */
export async function withoutAuditTriggers(session: SqlExecutor, fn: () => Promise<void>, how: "replica" | "disable" = "replica"): Promise<void> {
  if (session.dialect.name === "mysql") {
    const triggers = await session.query<{ name: string }>(
      `SELECT TRIGGER_NAME AS name FROM information_schema.TRIGGERS WHERE EVENT_OBJECT_SCHEMA = DATABASE() AND EVENT_OBJECT_TABLE = 'audit_log' ORDER BY 1`,
    );
    const definitions: string[] = [];
    for (const { name } of triggers) {
      const [row] = await session.query<Record<string, string>>(`SHOW CREATE TRIGGER \`${name}\``);
      definitions.push(row["SQL Original Statement"]);
    }
    for (const { name } of triggers) await session.exec(`DROP TRIGGER \`${name}\``);
    try {
      await session.exec("START TRANSACTION");
      try {
        await fn();
        await session.exec("COMMIT");
      } catch (err) {
        await session.exec("ROLLBACK");
        throw err;
      }
    } finally {
      for (const definition of definitions) await session.exec(definition);
    }
    return;
  }
  await session.query("BEGIN");
  try {
    if (how === "replica") await session.query("SET LOCAL session_replication_role = replica");
    else await session.query(`ALTER TABLE audit_log DISABLE TRIGGER audit_log_no_update_delete`);
    await fn();
    if (how === "disable") await session.query(`ALTER TABLE audit_log ENABLE TRIGGER audit_log_no_update_delete`);
    await session.query("COMMIT");
  } catch (err) {
    await session.query("ROLLBACK");
    throw err;
  }
}
