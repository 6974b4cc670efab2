-- Adopting tables a service already has, on MySQL / MariaDB (ADR 0010, ADR 0012): lib/db/migrate.ts
-- runs this instead of migrations/20261130000000_shared_tables when idempotency_records exists
-- before the console's first migration. It keeps the service's tables, rows, types, collation,
-- constraints and indexes, and only adds what the console reads and is missing:
-- - tables that do not exist yet, in the first migration's shape;
-- - optional columns, nullable or with a constant default, ALGORITHM=INSTANT (metadata only; the
--   server refuses rather than rebuilding the table). MySQL has no ADD COLUMN IF NOT EXISTS: the
--   runner skips each ALTER TABLE … ADD COLUMN whose column exists. Added time columns default to
--   CURRENT_TIMESTAMP(6): UTC in UTC sessions (UTC_TIMESTAMP(6) cannot be added instantly);
-- - the first migration's indexes, ALGORITHM=INPLACE LOCK=NONE (writers go on); the runner skips
--   each whose name exists, and the unique key when the table has one on the same columns.
-- No CHECK and no foreign key is added to an existing table: the service's rows decide.
-- The runner refuses, naming them, when a column the console cannot do without is missing
-- (id, scope, operation, idempotency_key, payload_hash, status, expires_at; kind on events), or
-- when idempotency_records.id is not a signed BIGINT (the console's tables reference it as one).

CREATE TABLE IF NOT EXISTS `idempotency_records` (
    `id` BIGINT NOT NULL AUTO_INCREMENT,
    `scope` VARCHAR(255) NOT NULL,
    `operation` VARCHAR(255) NOT NULL,
    `idempotency_key` VARCHAR(255) NOT NULL,
    `payload_hash` VARCHAR(255) NOT NULL,
    `status` VARCHAR(255) NOT NULL,
    `expires_at` DATETIME(6) NOT NULL,
    PRIMARY KEY (`id`),
    CONSTRAINT `idempotency_records_status_check` CHECK (`status` IN ('processing', 'completed', 'failed', 'pending'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
ALTER TABLE `idempotency_records` ADD COLUMN `response_code` INT NULL, ALGORITHM=INSTANT;
ALTER TABLE `idempotency_records` ADD COLUMN `response_headers` JSON NULL, ALGORITHM=INSTANT;
ALTER TABLE `idempotency_records` ADD COLUMN `response_body` LONGTEXT NULL, ALGORITHM=INSTANT;
ALTER TABLE `idempotency_records` ADD COLUMN `resource_type` LONGTEXT NULL, ALGORITHM=INSTANT;
ALTER TABLE `idempotency_records` ADD COLUMN `resource_id` VARCHAR(255) NULL, ALGORITHM=INSTANT;
ALTER TABLE `idempotency_records` ADD COLUMN `correlation_id` VARCHAR(255) NULL, ALGORITHM=INSTANT;
ALTER TABLE `idempotency_records` ADD COLUMN `provider` LONGTEXT NULL, ALGORITHM=INSTANT;
ALTER TABLE `idempotency_records` ADD COLUMN `provider_request_id` VARCHAR(255) NULL, ALGORITHM=INSTANT;
ALTER TABLE `idempotency_records` ADD COLUMN `provider_reference` VARCHAR(255) NULL, ALGORITHM=INSTANT;
ALTER TABLE `idempotency_records` ADD COLUMN `amount_minor` BIGINT NULL, ALGORITHM=INSTANT;
ALTER TABLE `idempotency_records` ADD COLUMN `currency` LONGTEXT NULL, ALGORITHM=INSTANT;
ALTER TABLE `idempotency_records` ADD COLUMN `last_error` LONGTEXT NULL, ALGORITHM=INSTANT;
ALTER TABLE `idempotency_records` ADD COLUMN `created_at` DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), ALGORITHM=INSTANT;
ALTER TABLE `idempotency_records` ADD COLUMN `updated_at` DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), ALGORITHM=INSTANT;
ALTER TABLE `idempotency_records` ADD COLUMN `version` INT NOT NULL DEFAULT 0, ALGORITHM=INSTANT;
ALTER TABLE `idempotency_records` ADD COLUMN `legal_hold` BOOLEAN NOT NULL DEFAULT false, ALGORITHM=INSTANT;

CREATE TABLE IF NOT EXISTS `idempotency_events` (
    `id` BIGINT NOT NULL AUTO_INCREMENT,
    `scope` VARCHAR(255) NOT NULL,
    `operation` VARCHAR(255) NOT NULL,
    `idempotency_key` VARCHAR(255) NOT NULL,
    `kind` VARCHAR(255) NOT NULL,
    PRIMARY KEY (`id`),
    CONSTRAINT `idempotency_events_kind_check` CHECK (`kind` IN
        ('reserved', 'replayed', 'conflict', 'in_progress', 'completed', 'failed', 'pending', 'reconciled'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
ALTER TABLE `idempotency_events` ADD COLUMN `record_id` BIGINT NULL, ALGORITHM=INSTANT;
ALTER TABLE `idempotency_events` ADD COLUMN `payload_hash` VARCHAR(255) NULL, ALGORITHM=INSTANT;
ALTER TABLE `idempotency_events` ADD COLUMN `response_code` INT NULL, ALGORITHM=INSTANT;
ALTER TABLE `idempotency_events` ADD COLUMN `occurred_at` DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), ALGORITHM=INSTANT;
ALTER TABLE `idempotency_events` ADD COLUMN `detail` JSON NULL, ALGORITHM=INSTANT;

CREATE TABLE IF NOT EXISTS `reconciliation_items` (
    `id` BIGINT NOT NULL AUTO_INCREMENT,
    `record_id` BIGINT NOT NULL,
    `provider` LONGTEXT NOT NULL,
    PRIMARY KEY (`id`),
    CONSTRAINT `reconciliation_items_record_id_fkey` FOREIGN KEY (`record_id`)
        REFERENCES `idempotency_records` (`id`) ON DELETE CASCADE ON UPDATE NO ACTION
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
ALTER TABLE `reconciliation_items` ADD COLUMN `provider_request_id` VARCHAR(255) NULL, ALGORITHM=INSTANT;
ALTER TABLE `reconciliation_items` ADD COLUMN `state` VARCHAR(255) NOT NULL DEFAULT 'open', ALGORITHM=INSTANT;
ALTER TABLE `reconciliation_items` ADD COLUMN `attempts` INT NOT NULL DEFAULT 0, ALGORITHM=INSTANT;
ALTER TABLE `reconciliation_items` ADD COLUMN `last_checked_at` DATETIME(6) NULL, ALGORITHM=INSTANT;
ALTER TABLE `reconciliation_items` ADD COLUMN `next_check_at` DATETIME(6) NULL, ALGORITHM=INSTANT;
ALTER TABLE `reconciliation_items` ADD COLUMN `last_error` LONGTEXT NULL, ALGORITHM=INSTANT;
ALTER TABLE `reconciliation_items` ADD COLUMN `resolution` JSON NULL, ALGORITHM=INSTANT;
ALTER TABLE `reconciliation_items` ADD COLUMN `resolved_by` LONGTEXT NULL, ALGORITHM=INSTANT;
ALTER TABLE `reconciliation_items` ADD COLUMN `resolved_at` DATETIME(6) NULL, ALGORITHM=INSTANT;
ALTER TABLE `reconciliation_items` ADD COLUMN `created_at` DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), ALGORITHM=INSTANT;
ALTER TABLE `reconciliation_items` ADD COLUMN `updated_at` DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), ALGORITHM=INSTANT;

CREATE TABLE IF NOT EXISTS `outbox_messages` (
    `id` BIGINT NOT NULL AUTO_INCREMENT,
    `record_id` BIGINT NULL,
    `topic` LONGTEXT NOT NULL,
    `payload` JSON NOT NULL,
    PRIMARY KEY (`id`),
    CONSTRAINT `outbox_messages_record_id_fkey` FOREIGN KEY (`record_id`)
        REFERENCES `idempotency_records` (`id`) ON DELETE CASCADE ON UPDATE NO ACTION
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
ALTER TABLE `outbox_messages` ADD COLUMN `record_id` BIGINT NULL, ALGORITHM=INSTANT;
ALTER TABLE `outbox_messages` ADD COLUMN `status` VARCHAR(255) NOT NULL DEFAULT 'pending', ALGORITHM=INSTANT;
ALTER TABLE `outbox_messages` ADD COLUMN `attempts` INT NOT NULL DEFAULT 0, ALGORITHM=INSTANT;
ALTER TABLE `outbox_messages` ADD COLUMN `next_attempt_at` DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), ALGORITHM=INSTANT;
ALTER TABLE `outbox_messages` ADD COLUMN `last_error` LONGTEXT NULL, ALGORITHM=INSTANT;
ALTER TABLE `outbox_messages` ADD COLUMN `created_at` DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), ALGORITHM=INSTANT;
ALTER TABLE `outbox_messages` ADD COLUMN `sent_at` DATETIME(6) NULL, ALGORITHM=INSTANT;

-- The first migration's indexes, online.
CREATE UNIQUE INDEX `idempotency_records_scope_operation_key_key` ON `idempotency_records` (`scope`, `operation`, `idempotency_key`) ALGORITHM=INPLACE LOCK=NONE;
CREATE INDEX `idempotency_records_status_updated_at_idx` ON `idempotency_records` (`status`, `updated_at`) ALGORITHM=INPLACE LOCK=NONE;
CREATE INDEX `idempotency_records_expires_at_idx` ON `idempotency_records` (`expires_at`) ALGORITHM=INPLACE LOCK=NONE;
CREATE INDEX `idempotency_records_duplicate_idx` ON `idempotency_records` (`scope`, `operation`, `payload_hash`, `created_at`) ALGORITHM=INPLACE LOCK=NONE;
CREATE INDEX `idempotency_records_provider_reference_idx` ON `idempotency_records` (`provider_reference`) ALGORITHM=INPLACE LOCK=NONE;
CREATE INDEX `idempotency_records_provider_request_id_idx` ON `idempotency_records` (`provider_request_id`) ALGORITHM=INPLACE LOCK=NONE;
CREATE INDEX `idempotency_records_correlation_id_idx` ON `idempotency_records` (`correlation_id`) ALGORITHM=INPLACE LOCK=NONE;
CREATE INDEX `idempotency_records_resource_id_idx` ON `idempotency_records` (`resource_id`) ALGORITHM=INPLACE LOCK=NONE;
CREATE INDEX `idempotency_records_key_pattern_idx` ON `idempotency_records` (`idempotency_key`) ALGORITHM=INPLACE LOCK=NONE;
CREATE INDEX `idempotency_records_scope_created_at_idx` ON `idempotency_records` (`scope`, `created_at`, `id`) ALGORITHM=INPLACE LOCK=NONE;
CREATE INDEX `idempotency_records_created_at_idx` ON `idempotency_records` (`created_at`, `id`) ALGORITHM=INPLACE LOCK=NONE;
CREATE INDEX `idempotency_records_operation_expires_at_idx` ON `idempotency_records` (`operation`, `expires_at`) ALGORITHM=INPLACE LOCK=NONE;
CREATE INDEX `idempotency_records_legal_hold_idx` ON `idempotency_records` (`legal_hold`) ALGORITHM=INPLACE LOCK=NONE;
CREATE INDEX `idempotency_records_unsettled_status_idx` ON `idempotency_records` (`status`, `operation`, `updated_at`) ALGORITHM=INPLACE LOCK=NONE;
CREATE INDEX `idempotency_events_occurred_at_idx` ON `idempotency_events` (`occurred_at`) ALGORITHM=INPLACE LOCK=NONE;
CREATE INDEX `idempotency_events_operation_kind_occurred_at_idx` ON `idempotency_events` (`operation`, `kind`, `occurred_at`) ALGORITHM=INPLACE LOCK=NONE;
CREATE INDEX `idempotency_events_record_id_occurred_at_idx` ON `idempotency_events` (`record_id`, `occurred_at`) ALGORITHM=INPLACE LOCK=NONE;
CREATE INDEX `reconciliation_items_state_next_check_at_idx` ON `reconciliation_items` (`state`, `next_check_at`) ALGORITHM=INPLACE LOCK=NONE;
CREATE INDEX `reconciliation_items_record_id_idx` ON `reconciliation_items` (`record_id`) ALGORITHM=INPLACE LOCK=NONE;
CREATE INDEX `outbox_messages_status_next_attempt_at_idx` ON `outbox_messages` (`status`, `next_attempt_at`) ALGORITHM=INPLACE LOCK=NONE;
CREATE INDEX `outbox_messages_record_id_idx` ON `outbox_messages` (`record_id`) ALGORITHM=INPLACE LOCK=NONE;
