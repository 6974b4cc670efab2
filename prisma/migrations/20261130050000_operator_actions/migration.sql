-- Operator actions (issue 5): compensations with four-eyes approval, retention
-- policies, purge runs and scope-wide legal holds. Console-owned tables; the
-- services never write them. Record-level legal holds are the shared table's
-- own idempotency_records.legal_hold column.

-- A refund/void/cancel of a completed record's charge, requested by one person
-- and approved by another, executed through the provider adapter with its own
-- idempotency key (so a retry after a timeout can never refund twice).
CREATE TABLE "compensations" (
    "id" BIGSERIAL NOT NULL,
    -- NULL once the record is purged; the snapshot columns below keep what it was.
    "record_id" BIGINT,
    "scope" TEXT NOT NULL,
    "operation" TEXT NOT NULL,
    "idempotency_key" TEXT NOT NULL,
    -- The suspected duplicate this compensation undoes (duplicate-charge hand-over), if any.
    "related_record_id" BIGINT,
    "kind" TEXT NOT NULL,
    "amount_minor" BIGINT NOT NULL,
    "currency" TEXT NOT NULL,
    "provider" TEXT NOT NULL,
    -- The charge being compensated (the record's provider_reference at request time).
    "provider_reference" TEXT NOT NULL,
    -- Sent as Idempotency-Key to the provider on every attempt of this compensation.
    "provider_idempotency_key" TEXT NOT NULL,
    "state" TEXT NOT NULL DEFAULT 'requested',
    "reason" TEXT NOT NULL,
    "requested_by" BIGINT NOT NULL,
    "requested_by_label" TEXT NOT NULL,
    "requested_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "decided_by" BIGINT,
    "decided_by_label" TEXT,
    "decided_at" TIMESTAMPTZ(6),
    "decision_reason" TEXT,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "last_attempt_at" TIMESTAMPTZ(6),
    "last_error" TEXT,
    -- The provider's id of the refund/void once it succeeded.
    "provider_compensation_id" TEXT,
    "executed_at" TIMESTAMPTZ(6),
    "version" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "compensations_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "compensations_kind_check" CHECK ("kind" IN ('refund', 'void', 'cancel')),
    -- requested → approved | rejected; approved → executing → executed | failed; failed → executing (retry).
    CONSTRAINT "compensations_state_check" CHECK ("state" IN ('requested', 'approved', 'rejected', 'executing', 'executed', 'failed')),
    CONSTRAINT "compensations_amount_check" CHECK ("amount_minor" > 0),
    CONSTRAINT "compensations_currency_check" CHECK ("currency" ~ '^[A-Z]{3}$'),
    CONSTRAINT "compensations_reason_check" CHECK (length(btrim("reason")) >= 3),
    -- Four eyes, enforced by the database too: whoever decides is not who asked.
    CONSTRAINT "compensations_four_eyes_check" CHECK ("decided_by" IS NULL OR "decided_by" <> "requested_by"),
    CONSTRAINT "compensations_decision_check" CHECK (("state" = 'requested') = ("decided_by" IS NULL)),
    CONSTRAINT "compensations_attempts_check" CHECK ("attempts" >= 0)
);

CREATE UNIQUE INDEX "compensations_provider_idempotency_key_key" ON "compensations"("provider_idempotency_key");
CREATE INDEX "compensations_record_id_idx" ON "compensations"("record_id");
CREATE INDEX "compensations_state_requested_at_idx" ON "compensations"("state", "requested_at");
ALTER TABLE "compensations" ADD CONSTRAINT "compensations_record_id_fkey"
    FOREIGN KEY ("record_id") REFERENCES "idempotency_records"("id") ON DELETE SET NULL ON UPDATE NO ACTION;

-- Retention: per operation, or the default when operation IS NULL (one of each).
-- Completed/failed records are kept keep_records_days after expires_at; events
-- keep_events_days after occurred_at.
CREATE TABLE "retention_policies" (
    "id" BIGSERIAL NOT NULL,
    "operation" TEXT,
    "keep_records_days" INTEGER NOT NULL,
    "keep_events_days" INTEGER NOT NULL,
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "updated_by_label" TEXT,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "retention_policies_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "retention_policies_keep_records_days_check" CHECK ("keep_records_days" BETWEEN 0 AND 36500),
    CONSTRAINT "retention_policies_keep_events_days_check" CHECK ("keep_events_days" BETWEEN 0 AND 36500),
    CONSTRAINT "retention_policies_operation_check" CHECK ("operation" IS NULL OR length("operation") BETWEEN 1 AND 200)
);
CREATE UNIQUE INDEX "retention_policies_operation_key" ON "retention_policies"(COALESCE("operation", ''));

-- One purge: batches of short transactions; progress (watermarks and counts) is
-- committed with each batch, so a run killed mid-way resumes where it stopped.
CREATE TABLE "purge_runs" (
    "id" BIGSERIAL NOT NULL,
    "state" TEXT NOT NULL DEFAULT 'queued',
    -- The policies as they were when the run started, and the clock it judges by.
    "policies" JSONB NOT NULL,
    "as_of" TIMESTAMPTZ(6) NOT NULL,
    "batch_size" INTEGER NOT NULL,
    "pause_ms" INTEGER NOT NULL,
    "phase" TEXT NOT NULL DEFAULT 'records',
    "record_watermark" BIGINT NOT NULL DEFAULT 0,
    "event_watermark" BIGINT NOT NULL DEFAULT 0,
    "records_deleted" BIGINT NOT NULL DEFAULT 0,
    "events_deleted" BIGINT NOT NULL DEFAULT 0,
    "batches" INTEGER NOT NULL DEFAULT 0,
    -- Eligible counts from the run's own dry run at start (for progress).
    "estimated_records" BIGINT,
    "estimated_events" BIGINT,
    "reason" TEXT NOT NULL,
    "started_by" BIGINT,
    "started_by_label" TEXT NOT NULL,
    "cancel_requested_by_label" TEXT,
    -- Which process works the run, until when (a lease: a crashed worker's run is taken over).
    "worker" TEXT,
    "lease_until" TIMESTAMPTZ(6),
    "last_error" TEXT,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "started_at" TIMESTAMPTZ(6),
    "heartbeat_at" TIMESTAMPTZ(6),
    "finished_at" TIMESTAMPTZ(6),

    CONSTRAINT "purge_runs_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "purge_runs_state_check" CHECK ("state" IN ('queued', 'running', 'cancelling', 'cancelled', 'completed', 'failed')),
    CONSTRAINT "purge_runs_phase_check" CHECK ("phase" IN ('records', 'events', 'done')),
    CONSTRAINT "purge_runs_batch_size_check" CHECK ("batch_size" BETWEEN 1 AND 100000),
    CONSTRAINT "purge_runs_pause_ms_check" CHECK ("pause_ms" BETWEEN 0 AND 600000),
    CONSTRAINT "purge_runs_reason_check" CHECK (length(btrim("reason")) >= 3)
);
CREATE INDEX "purge_runs_state_idx" ON "purge_runs"("state", "id");
-- At most one run in progress at a time.
CREATE UNIQUE INDEX "purge_runs_one_active_key" ON "purge_runs"((true)) WHERE "state" IN ('queued', 'running', 'cancelling');

-- A legal hold on a whole scope (tenant/subject): none of its records or events
-- may be purged while the hold is active. Lifting keeps the row (history).
CREATE TABLE "legal_holds" (
    "id" BIGSERIAL NOT NULL,
    "scope" TEXT NOT NULL,
    "reason" TEXT NOT NULL,
    "set_by_label" TEXT NOT NULL,
    "set_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "lifted_by_label" TEXT,
    "lifted_at" TIMESTAMPTZ(6),
    "lift_reason" TEXT,

    CONSTRAINT "legal_holds_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "legal_holds_scope_check" CHECK (length("scope") BETWEEN 1 AND 255),
    CONSTRAINT "legal_holds_reason_check" CHECK (length(btrim("reason")) >= 3),
    CONSTRAINT "legal_holds_lifted_check" CHECK (("lifted_at" IS NULL) = ("lifted_by_label" IS NULL))
);
CREATE UNIQUE INDEX "legal_holds_active_scope_key" ON "legal_holds"("scope") WHERE "lifted_at" IS NULL;
CREATE INDEX "legal_holds_scope_set_at_idx" ON "legal_holds"("scope", "set_at");

-- Purge eligibility per operation walks expired records in id order.
CREATE INDEX "idempotency_records_operation_expires_at_idx" ON "idempotency_records"("operation", "expires_at");
-- Record-level holds are rare: a partial index finds them without a scan.
CREATE INDEX "idempotency_records_legal_hold_idx" ON "idempotency_records"("id") WHERE "legal_hold";
