import { MYSQL } from "../db/dialect";
import { paramList } from "../db/params";
import { execute, type SqlExecutor } from "../db/sql";
import { isUniqueViolation } from "../db/errors";
import type { ConsoleRequestKey, ConsoleRequestRow, ConsoleRequestStore } from "./store";

const ROW_COLUMNS = `id, payload_hash AS "payloadHash", status, response_code AS "responseCode", response_headers AS "responseHeaders",
  response_body AS "responseBody"`;

/**
 * console_requests on MySQL/MariaDB: no RETURNING and no conditional ON CONFLICT, so the
 * reservation is a plain INSERT the unique key arbitrates (ER_DUP_ENTRY: the key existed, after
 * waiting for an uncommitted first request as ON CONFLICT does), then a takeover UPDATE whose
 * condition is re-checked on the latest row version (two takeovers cannot both match), then a
 * read of the row. Each statement commits on its own; a takeover keeps the row's id.
 */
export function mysqlConsoleRequestStore(ex: SqlExecutor): ConsoleRequestStore {
  const read = async (k: ConsoleRequestKey, owner: boolean): Promise<ConsoleRequestRow | null> => {
    const p = paramList(MYSQL);
    const rows = await ex.query<ConsoleRequestRow>(
      `SELECT ${ROW_COLUMNS} FROM console_requests WHERE user_id = ${p.add(k.userId)} AND action = ${p.add(k.action)} AND idempotency_key = ${p.add(k.key)}`,
      p.values,
    );
    return rows[0] ? { ...rows[0], owner } : null;
  };

  return {
    async reserve(k, hash, ttlSeconds, leaseSeconds) {
      try {
        const p = paramList(MYSQL);
        await ex.query(
          `INSERT INTO console_requests (user_id, action, idempotency_key, payload_hash, status, expires_at)
           VALUES (${p.add(k.userId)}, ${p.add(k.action)}, ${p.add(k.key)}, ${p.add(hash)}, 'processing', UTC_TIMESTAMP(6) + INTERVAL ${p.add(ttlSeconds)} SECOND)`,
          p.values,
        );
        return read(k, true);
      } catch (err) {
        if (!isUniqueViolation(err)) throw err;
      }
      const p = paramList(MYSQL);
      const { affectedRows } = await execute(
        ex,
        `UPDATE console_requests
            SET payload_hash = ${p.add(hash)}, status = 'processing', response_code = NULL, response_headers = NULL, response_body = NULL,
                created_at = UTC_TIMESTAMP(6), updated_at = UTC_TIMESTAMP(6), expires_at = UTC_TIMESTAMP(6) + INTERVAL ${p.add(ttlSeconds)} SECOND
          WHERE user_id = ${p.add(k.userId)} AND action = ${p.add(k.action)} AND idempotency_key = ${p.add(k.key)}
            AND (expires_at <= UTC_TIMESTAMP(6)
                 OR (status = 'processing' AND payload_hash = ${p.add(hash)} AND updated_at < UTC_TIMESTAMP(6) - INTERVAL ${p.add(leaseSeconds)} SECOND))`,
        p.values,
      );
      return read(k, affectedRows > 0);
    },

    find: (k) => read(k, false),

    async finish(id, answer) {
      const p = paramList(MYSQL);
      await ex.query(
        `UPDATE console_requests SET status = ${p.add(answer.status)}, response_code = ${p.add(answer.code)},
           response_headers = ${p.add(JSON.stringify(answer.headers))}, response_body = ${p.add(answer.body)}, updated_at = UTC_TIMESTAMP(6)
         WHERE id = ${p.add(id)}`,
        p.values,
      );
    },
  };
}
