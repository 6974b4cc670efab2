import { paramList } from "../db/params";
import type { SqlExecutor } from "../db/sql";
import type { ConsoleRequestRow, ConsoleRequestStore } from "./store";

export function postgresConsoleRequestStore(ex: SqlExecutor): ConsoleRequestStore {
  return {
    async reserve(k, hash, ttlSeconds, leaseSeconds) {
      const p = paramList();
      const rows = await ex.query<ConsoleRequestRow>(
        `WITH ins AS (
      INSERT INTO console_requests (user_id, action, idempotency_key, payload_hash, status, expires_at)
      VALUES (${p.add(k.userId)}, ${p.add(k.action)}, ${p.add(k.key)}, ${p.add(hash)}, 'processing', now() + make_interval(secs => ${p.add(ttlSeconds)}))
      ON CONFLICT (user_id, action, idempotency_key) DO UPDATE
        SET payload_hash = EXCLUDED.payload_hash, status = 'processing', response_code = NULL, response_headers = NULL,
            response_body = NULL, created_at = now(), updated_at = now(), expires_at = EXCLUDED.expires_at
        WHERE console_requests.expires_at <= now()
           OR (console_requests.status = 'processing' AND console_requests.payload_hash = EXCLUDED.payload_hash
               AND console_requests.updated_at < now() - make_interval(secs => ${p.add(leaseSeconds)}))
      RETURNING id, payload_hash AS "payloadHash", status, response_code AS "responseCode",
                response_headers AS "responseHeaders", response_body AS "responseBody", true AS owner
    )
    SELECT * FROM ins
    UNION ALL
    SELECT id, payload_hash, status, response_code, response_headers, response_body, false FROM console_requests
     WHERE user_id = ${p.add(k.userId)} AND action = ${p.add(k.action)} AND idempotency_key = ${p.add(k.key)} AND NOT EXISTS (SELECT 1 FROM ins)`,
        p.values,
      );
      return rows[0] ?? null;
    },

    async find(k) {
      const p = paramList();
      const rows = await ex.query<ConsoleRequestRow>(
        `SELECT id, payload_hash AS "payloadHash", status, response_code AS "responseCode", response_headers AS "responseHeaders",
               response_body AS "responseBody", false AS owner
          FROM console_requests WHERE user_id = ${p.add(k.userId)} AND action = ${p.add(k.action)} AND idempotency_key = ${p.add(k.key)}`,
        p.values,
      );
      return rows[0] ?? null;
    },

    async finish(id, answer) {
      const p = paramList();
      await ex.query(
        `UPDATE console_requests SET status = ${p.add(answer.status)}, response_code = ${p.add(answer.code)},
           response_headers = ${p.add(JSON.stringify(answer.headers))}::jsonb, response_body = ${p.add(answer.body)}, updated_at = now()
     WHERE id = ${p.add(id)}`,
        p.values,
      );
    },
  };
}
