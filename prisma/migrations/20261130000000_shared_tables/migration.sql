-- The shared-table contract (see README "For services that write these tables").
-- Hand-written; applied by lib/db/migrate.ts and recorded in _prisma_migrations
-- exactly as `prisma migrate deploy` would record it.

CREATE TABLE "idempotency_records" (
    "id" BIGSERIAL NOT NULL,
    "scope" TEXT NOT NULL,
    "operation" TEXT NOT NULL,
    "idempotency_key" TEXT NOT NULL,
    "payload_hash" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "response_code" INTEGER,
    "response_headers" JSONB,
    "response_body" TEXT,
    "resource_type" TEXT,
    "resource_id" TEXT,
    "correlation_id" TEXT,
    "provider" TEXT,
    "provider_request_id" TEXT,
    "provider_reference" TEXT,
    "amount_minor" BIGINT,
    "currency" TEXT,
    "last_error" TEXT,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(6) NOT NULL,
    "version" INTEGER NOT NULL DEFAULT 0,
    "legal_hold" BOOLEAN NOT NULL DEFAULT false,

    CONSTRAINT "idempotency_records_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "idempotency_records_status_check"
        CHECK ("status" IN ('processing', 'completed', 'failed', 'pending')),
    CONSTRAINT "idempotency_records_payload_hash_check"
        CHECK ("payload_hash" ~ '^[0-9a-f]{64}$'),
    CONSTRAINT "idempotency_records_key_length_check"
        CHECK (length("idempotency_key") BETWEEN 1 AND 255),
    CONSTRAINT "idempotency_records_currency_check"
        CHECK ("currency" IS NULL OR "currency" ~ '^[A-Z]{3}$'),
    -- [name, value] pairs keep order and repeated headers; an object would lose both.
    CONSTRAINT "idempotency_records_response_headers_check"
        CHECK ("response_headers" IS NULL OR jsonb_typeof("response_headers") = 'array')
);

CREATE UNIQUE INDEX "idempotency_records_scope_operation_key_key"
    ON "idempotency_records"("scope", "operation", "idempotency_key");
CREATE INDEX "idempotency_records_status_updated_at_idx" ON "idempotency_records"("status", "updated_at");
CREATE INDEX "idempotency_records_expires_at_idx" ON "idempotency_records"("expires_at");
CREATE INDEX "idempotency_records_duplicate_idx"
    ON "idempotency_records"("scope", "operation", "payload_hash", "created_at");
CREATE INDEX "idempotency_records_provider_reference_idx" ON "idempotency_records"("provider_reference");
CREATE INDEX "idempotency_records_provider_request_id_idx" ON "idempotency_records"("provider_request_id");
CREATE INDEX "idempotency_records_correlation_id_idx" ON "idempotency_records"("correlation_id");
CREATE INDEX "idempotency_records_resource_id_idx" ON "idempotency_records"("resource_id");

CREATE TABLE "idempotency_events" (
    "id" BIGSERIAL NOT NULL,
    "record_id" BIGINT,
    "scope" TEXT NOT NULL,
    "operation" TEXT NOT NULL,
    "idempotency_key" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "payload_hash" TEXT,
    "response_code" INTEGER,
    "occurred_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "detail" JSONB,

    CONSTRAINT "idempotency_events_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "idempotency_events_kind_check" CHECK ("kind" IN
        ('reserved', 'replayed', 'conflict', 'in_progress', 'completed', 'failed', 'pending', 'reconciled'))
);

CREATE INDEX "idempotency_events_occurred_at_idx" ON "idempotency_events"("occurred_at");
CREATE INDEX "idempotency_events_operation_kind_occurred_at_idx"
    ON "idempotency_events"("operation", "kind", "occurred_at");
CREATE INDEX "idempotency_events_record_id_occurred_at_idx" ON "idempotency_events"("record_id", "occurred_at");

CREATE TABLE "reconciliation_items" (
    "id" BIGSERIAL NOT NULL,
    "record_id" BIGINT NOT NULL,
    "provider" TEXT NOT NULL,
    "provider_request_id" TEXT,
    "state" TEXT NOT NULL DEFAULT 'open',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "last_checked_at" TIMESTAMPTZ(6),
    "next_check_at" TIMESTAMPTZ(6),
    "last_error" TEXT,
    "resolution" JSONB,
    "resolved_by" TEXT,
    "resolved_at" TIMESTAMPTZ(6),
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "reconciliation_items_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "reconciliation_items_state_check" CHECK ("state" IN
        ('open', 'checking', 'resolved_succeeded', 'resolved_failed', 'needs_manual')),
    CONSTRAINT "reconciliation_items_attempts_check" CHECK ("attempts" >= 0)
);

CREATE INDEX "reconciliation_items_state_next_check_at_idx" ON "reconciliation_items"("state", "next_check_at");
CREATE INDEX "reconciliation_items_record_id_idx" ON "reconciliation_items"("record_id");

ALTER TABLE "reconciliation_items" ADD CONSTRAINT "reconciliation_items_record_id_fkey"
    FOREIGN KEY ("record_id") REFERENCES "idempotency_records"("id") ON DELETE CASCADE ON UPDATE NO ACTION;

CREATE TABLE "outbox_messages" (
    "id" BIGSERIAL NOT NULL,
    "record_id" BIGINT,
    "topic" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "next_attempt_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_error" TEXT,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "sent_at" TIMESTAMPTZ(6),

    CONSTRAINT "outbox_messages_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "outbox_messages_status_check" CHECK ("status" IN ('pending', 'sent', 'failed'))
);

CREATE INDEX "outbox_messages_status_next_attempt_at_idx" ON "outbox_messages"("status", "next_attempt_at");
CREATE INDEX "outbox_messages_record_id_idx" ON "outbox_messages"("record_id");

ALTER TABLE "outbox_messages" ADD CONSTRAINT "outbox_messages_record_id_fkey"
    FOREIGN KEY ("record_id") REFERENCES "idempotency_records"("id") ON DELETE CASCADE ON UPDATE NO ACTION;
