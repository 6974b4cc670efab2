-- The shared-table contract on MySQL / MariaDB (README "Running on MySQL/MariaDB", ADR 0012):
-- the tables PostgreSQL's migrations end with, in MySQL's types. Hand-written; applied by
-- lib/db/migrate.ts statement by statement and recorded in _prisma_migrations as Prisma's
-- schema engine records it on MySQL. Backticks only, so it applies under any sql_mode.
-- - Times are DATETIME(6) holding UTC; defaults UTC_TIMESTAMP(6), whatever the writer's zone.
-- - Texts are VARCHAR(255) where indexed (InnoDB's 3072-byte key limit under utf8mb4), LONGTEXT
--   otherwise; utf8mb4_bin compares byte for byte, like PostgreSQL's `=`.
-- - Only the protocol's own constraints: the unique key and the status / kind values (ADR 0010).
-- When idempotency_records exists already, prisma/mysql/adopt/20261130000000_shared_tables.sql
-- runs instead.

CREATE TABLE `idempotency_records` (
    `id` BIGINT NOT NULL AUTO_INCREMENT,
    `scope` VARCHAR(255) NOT NULL,
    `operation` VARCHAR(255) NOT NULL,
    `idempotency_key` VARCHAR(255) NOT NULL,
    `payload_hash` VARCHAR(255) NOT NULL,
    `status` VARCHAR(255) NOT NULL,
    `response_code` INT NULL,
    `response_headers` JSON NULL,
    `response_body` LONGTEXT NULL,
    `resource_type` LONGTEXT NULL,
    `resource_id` VARCHAR(255) NULL,
    `correlation_id` VARCHAR(255) NULL,
    `provider` LONGTEXT NULL,
    `provider_request_id` VARCHAR(255) NULL,
    `provider_reference` VARCHAR(255) NULL,
    `amount_minor` BIGINT NULL,
    `currency` LONGTEXT NULL,
    `last_error` LONGTEXT NULL,
    `created_at` DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
    `updated_at` DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
    `expires_at` DATETIME(6) NOT NULL,
    `version` INT NOT NULL DEFAULT 0,
    `legal_hold` BOOLEAN NOT NULL DEFAULT false,

    PRIMARY KEY (`id`),
    -- The arbiter of who executes: reserve with INSERT … ON DUPLICATE KEY UPDATE or a plain INSERT (ER_DUP_ENTRY).
    UNIQUE INDEX `idempotency_records_scope_operation_key_key` (`scope`, `operation`, `idempotency_key`),
    INDEX `idempotency_records_status_updated_at_idx` (`status`, `updated_at`),
    INDEX `idempotency_records_expires_at_idx` (`expires_at`),
    INDEX `idempotency_records_duplicate_idx` (`scope`, `operation`, `payload_hash`, `created_at`),
    -- Search (equality and prefix LIKE: the binary collation needs no pattern operator class).
    INDEX `idempotency_records_provider_reference_idx` (`provider_reference`),
    INDEX `idempotency_records_provider_request_id_idx` (`provider_request_id`),
    INDEX `idempotency_records_correlation_id_idx` (`correlation_id`),
    INDEX `idempotency_records_resource_id_idx` (`resource_id`),
    INDEX `idempotency_records_key_pattern_idx` (`idempotency_key`),
    INDEX `idempotency_records_scope_created_at_idx` (`scope`, `created_at`, `id`),
    INDEX `idempotency_records_created_at_idx` (`created_at`, `id`),
    -- Purge eligibility per operation.
    INDEX `idempotency_records_operation_expires_at_idx` (`operation`, `expires_at`),
    -- PostgreSQL's is partial (WHERE legal_hold); MySQL has no partial indexes (InnoDB appends the id).
    INDEX `idempotency_records_legal_hold_idx` (`legal_hold`),
    -- PostgreSQL's is partial (WHERE status <> 'completed'): here completed records are in it too.
    INDEX `idempotency_records_unsettled_status_idx` (`status`, `operation`, `updated_at`),
    CONSTRAINT `idempotency_records_status_check` CHECK (`status` IN ('processing', 'completed', 'failed', 'pending'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE `idempotency_events` (
    `id` BIGINT NOT NULL AUTO_INCREMENT,
    `record_id` BIGINT NULL,
    `scope` VARCHAR(255) NOT NULL,
    `operation` VARCHAR(255) NOT NULL,
    `idempotency_key` VARCHAR(255) NOT NULL,
    `kind` VARCHAR(255) NOT NULL,
    `payload_hash` VARCHAR(255) NULL,
    `response_code` INT NULL,
    `occurred_at` DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
    `detail` JSON NULL,

    PRIMARY KEY (`id`),
    INDEX `idempotency_events_occurred_at_idx` (`occurred_at`),
    INDEX `idempotency_events_operation_kind_occurred_at_idx` (`operation`, `kind`, `occurred_at`),
    INDEX `idempotency_events_record_id_occurred_at_idx` (`record_id`, `occurred_at`),
    CONSTRAINT `idempotency_events_kind_check` CHECK (`kind` IN
        ('reserved', 'replayed', 'conflict', 'in_progress', 'completed', 'failed', 'pending', 'reconciled'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE `reconciliation_items` (
    `id` BIGINT NOT NULL AUTO_INCREMENT,
    `record_id` BIGINT NOT NULL,
    `provider` LONGTEXT NOT NULL,
    `provider_request_id` VARCHAR(255) NULL,
    `state` VARCHAR(255) NOT NULL DEFAULT 'open',
    `attempts` INT NOT NULL DEFAULT 0,
    `last_checked_at` DATETIME(6) NULL,
    `next_check_at` DATETIME(6) NULL,
    `last_error` LONGTEXT NULL,
    `resolution` JSON NULL,
    `resolved_by` LONGTEXT NULL,
    `resolved_at` DATETIME(6) NULL,
    `created_at` DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
    `updated_at` DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),

    PRIMARY KEY (`id`),
    INDEX `reconciliation_items_state_next_check_at_idx` (`state`, `next_check_at`),
    INDEX `reconciliation_items_record_id_idx` (`record_id`),
    CONSTRAINT `reconciliation_items_state_check` CHECK (`state` IN
        ('open', 'checking', 'resolved_succeeded', 'resolved_failed', 'needs_manual')),
    CONSTRAINT `reconciliation_items_attempts_check` CHECK (`attempts` >= 0),
    CONSTRAINT `reconciliation_items_record_id_fkey` FOREIGN KEY (`record_id`)
        REFERENCES `idempotency_records` (`id`) ON DELETE CASCADE ON UPDATE NO ACTION
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE `outbox_messages` (
    `id` BIGINT NOT NULL AUTO_INCREMENT,
    `record_id` BIGINT NULL,
    `topic` LONGTEXT NOT NULL,
    `payload` JSON NOT NULL,
    -- The console's states are pending | sent | failed; a service may use its own (ADR 0010: no CHECK).
    `status` VARCHAR(255) NOT NULL DEFAULT 'pending',
    `attempts` INT NOT NULL DEFAULT 0,
    `next_attempt_at` DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
    `last_error` LONGTEXT NULL,
    `created_at` DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
    `sent_at` DATETIME(6) NULL,

    PRIMARY KEY (`id`),
    INDEX `outbox_messages_status_next_attempt_at_idx` (`status`, `next_attempt_at`),
    INDEX `outbox_messages_record_id_idx` (`record_id`),
    CONSTRAINT `outbox_messages_record_id_fkey` FOREIGN KEY (`record_id`)
        REFERENCES `idempotency_records` (`id`) ON DELETE CASCADE ON UPDATE NO ACTION
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
