-- Issue 17 on MySQL/MariaDB: the insights' own tables, as PostgreSQL's 20261201300000_insight_alerts
-- (console-owned; nothing on the services' tables). Types per ADR 0012 (prisma/mysql/schema.prisma).

-- One row per alert subject (fingerprint = kind|scope|operation|subject): open while it fires,
-- resolved_at set when it stops; a later firing reopens the row as a new alert (ack cleared).
CREATE TABLE `insight_alerts` (
    `id` BIGINT NOT NULL AUTO_INCREMENT,
    `fingerprint` VARCHAR(255) NOT NULL,
    `kind` VARCHAR(255) NOT NULL,
    `scope` VARCHAR(255) NULL,
    `operation` VARCHAR(255) NULL,
    `severity` LONGTEXT NOT NULL,
    `summary` LONGTEXT NOT NULL,
    `detail` JSON NULL,
    `first_seen_at` DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
    `last_seen_at` DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
    `resolved_at` DATETIME(6) NULL,
    `acknowledged_at` DATETIME(6) NULL,
    `acknowledged_by` BIGINT NULL,
    `acknowledged_by_label` LONGTEXT NULL,
    `acknowledge_reason` LONGTEXT NULL,
    -- The outgoing webhook (INSIGHTS_WEBHOOK_URL): when it was told, tries, the last error, a lease so one server sends.
    `notified_at` DATETIME(6) NULL,
    `notify_attempts` INT NOT NULL DEFAULT 0,
    `notify_last_error` LONGTEXT NULL,
    `notify_lease_until` DATETIME(6) NULL,
    `updated_at` DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),

    PRIMARY KEY (`id`),
    UNIQUE INDEX `insight_alerts_fingerprint_key` (`fingerprint`),
    INDEX `insight_alerts_resolved_at_idx` (`resolved_at`),
    CONSTRAINT `insight_alerts_kind_check` CHECK (`kind` IN
        ('conflict_spike', 'stuck_growth', 'oldest_pending', 'replays_after_expiry', 'new_key_finding')),
    CONSTRAINT `insight_alerts_severity_check` CHECK (`severity` IN ('warning', 'critical')),
    CONSTRAINT `insight_alerts_notify_attempts_check` CHECK (`notify_attempts` >= 0),
    -- An acknowledgement names who and why, or nothing at all.
    CONSTRAINT `insight_alerts_acknowledged_check` CHECK (
        (`acknowledged_at` IS NULL AND `acknowledged_by_label` IS NULL AND `acknowledge_reason` IS NULL)
        OR (`acknowledged_at` IS NOT NULL AND `acknowledged_by_label` IS NOT NULL AND `acknowledge_reason` IS NOT NULL)),
    -- InnoDB indexes a foreign key's columns itself (an index of the constraint's name).
    CONSTRAINT `insight_alerts_acknowledged_by_fkey` FOREIGN KEY (`acknowledged_by`) REFERENCES `console_users` (`id`) ON DELETE SET NULL ON UPDATE NO ACTION
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Key-quality findings as first seen (fingerprint = scope|operation|finding): an alert says a
-- finding is new for INSIGHTS_NEW_FINDING_HOURS after its first sighting.
CREATE TABLE `insight_findings` (
    `fingerprint` VARCHAR(255) NOT NULL,
    `scope` VARCHAR(255) NOT NULL,
    `operation` VARCHAR(255) NOT NULL,
    `finding` LONGTEXT NOT NULL,
    `first_seen_at` DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
    `last_seen_at` DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),

    PRIMARY KEY (`fingerprint`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- When the alert evaluator last ran, per console-wide task (the metrics say how fresh the alerts are).
CREATE TABLE `insight_state` (
    `name` VARCHAR(255) NOT NULL,
    `evaluated_at` DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
    `firing` INT NOT NULL DEFAULT 0,

    PRIMARY KEY (`name`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
