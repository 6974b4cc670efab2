-- Adopting tables a service already has (lib/db/migrate.ts runs this instead of
-- migrations/20261130000000_shared_tables when idempotency_records exists before the
-- console's first migration). It keeps the service's tables, rows, constraints and indexes,
-- and only adds what the console reads and is missing:
-- - tables that do not exist yet, in the first migration's shape (without the CHECKs the
--   console later dropped, migration 20261201000000_liberal_shared_tables);
-- - optional columns, nullable or with a constant default: metadata only on PostgreSQL ≥ 11
--   (no rewrite, no scan; a moment's ACCESS EXCLUSIVE lock, bounded by lock_timeout);
-- - the first migration's indexes, built afterwards with CREATE INDEX CONCURRENTLY (writers
--   go on), except the unique key when the table already has one on the same columns.
-- No CHECK and no foreign key is added to an existing table: the service's rows decide.
-- The columns the console cannot do without (id, scope, operation, idempotency_key,
-- payload_hash, status, expires_at; kind on events) must exist: the runner refuses, naming
-- them, when one is missing.

CREATE TABLE IF NOT EXISTS "idempotency_records" (
    "id" BIGSERIAL NOT NULL,
    "scope" TEXT NOT NULL,
    "operation" TEXT NOT NULL,
    "idempotency_key" TEXT NOT NULL,
    "payload_hash" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "expires_at" TIMESTAMPTZ(6) NOT NULL,
    CONSTRAINT "idempotency_records_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "idempotency_records_status_check" CHECK ("status" IN ('processing', 'completed', 'failed', 'pending'))
);
ALTER TABLE "idempotency_records" ADD COLUMN IF NOT EXISTS "response_code" INTEGER;
ALTER TABLE "idempotency_records" ADD COLUMN IF NOT EXISTS "response_headers" JSONB;
ALTER TABLE "idempotency_records" ADD COLUMN IF NOT EXISTS "response_body" TEXT;
ALTER TABLE "idempotency_records" ADD COLUMN IF NOT EXISTS "resource_type" TEXT;
ALTER TABLE "idempotency_records" ADD COLUMN IF NOT EXISTS "resource_id" TEXT;
ALTER TABLE "idempotency_records" ADD COLUMN IF NOT EXISTS "correlation_id" TEXT;
ALTER TABLE "idempotency_records" ADD COLUMN IF NOT EXISTS "provider" TEXT;
ALTER TABLE "idempotency_records" ADD COLUMN IF NOT EXISTS "provider_request_id" TEXT;
ALTER TABLE "idempotency_records" ADD COLUMN IF NOT EXISTS "provider_reference" TEXT;
ALTER TABLE "idempotency_records" ADD COLUMN IF NOT EXISTS "amount_minor" BIGINT;
ALTER TABLE "idempotency_records" ADD COLUMN IF NOT EXISTS "currency" TEXT;
ALTER TABLE "idempotency_records" ADD COLUMN IF NOT EXISTS "last_error" TEXT;
ALTER TABLE "idempotency_records" ADD COLUMN IF NOT EXISTS "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP;
ALTER TABLE "idempotency_records" ADD COLUMN IF NOT EXISTS "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP;
ALTER TABLE "idempotency_records" ADD COLUMN IF NOT EXISTS "version" INTEGER NOT NULL DEFAULT 0;
ALTER TABLE "idempotency_records" ADD COLUMN IF NOT EXISTS "legal_hold" BOOLEAN NOT NULL DEFAULT false;

CREATE TABLE IF NOT EXISTS "idempotency_events" (
    "id" BIGSERIAL NOT NULL,
    "scope" TEXT NOT NULL,
    "operation" TEXT NOT NULL,
    "idempotency_key" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    CONSTRAINT "idempotency_events_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "idempotency_events_kind_check" CHECK ("kind" IN
        ('reserved', 'replayed', 'conflict', 'in_progress', 'completed', 'failed', 'pending', 'reconciled'))
);
ALTER TABLE "idempotency_events" ADD COLUMN IF NOT EXISTS "record_id" BIGINT;
ALTER TABLE "idempotency_events" ADD COLUMN IF NOT EXISTS "payload_hash" TEXT;
ALTER TABLE "idempotency_events" ADD COLUMN IF NOT EXISTS "response_code" INTEGER;
ALTER TABLE "idempotency_events" ADD COLUMN IF NOT EXISTS "occurred_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP;
ALTER TABLE "idempotency_events" ADD COLUMN IF NOT EXISTS "detail" JSONB;

CREATE TABLE IF NOT EXISTS "reconciliation_items" (
    "id" BIGSERIAL NOT NULL,
    "record_id" BIGINT NOT NULL,
    "provider" TEXT NOT NULL,
    CONSTRAINT "reconciliation_items_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "reconciliation_items_record_id_fkey" FOREIGN KEY ("record_id") REFERENCES "idempotency_records"("id") ON DELETE CASCADE ON UPDATE NO ACTION
);
ALTER TABLE "reconciliation_items" ADD COLUMN IF NOT EXISTS "provider_request_id" TEXT;
ALTER TABLE "reconciliation_items" ADD COLUMN IF NOT EXISTS "state" TEXT NOT NULL DEFAULT 'open';
ALTER TABLE "reconciliation_items" ADD COLUMN IF NOT EXISTS "attempts" INTEGER NOT NULL DEFAULT 0;
ALTER TABLE "reconciliation_items" ADD COLUMN IF NOT EXISTS "last_checked_at" TIMESTAMPTZ(6);
ALTER TABLE "reconciliation_items" ADD COLUMN IF NOT EXISTS "next_check_at" TIMESTAMPTZ(6);
ALTER TABLE "reconciliation_items" ADD COLUMN IF NOT EXISTS "last_error" TEXT;
ALTER TABLE "reconciliation_items" ADD COLUMN IF NOT EXISTS "resolution" JSONB;
ALTER TABLE "reconciliation_items" ADD COLUMN IF NOT EXISTS "resolved_by" TEXT;
ALTER TABLE "reconciliation_items" ADD COLUMN IF NOT EXISTS "resolved_at" TIMESTAMPTZ(6);
ALTER TABLE "reconciliation_items" ADD COLUMN IF NOT EXISTS "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP;
ALTER TABLE "reconciliation_items" ADD COLUMN IF NOT EXISTS "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP;

CREATE TABLE IF NOT EXISTS "outbox_messages" (
    "id" BIGSERIAL NOT NULL,
    "record_id" BIGINT,
    "topic" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    CONSTRAINT "outbox_messages_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "outbox_messages_record_id_fkey" FOREIGN KEY ("record_id") REFERENCES "idempotency_records"("id") ON DELETE CASCADE ON UPDATE NO ACTION
);
ALTER TABLE "outbox_messages" ADD COLUMN IF NOT EXISTS "record_id" BIGINT;
ALTER TABLE "outbox_messages" ADD COLUMN IF NOT EXISTS "status" TEXT NOT NULL DEFAULT 'pending';
ALTER TABLE "outbox_messages" ADD COLUMN IF NOT EXISTS "attempts" INTEGER NOT NULL DEFAULT 0;
ALTER TABLE "outbox_messages" ADD COLUMN IF NOT EXISTS "next_attempt_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP;
ALTER TABLE "outbox_messages" ADD COLUMN IF NOT EXISTS "last_error" TEXT;
ALTER TABLE "outbox_messages" ADD COLUMN IF NOT EXISTS "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP;
ALTER TABLE "outbox_messages" ADD COLUMN IF NOT EXISTS "sent_at" TIMESTAMPTZ(6);
