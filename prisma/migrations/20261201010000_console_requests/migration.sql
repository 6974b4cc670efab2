-- The console's own requests leave the writers' tables (ADR 0005, revised). Its idempotent
-- actions kept their keys in idempotency_records (scope 'console:user:<id>', operation
-- 'console.<action>'), so the overview, search, metrics and the queue counted them as
-- business traffic, and an operator could resolve, hold or purge them. They now live in a
-- table of the console's own; existing ones move here, and their records, events and
-- rollup counts leave the shared tables.
--
-- Locks: reads and deletes the console's own rows of the shared tables (row locks only).

CREATE TABLE "console_requests" (
    "id" BIGSERIAL NOT NULL,
    "user_id" BIGINT NOT NULL,
    -- The audit action the request ran, e.g. 'records.resolve'.
    "action" TEXT NOT NULL,
    "idempotency_key" TEXT NOT NULL,
    "payload_hash" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "response_code" INTEGER,
    "response_headers" JSONB,
    "response_body" TEXT,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(6) NOT NULL,

    CONSTRAINT "console_requests_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "console_requests_status_check" CHECK ("status" IN ('processing', 'completed', 'failed'))
);
CREATE UNIQUE INDEX "console_requests_user_id_action_key_key" ON "console_requests"("user_id", "action", "idempotency_key");
CREATE INDEX "console_requests_expires_at_idx" ON "console_requests"("expires_at");
ALTER TABLE "console_requests" ADD CONSTRAINT "console_requests_user_id_fkey"
    FOREIGN KEY ("user_id") REFERENCES "console_users"("id") ON DELETE CASCADE ON UPDATE NO ACTION;

CREATE TEMPORARY TABLE "moving_console_records" ON COMMIT DROP AS
SELECT substring(r."scope" FROM '^console:user:([0-9]+)$')::bigint AS "user_id", substring(r."operation" FROM 9) AS "action", r.*
  FROM "idempotency_records" r
 WHERE r."scope" ~ '^console:user:[0-9]+$' AND r."operation" LIKE 'console.%';

INSERT INTO "console_requests" ("user_id", "action", "idempotency_key", "payload_hash", "status", "response_code",
                                "response_headers", "response_body", "created_at", "updated_at", "expires_at")
SELECT m."user_id", m."action", m."idempotency_key", m."payload_hash",
       CASE WHEN m."status" IN ('processing', 'completed', 'failed') THEN m."status" ELSE 'failed' END,
       m."response_code", m."response_headers", m."response_body", m."created_at", m."updated_at", m."expires_at"
  FROM "moving_console_records" m
 WHERE EXISTS (SELECT 1 FROM "console_users" u WHERE u."id" = m."user_id");

DELETE FROM "idempotency_events" e WHERE e."record_id" IN (SELECT "id" FROM "moving_console_records");
DELETE FROM "idempotency_events" e WHERE e."scope" ~ '^console:user:[0-9]+$' AND e."operation" LIKE 'console.%';
DELETE FROM "idempotency_records" r WHERE r."id" IN (SELECT "id" FROM "moving_console_records");

-- Their rollup counts go too (the rollups are kept per operation × scope, so exactly those),
-- as the rollups' writer (guard trigger) and under the refresher's lock.
SELECT pg_advisory_xact_lock(72707371);
SELECT set_config('idempotency_console.rollup_writer', 'census', true);
DELETE FROM "event_rollups" WHERE "scope" ~ '^console:user:[0-9]+$' AND "operation" LIKE 'console.%';
DELETE FROM "event_rollup_tiers" WHERE "scope" ~ '^console:user:[0-9]+$' AND "operation" LIKE 'console.%';
-- (The record census is recounted by the next migration, 20261201020000_census_members.)
