/**
 * audit_log's columns aliased to the Prisma model's field names, so a raw row is an AuditEntry
 * (the same text on every dialect: MySQL sessions run with ANSI_QUOTES, ADR 0012).
 */
export const AUDIT_ENTRY_COLUMNS = [
  "id",
  'occurred_at AS "occurredAt"',
  'actor_type AS "actorType"',
  'actor_id AS "actorId"',
  'actor_label AS "actorLabel"',
  'token_id AS "tokenId"',
  "action",
  'target_table AS "targetTable"',
  'target_id AS "targetId"',
  '"before"',
  '"after"',
  "reason",
  'request_id AS "requestId"',
  "ip",
  'user_agent AS "userAgent"',
  "outcome",
  "detail",
  'prev_hash AS "prevHash"',
  "hash",
  'key_id AS "keyId"',
].join(", ");

/** `s` as the start of a LIKE pattern: its wildcards and the escape character (backslash on both dialects) taken literally. */
export const likePrefix = (s: string) => `${s.replace(/[\\%_]/g, "\\$&")}%`;
