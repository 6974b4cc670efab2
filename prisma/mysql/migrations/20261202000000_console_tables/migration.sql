-- The console's own tables on MySQL / MariaDB, as PostgreSQL's migrations up to
-- 20261201200000_user_time_zone end (ADR 0012): users, tokens, sessions, sign-in throttling,
-- the append-only audit trail, rollups and the record census, saved views, the console's
-- requests, operator actions (compensations, retention, purge runs, legal holds), and the rows
-- the console's transaction locks are taken on. Services never write these tables.
-- No transactional DDL: each statement commits; the runner stops at the first that fails.

CREATE TABLE `console_users` (
    `id` BIGINT NOT NULL AUTO_INCREMENT,
    `email` VARCHAR(255) NOT NULL,
    `name` VARCHAR(255) NULL,
    -- scrypt$N$r$p$salt$hash (lib/auth/password.ts); NULL for single-sign-on-only users.
    `password_hash` LONGTEXT NULL,
    -- A JSON array of roles (MySQL has no arrays).
    `roles` JSON NOT NULL DEFAULT (JSON_ARRAY()),
    `sso_subject` VARCHAR(255) NULL,
    `disabled_at` DATETIME(6) NULL,
    `last_sign_in_at` DATETIME(6) NULL,
    `created_at` DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
    `updated_at` DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
    -- IANA time zone every time is shown in (NULL = UTC).
    `time_zone` LONGTEXT NULL,

    PRIMARY KEY (`id`),
    UNIQUE INDEX `console_users_email_key` (`email`),
    UNIQUE INDEX `console_users_sso_subject_key` (`sso_subject`),
    CONSTRAINT `console_users_email_check` CHECK (`email` = LOWER(`email`) AND CHAR_LENGTH(`email`) BETWEEN 3 AND 254),
    -- A subset of the five roles: the array's text, whatever the spacing (MySQL normalises it, MariaDB keeps
    -- it); [[] and []] rather than backslashes, so the pattern is the same under any sql_mode.
    CONSTRAINT `console_users_roles_check` CHECK (`roles` REGEXP
        '^[[:space:]]*[[][[:space:]]*("(viewer|support|operator|approver|admin)"[[:space:]]*(,[[:space:]]*"(viewer|support|operator|approver|admin)"[[:space:]]*)*)?[]][[:space:]]*$'),
    CONSTRAINT `console_users_time_zone_check` CHECK (`time_zone` IS NULL OR `time_zone` REGEXP '^[A-Za-z][A-Za-z0-9_+/-]{0,63}$')
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE `api_tokens` (
    `id` BIGINT NOT NULL AUTO_INCREMENT,
    `user_id` BIGINT NOT NULL,
    `name` VARCHAR(255) NOT NULL,
    -- The public part of the token ("ic_<prefix>_<secret>"): finds the row without a scan.
    `token_prefix` VARCHAR(255) NOT NULL,
    -- SHA-256 of the secret part: tokens are 256-bit random, so a fast hash is enough.
    `token_hash` LONGTEXT NOT NULL,
    -- A JSON array of permissions.
    `scopes` JSON NOT NULL,
    `expires_at` DATETIME(6) NULL,
    `revoked_at` DATETIME(6) NULL,
    `last_used_at` DATETIME(6) NULL,
    `created_by_id` BIGINT NULL,
    `created_at` DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),

    PRIMARY KEY (`id`),
    UNIQUE INDEX `api_tokens_token_prefix_key` (`token_prefix`),
    INDEX `api_tokens_user_id_idx` (`user_id`),
    CONSTRAINT `api_tokens_user_id_fkey` FOREIGN KEY (`user_id`)
        REFERENCES `console_users` (`id`) ON DELETE CASCADE ON UPDATE NO ACTION,
    -- InnoDB indexes a foreign key's columns itself (an index of the constraint's name).
    CONSTRAINT `api_tokens_created_by_id_fkey` FOREIGN KEY (`created_by_id`)
        REFERENCES `console_users` (`id`) ON DELETE SET NULL ON UPDATE NO ACTION
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE `audit_log` (
    `id` BIGINT NOT NULL AUTO_INCREMENT,
    `occurred_at` DATETIME(6) NOT NULL,
    -- user | token | system | anonymous
    `actor_type` LONGTEXT NOT NULL,
    `actor_id` VARCHAR(255) NULL,
    `actor_label` LONGTEXT NULL,
    `token_id` BIGINT NULL,
    `action` VARCHAR(255) NOT NULL,
    `target_table` VARCHAR(255) NULL,
    `target_id` VARCHAR(255) NULL,
    `before` JSON NULL,
    `after` JSON NULL,
    `reason` LONGTEXT NULL,
    `request_id` LONGTEXT NULL,
    `ip` VARCHAR(255) NULL,
    `user_agent` LONGTEXT NULL,
    -- done | refused | failed
    `outcome` LONGTEXT NOT NULL,
    `detail` JSON NULL,
    -- Hash chain: hash = HMAC-SHA256(prev_hash || canonical entry) under key_id, see lib/audit.
    `prev_hash` LONGTEXT NOT NULL,
    `hash` VARCHAR(255) NOT NULL,
    `key_id` LONGTEXT NULL,

    PRIMARY KEY (`id`),
    UNIQUE INDEX `audit_log_hash_key` (`hash`),
    INDEX `audit_log_occurred_at_idx` (`occurred_at`),
    INDEX `audit_log_actor_id_occurred_at_idx` (`actor_id`, `occurred_at`),
    INDEX `audit_log_action_occurred_at_idx` (`action`, `occurred_at`),
    INDEX `audit_log_target_idx` (`target_table`, `target_id`),
    CONSTRAINT `audit_log_actor_type_check` CHECK (`actor_type` IN ('user', 'token', 'system', 'anonymous')),
    CONSTRAINT `audit_log_outcome_check` CHECK (`outcome` IN ('done', 'refused', 'failed')),
    CONSTRAINT `audit_log_key_id_check` CHECK (`key_id` IS NULL OR `key_id` REGEXP '^[0-9a-f]{16}$')
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Append-only, enforced by the database for every user and client, not only the console.
-- TRUNCATE fires no trigger on MySQL: grant no DROP privilege on audit_log (README).
CREATE TRIGGER `audit_log_no_update` BEFORE UPDATE ON `audit_log` FOR EACH ROW
BEGIN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'audit_log is append-only: UPDATE refused';
END;

CREATE TRIGGER `audit_log_no_delete` BEFORE DELETE ON `audit_log` FOR EACH ROW
BEGIN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'audit_log is append-only: DELETE refused';
END;

CREATE TABLE `sign_in_attempts` (
    `id` BIGINT NOT NULL AUTO_INCREMENT,
    `email` VARCHAR(255) NOT NULL,
    `ip` VARCHAR(255) NOT NULL,
    `succeeded` BOOLEAN NOT NULL,
    `attempted_at` DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),

    PRIMARY KEY (`id`),
    INDEX `sign_in_attempts_email_attempted_at_idx` (`email`, `attempted_at`),
    INDEX `sign_in_attempts_ip_attempted_at_idx` (`ip`, `attempted_at`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE `console_sessions` (
    `id` BIGINT NOT NULL AUTO_INCREMENT,
    `user_id` BIGINT NOT NULL,
    `secret_hash` VARCHAR(255) NOT NULL,
    -- password | sso
    `method` LONGTEXT NOT NULL,
    `provider` LONGTEXT NULL,
    -- The identity provider's ID token, for RP-initiated logout (id_token_hint); cleared on revocation.
    `id_token` LONGTEXT NULL,
    `ip` VARCHAR(255) NULL,
    `user_agent` LONGTEXT NULL,
    `created_at` DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
    `last_seen_at` DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
    `expires_at` DATETIME(6) NOT NULL,
    `revoked_at` DATETIME(6) NULL,
    `revoked_reason` LONGTEXT NULL,

    PRIMARY KEY (`id`),
    UNIQUE INDEX `console_sessions_secret_hash_key` (`secret_hash`),
    INDEX `console_sessions_user_id_expires_at_idx` (`user_id`, `expires_at`),
    CONSTRAINT `console_sessions_method_check` CHECK (`method` IN ('password', 'sso')),
    CONSTRAINT `console_sessions_secret_hash_check` CHECK (`secret_hash` REGEXP '^[0-9a-f]{64}$'),
    CONSTRAINT `console_sessions_user_id_fkey` FOREIGN KEY (`user_id`)
        REFERENCES `console_users` (`id`) ON DELETE CASCADE ON UPDATE NO ACTION
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Per-minute rollups of idempotency_events by operation, scope and kind (lib/stats/rollups.ts).
CREATE TABLE `event_rollups` (
    `bucket` DATETIME(6) NOT NULL,
    `operation` VARCHAR(255) NOT NULL,
    `scope` VARCHAR(255) NOT NULL,
    `kind` VARCHAR(255) NOT NULL,
    `count` BIGINT NOT NULL,

    PRIMARY KEY (`bucket`, `operation`, `scope`, `kind`),
    INDEX `event_rollups_operation_bucket_idx` (`operation`, `bucket`),
    INDEX `event_rollups_scope_bucket_idx` (`scope`, `bucket`),
    CONSTRAINT `event_rollups_count_check` CHECK (`count` >= 0)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- All events with id <= watermark are counted, except the ids in rollup_gaps.
CREATE TABLE `rollup_state` (
    `name` VARCHAR(255) NOT NULL,
    `watermark` BIGINT NOT NULL DEFAULT 0,
    `updated_at` DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),

    PRIMARY KEY (`name`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Ids below the watermark not yet visible when it moved (a writer's transaction still open,
-- or rolled back). Counted when they appear; dropped after a grace period.
CREATE TABLE `rollup_gaps` (
    `event_id` BIGINT NOT NULL,
    `seen_at` DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),

    PRIMARY KEY (`event_id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The 15-minute, hour and day tiers (grain_seconds 900/3600/86400), UTC-aligned from the epoch.
CREATE TABLE `event_rollup_tiers` (
    `grain_seconds` INT NOT NULL,
    `bucket` DATETIME(6) NOT NULL,
    `operation` VARCHAR(255) NOT NULL,
    `scope` VARCHAR(255) NOT NULL,
    `kind` VARCHAR(255) NOT NULL,
    `count` BIGINT NOT NULL,

    -- 4 + 8 + 3 × 1020 bytes: exactly InnoDB's 3072-byte key limit.
    PRIMARY KEY (`grain_seconds`, `bucket`, `operation`, `scope`, `kind`),
    INDEX `event_rollup_tiers_grain_seconds_operation_bucket_idx` (`grain_seconds`, `operation`, `bucket`),
    INDEX `event_rollup_tiers_grain_seconds_scope_bucket_idx` (`grain_seconds`, `scope`, `bucket`),
    CONSTRAINT `event_rollup_tiers_count_check` CHECK (`count` >= 0),
    CONSTRAINT `event_rollup_tiers_grain_check` CHECK (`grain_seconds` IN (900, 3600, 86400)),
    CONSTRAINT `event_rollup_tiers_bucket_check`
        CHECK (MICROSECOND(`bucket`) = 0 AND MOD(TIMESTAMPDIFF(SECOND, TIMESTAMP '1970-01-01 00:00:00', `bucket`), `grain_seconds`) = 0)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The record census (lib/stats/census.ts, ADR 0007/0008): records per operation and expiry hour.
CREATE TABLE `record_census` (
    `operation` VARCHAR(255) NOT NULL,
    `expires_hour` DATETIME(6) NOT NULL,
    `count` BIGINT NOT NULL,

    PRIMARY KEY (`operation`, `expires_hour`),
    INDEX `record_census_expires_hour_idx` (`expires_hour`),
    CONSTRAINT `record_census_count_check` CHECK (`count` >= 0),
    CONSTRAINT `record_census_expires_hour_check`
        CHECK (MICROSECOND(`expires_hour`) = 0 AND SECOND(`expires_hour`) = 0 AND MINUTE(`expires_hour`) = 0)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Where each counted record is counted: record_census is their count.
CREATE TABLE `record_census_members` (
    `record_id` BIGINT NOT NULL,
    `operation` VARCHAR(255) NOT NULL,
    `expires_hour` DATETIME(6) NOT NULL,

    PRIMARY KEY (`record_id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- What the census saw writers do outside the protocol, for the overview.
CREATE TABLE `census_departures` (
    `kind` VARCHAR(255) NOT NULL,
    `records` BIGINT NOT NULL DEFAULT 0,
    `first_seen_at` DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
    `last_seen_at` DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),

    PRIMARY KEY (`kind`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Saved views: a user's named filters for a console list page (lib/views).
CREATE TABLE `saved_views` (
    `id` BIGINT NOT NULL AUTO_INCREMENT,
    `user_id` BIGINT NOT NULL,
    `page` VARCHAR(255) NOT NULL,
    `name` VARCHAR(255) NOT NULL,
    `query` LONGTEXT NOT NULL,
    `created_at` DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),

    PRIMARY KEY (`id`),
    UNIQUE INDEX `saved_views_user_id_page_name_key` (`user_id`, `page`, `name`),
    CONSTRAINT `saved_views_page_check` CHECK (`page` REGEXP '^/([a-z0-9_-]+(/[a-z0-9_-]+)*)?$' AND CHAR_LENGTH(`page`) <= 100),
    CONSTRAINT `saved_views_name_check` CHECK (CHAR_LENGTH(`name`) BETWEEN 1 AND 100),
    CONSTRAINT `saved_views_query_check` CHECK (CHAR_LENGTH(`query`) <= 2000 AND `query` NOT LIKE '?%'),
    CONSTRAINT `saved_views_user_id_fkey` FOREIGN KEY (`user_id`)
        REFERENCES `console_users` (`id`) ON DELETE CASCADE ON UPDATE NO ACTION
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The console's own idempotent requests (lib/api/idempotent.ts): never in the writers' tables.
CREATE TABLE `console_requests` (
    `id` BIGINT NOT NULL AUTO_INCREMENT,
    `user_id` BIGINT NOT NULL,
    -- The audit action the request ran, e.g. 'records.resolve'.
    `action` VARCHAR(255) NOT NULL,
    `idempotency_key` VARCHAR(255) NOT NULL,
    `payload_hash` VARCHAR(255) NOT NULL,
    `status` VARCHAR(255) NOT NULL,
    `response_code` INT NULL,
    `response_headers` JSON NULL,
    `response_body` LONGTEXT NULL,
    `created_at` DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
    `updated_at` DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
    `expires_at` DATETIME(6) NOT NULL,

    PRIMARY KEY (`id`),
    UNIQUE INDEX `console_requests_user_id_action_key_key` (`user_id`, `action`, `idempotency_key`),
    INDEX `console_requests_expires_at_idx` (`expires_at`),
    CONSTRAINT `console_requests_status_check` CHECK (`status` IN ('processing', 'completed', 'failed')),
    CONSTRAINT `console_requests_user_id_fkey` FOREIGN KEY (`user_id`)
        REFERENCES `console_users` (`id`) ON DELETE CASCADE ON UPDATE NO ACTION
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- A refund/void/cancel of a completed record's charge, requested by one person and approved by
-- another, executed through the provider adapter with its own idempotency key.
CREATE TABLE `compensations` (
    `id` BIGINT NOT NULL AUTO_INCREMENT,
    -- NULL once the record is purged; the snapshot columns below keep what it was.
    `record_id` BIGINT NULL,
    `scope` VARCHAR(255) NOT NULL,
    `operation` VARCHAR(255) NOT NULL,
    `idempotency_key` VARCHAR(255) NOT NULL,
    `related_record_id` BIGINT NULL,
    `kind` VARCHAR(255) NOT NULL,
    `amount_minor` BIGINT NOT NULL,
    `currency` LONGTEXT NOT NULL,
    `provider` LONGTEXT NOT NULL,
    `provider_reference` VARCHAR(255) NOT NULL,
    -- Sent as Idempotency-Key to the provider on every attempt of this compensation.
    `provider_idempotency_key` VARCHAR(255) NOT NULL,
    `state` VARCHAR(255) NOT NULL DEFAULT 'requested',
    `reason` LONGTEXT NOT NULL,
    `requested_by` BIGINT NOT NULL,
    `requested_by_label` LONGTEXT NOT NULL,
    `requested_at` DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
    `decided_by` BIGINT NULL,
    `decided_by_label` LONGTEXT NULL,
    `decided_at` DATETIME(6) NULL,
    `decision_reason` LONGTEXT NULL,
    `attempts` INT NOT NULL DEFAULT 0,
    `last_attempt_at` DATETIME(6) NULL,
    `last_error` LONGTEXT NULL,
    `provider_compensation_id` LONGTEXT NULL,
    `executed_at` DATETIME(6) NULL,
    `version` INT NOT NULL DEFAULT 0,
    `created_at` DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
    `updated_at` DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),

    PRIMARY KEY (`id`),
    UNIQUE INDEX `compensations_provider_idempotency_key_key` (`provider_idempotency_key`),
    INDEX `compensations_record_id_idx` (`record_id`),
    INDEX `compensations_state_requested_at_idx` (`state`, `requested_at`),
    CONSTRAINT `compensations_kind_check` CHECK (`kind` IN ('refund', 'void', 'cancel')),
    -- requested → approved | rejected; approved → executing → executed | failed; failed → executing (retry).
    CONSTRAINT `compensations_state_check` CHECK (`state` IN ('requested', 'approved', 'rejected', 'executing', 'executed', 'failed')),
    CONSTRAINT `compensations_amount_check` CHECK (`amount_minor` > 0),
    CONSTRAINT `compensations_currency_check` CHECK (`currency` REGEXP '^[A-Z]{3}$'),
    CONSTRAINT `compensations_reason_check` CHECK (CHAR_LENGTH(TRIM(`reason`)) >= 3),
    -- Four eyes, enforced by the database too: whoever decides is not who asked.
    CONSTRAINT `compensations_four_eyes_check` CHECK (`decided_by` IS NULL OR `decided_by` <> `requested_by`),
    CONSTRAINT `compensations_decision_check` CHECK ((`state` = 'requested') = (`decided_by` IS NULL)),
    CONSTRAINT `compensations_attempts_check` CHECK (`attempts` >= 0),
    CONSTRAINT `compensations_record_id_fkey` FOREIGN KEY (`record_id`)
        REFERENCES `idempotency_records` (`id`) ON DELETE SET NULL ON UPDATE NO ACTION
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Retention per operation, or the default when operation IS NULL (one of each).
CREATE TABLE `retention_policies` (
    `id` BIGINT NOT NULL AUTO_INCREMENT,
    `operation` VARCHAR(255) NULL,
    `keep_records_days` INT NOT NULL,
    `keep_events_days` INT NOT NULL,
    `enabled` BOOLEAN NOT NULL DEFAULT true,
    `updated_by_label` LONGTEXT NULL,
    `created_at` DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
    `updated_at` DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
    -- PostgreSQL's unique index is on COALESCE(operation, ''); MariaDB has no expression indexes.
    `operation_key` VARCHAR(255) AS (COALESCE(`operation`, '')) VIRTUAL,

    PRIMARY KEY (`id`),
    UNIQUE INDEX `retention_policies_operation_key` (`operation_key`),
    CONSTRAINT `retention_policies_keep_records_days_check` CHECK (`keep_records_days` BETWEEN 0 AND 36500),
    CONSTRAINT `retention_policies_keep_events_days_check` CHECK (`keep_events_days` BETWEEN 0 AND 36500),
    CONSTRAINT `retention_policies_operation_check` CHECK (`operation` IS NULL OR CHAR_LENGTH(`operation`) BETWEEN 1 AND 200)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- One purge: batches of short transactions; progress is committed with each batch.
CREATE TABLE `purge_runs` (
    `id` BIGINT NOT NULL AUTO_INCREMENT,
    `state` VARCHAR(255) NOT NULL DEFAULT 'queued',
    -- The policies as they were when the run started, and the clock it judges by.
    `policies` JSON NOT NULL,
    `as_of` DATETIME(6) NOT NULL,
    `batch_size` INT NOT NULL,
    `pause_ms` INT NOT NULL,
    `phase` VARCHAR(255) NOT NULL DEFAULT 'records',
    `record_watermark` BIGINT NOT NULL DEFAULT 0,
    `event_watermark` BIGINT NOT NULL DEFAULT 0,
    `records_deleted` BIGINT NOT NULL DEFAULT 0,
    `events_deleted` BIGINT NOT NULL DEFAULT 0,
    `batches` INT NOT NULL DEFAULT 0,
    `estimated_records` BIGINT NULL,
    `estimated_events` BIGINT NULL,
    `reason` LONGTEXT NOT NULL,
    `started_by` BIGINT NULL,
    `started_by_label` LONGTEXT NOT NULL,
    `cancel_requested_by_label` LONGTEXT NULL,
    -- Which process works the run, until when (a lease: a crashed worker's run is taken over).
    `worker` LONGTEXT NULL,
    `lease_until` DATETIME(6) NULL,
    `last_error` LONGTEXT NULL,
    `created_at` DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
    `started_at` DATETIME(6) NULL,
    `heartbeat_at` DATETIME(6) NULL,
    `finished_at` DATETIME(6) NULL,
    -- At most one run in progress: PostgreSQL's partial unique index, as a column that is 1
    -- while the run is in progress and NULL after (NULLs never collide in a unique index).
    `active_slot` TINYINT AS (IF(`state` IN ('queued', 'running', 'cancelling'), 1, NULL)) VIRTUAL,

    PRIMARY KEY (`id`),
    INDEX `purge_runs_state_idx` (`state`, `id`),
    UNIQUE INDEX `purge_runs_one_active_key` (`active_slot`),
    CONSTRAINT `purge_runs_state_check` CHECK (`state` IN ('queued', 'running', 'cancelling', 'cancelled', 'completed', 'failed')),
    CONSTRAINT `purge_runs_phase_check` CHECK (`phase` IN ('records', 'events', 'done')),
    CONSTRAINT `purge_runs_batch_size_check` CHECK (`batch_size` BETWEEN 1 AND 100000),
    CONSTRAINT `purge_runs_pause_ms_check` CHECK (`pause_ms` BETWEEN 0 AND 600000),
    CONSTRAINT `purge_runs_reason_check` CHECK (CHAR_LENGTH(TRIM(`reason`)) >= 3)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- A legal hold on a whole scope; lifting keeps the row (history).
CREATE TABLE `legal_holds` (
    `id` BIGINT NOT NULL AUTO_INCREMENT,
    `scope` VARCHAR(255) NOT NULL,
    `reason` LONGTEXT NOT NULL,
    `set_by_label` LONGTEXT NOT NULL,
    `set_at` DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
    `lifted_by_label` LONGTEXT NULL,
    `lifted_at` DATETIME(6) NULL,
    `lift_reason` LONGTEXT NULL,
    -- One active hold per scope: the scope while active, NULL once lifted.
    `active_scope` VARCHAR(255) AS (IF(`lifted_at` IS NULL, `scope`, NULL)) VIRTUAL,

    PRIMARY KEY (`id`),
    UNIQUE INDEX `legal_holds_active_scope_key` (`active_scope`),
    INDEX `legal_holds_scope_set_at_idx` (`scope`, `set_at`),
    CONSTRAINT `legal_holds_scope_check` CHECK (CHAR_LENGTH(`scope`) BETWEEN 1 AND 255),
    CONSTRAINT `legal_holds_reason_check` CHECK (CHAR_LENGTH(TRIM(`reason`)) >= 3),
    CONSTRAINT `legal_holds_lifted_check` CHECK ((`lifted_at` IS NULL) = (`lifted_by_label` IS NULL))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- The rows the console's transaction locks are taken on (lib/db/locks.ts, ADR 0012 "Locks"):
-- SELECT … FOR UPDATE (exclusive) or LOCK IN SHARE MODE (shared), released at COMMIT. One row per
-- LOCKS key; a lock added there needs its row here (a later migration).
CREATE TABLE `console_locks` (
    `name` VARCHAR(64) NOT NULL,

    PRIMARY KEY (`name`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
INSERT INTO `console_locks` (`name`) VALUES
    ('migrate'), ('auditChain'), ('rollups'), ('refresher'), ('reconciler'), ('legalHolds'), ('userAdmin');

-- Only the console's rollup writers (refresh, rebuild, census repair, the purge's census step)
-- write the rollups and the census, all tiers and members together; they set this session
-- variable around their transaction. MySQL triggers are per row and there is no
-- transaction-local setting; TRUNCATE fires no trigger.
CREATE TRIGGER `event_rollups_writer_guard_insert` BEFORE INSERT ON `event_rollups` FOR EACH ROW
BEGIN
    IF @idempotency_console_rollup_writer IS NULL OR @idempotency_console_rollup_writer <> 'members' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'event_rollups is written only by the console''s rollup writers (lib/stats): upgrade the console';
    END IF;
END;
CREATE TRIGGER `event_rollups_writer_guard_update` BEFORE UPDATE ON `event_rollups` FOR EACH ROW
BEGIN
    IF @idempotency_console_rollup_writer IS NULL OR @idempotency_console_rollup_writer <> 'members' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'event_rollups is written only by the console''s rollup writers (lib/stats): upgrade the console';
    END IF;
END;
CREATE TRIGGER `event_rollups_writer_guard_delete` BEFORE DELETE ON `event_rollups` FOR EACH ROW
BEGIN
    IF @idempotency_console_rollup_writer IS NULL OR @idempotency_console_rollup_writer <> 'members' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'event_rollups is written only by the console''s rollup writers (lib/stats): upgrade the console';
    END IF;
END;
CREATE TRIGGER `event_rollup_tiers_writer_guard_insert` BEFORE INSERT ON `event_rollup_tiers` FOR EACH ROW
BEGIN
    IF @idempotency_console_rollup_writer IS NULL OR @idempotency_console_rollup_writer <> 'members' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'event_rollup_tiers is written only by the console''s rollup writers (lib/stats): upgrade the console';
    END IF;
END;
CREATE TRIGGER `event_rollup_tiers_writer_guard_update` BEFORE UPDATE ON `event_rollup_tiers` FOR EACH ROW
BEGIN
    IF @idempotency_console_rollup_writer IS NULL OR @idempotency_console_rollup_writer <> 'members' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'event_rollup_tiers is written only by the console''s rollup writers (lib/stats): upgrade the console';
    END IF;
END;
CREATE TRIGGER `event_rollup_tiers_writer_guard_delete` BEFORE DELETE ON `event_rollup_tiers` FOR EACH ROW
BEGIN
    IF @idempotency_console_rollup_writer IS NULL OR @idempotency_console_rollup_writer <> 'members' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'event_rollup_tiers is written only by the console''s rollup writers (lib/stats): upgrade the console';
    END IF;
END;
CREATE TRIGGER `record_census_writer_guard_insert` BEFORE INSERT ON `record_census` FOR EACH ROW
BEGIN
    IF @idempotency_console_rollup_writer IS NULL OR @idempotency_console_rollup_writer <> 'members' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'record_census is written only by the console''s rollup writers (lib/stats): upgrade the console';
    END IF;
END;
CREATE TRIGGER `record_census_writer_guard_update` BEFORE UPDATE ON `record_census` FOR EACH ROW
BEGIN
    IF @idempotency_console_rollup_writer IS NULL OR @idempotency_console_rollup_writer <> 'members' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'record_census is written only by the console''s rollup writers (lib/stats): upgrade the console';
    END IF;
END;
CREATE TRIGGER `record_census_writer_guard_delete` BEFORE DELETE ON `record_census` FOR EACH ROW
BEGIN
    IF @idempotency_console_rollup_writer IS NULL OR @idempotency_console_rollup_writer <> 'members' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'record_census is written only by the console''s rollup writers (lib/stats): upgrade the console';
    END IF;
END;
CREATE TRIGGER `record_census_members_writer_guard_insert` BEFORE INSERT ON `record_census_members` FOR EACH ROW
BEGIN
    IF @idempotency_console_rollup_writer IS NULL OR @idempotency_console_rollup_writer <> 'members' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'record_census_members is written only by the console''s rollup writers (lib/stats): upgrade the console';
    END IF;
END;
CREATE TRIGGER `record_census_members_writer_guard_update` BEFORE UPDATE ON `record_census_members` FOR EACH ROW
BEGIN
    IF @idempotency_console_rollup_writer IS NULL OR @idempotency_console_rollup_writer <> 'members' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'record_census_members is written only by the console''s rollup writers (lib/stats): upgrade the console';
    END IF;
END;
CREATE TRIGGER `record_census_members_writer_guard_delete` BEFORE DELETE ON `record_census_members` FOR EACH ROW
BEGIN
    IF @idempotency_console_rollup_writer IS NULL OR @idempotency_console_rollup_writer <> 'members' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'record_census_members is written only by the console''s rollup writers (lib/stats): upgrade the console';
    END IF;
END;

-- The census of the records already there (a service adopting the console; none on a new
-- database), as its writer: every record a member, counted where it expires, and the record
-- high-water mark the highest of them. The runner's session is READ COMMITTED, so this reads
-- idempotency_records without locking the services' rows.
SET @idempotency_console_rollup_writer = 'members';
INSERT INTO `record_census_members` (`record_id`, `operation`, `expires_hour`)
SELECT `id`, `operation`, DATE_FORMAT(`expires_at`, '%Y-%m-%d %H:00:00') FROM `idempotency_records`;
INSERT INTO `record_census` (`operation`, `expires_hour`, `count`)
SELECT `operation`, `expires_hour`, COUNT(*) FROM `record_census_members` GROUP BY `operation`, `expires_hour`;
INSERT INTO `rollup_state` (`name`, `watermark`)
SELECT 'records', COALESCE(MAX(`record_id`), 0) FROM `record_census_members`;
SET @idempotency_console_rollup_writer = NULL;
