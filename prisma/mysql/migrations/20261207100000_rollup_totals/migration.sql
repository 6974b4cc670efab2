-- PostgreSQL's migration of the same name (ADR 0019): the rollups over every scope, per grain
-- (minute, 15 minutes, hour, day), bucket, operation and kind — the sum of event_rollups /
-- event_rollup_tiers over their scopes. A read with no scope filter (the overview's series,
-- countEvents, the metrics' totals) reads these rows, not one per scope. The key leads with what
-- the series groups by: grouped in key order, no temporary table.
CREATE TABLE `event_rollup_totals` (
    `grain_seconds` INT NOT NULL,
    `bucket` DATETIME(6) NOT NULL,
    `operation` VARCHAR(255) NOT NULL,
    `kind` VARCHAR(255) NOT NULL,
    `count` BIGINT NOT NULL,

    PRIMARY KEY (`grain_seconds`, `bucket`, `operation`, `kind`),
    CONSTRAINT `event_rollup_totals_count_check` CHECK (`count` >= 0),
    CONSTRAINT `event_rollup_totals_grain_check` CHECK (`grain_seconds` IN (60, 900, 3600, 86400)),
    CONSTRAINT `event_rollup_totals_bucket_check`
        CHECK (MICROSECOND(`bucket`) = 0 AND MOD(TIMESTAMPDIFF(SECOND, TIMESTAMP '1970-01-01 00:00:00', `bucket`), `grain_seconds`) = 0)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Every writer of the rollups now keeps the totals too: a console still on the previous version
-- (flag 'failed') would roll events up without them, so its refresh and purge are refused (counts
-- stay exact meanwhile: the events not rolled up are counted raw). Each guard again, wanting the
-- new flag, and the new table's.
DROP TRIGGER IF EXISTS `event_rollups_writer_guard_insert`;
CREATE TRIGGER `event_rollups_writer_guard_insert` BEFORE INSERT ON `event_rollups` FOR EACH ROW
BEGIN
    IF @idempotency_console_rollup_writer IS NULL OR @idempotency_console_rollup_writer <> 'totals' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'event_rollups is written only by the console''s rollup writers (lib/stats): upgrade the console';
    END IF;
END;
DROP TRIGGER IF EXISTS `event_rollups_writer_guard_update`;
CREATE TRIGGER `event_rollups_writer_guard_update` BEFORE UPDATE ON `event_rollups` FOR EACH ROW
BEGIN
    IF @idempotency_console_rollup_writer IS NULL OR @idempotency_console_rollup_writer <> 'totals' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'event_rollups is written only by the console''s rollup writers (lib/stats): upgrade the console';
    END IF;
END;
DROP TRIGGER IF EXISTS `event_rollups_writer_guard_delete`;
CREATE TRIGGER `event_rollups_writer_guard_delete` BEFORE DELETE ON `event_rollups` FOR EACH ROW
BEGIN
    IF @idempotency_console_rollup_writer IS NULL OR @idempotency_console_rollup_writer <> 'totals' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'event_rollups is written only by the console''s rollup writers (lib/stats): upgrade the console';
    END IF;
END;
DROP TRIGGER IF EXISTS `event_rollup_tiers_writer_guard_insert`;
CREATE TRIGGER `event_rollup_tiers_writer_guard_insert` BEFORE INSERT ON `event_rollup_tiers` FOR EACH ROW
BEGIN
    IF @idempotency_console_rollup_writer IS NULL OR @idempotency_console_rollup_writer <> 'totals' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'event_rollup_tiers is written only by the console''s rollup writers (lib/stats): upgrade the console';
    END IF;
END;
DROP TRIGGER IF EXISTS `event_rollup_tiers_writer_guard_update`;
CREATE TRIGGER `event_rollup_tiers_writer_guard_update` BEFORE UPDATE ON `event_rollup_tiers` FOR EACH ROW
BEGIN
    IF @idempotency_console_rollup_writer IS NULL OR @idempotency_console_rollup_writer <> 'totals' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'event_rollup_tiers is written only by the console''s rollup writers (lib/stats): upgrade the console';
    END IF;
END;
DROP TRIGGER IF EXISTS `event_rollup_tiers_writer_guard_delete`;
CREATE TRIGGER `event_rollup_tiers_writer_guard_delete` BEFORE DELETE ON `event_rollup_tiers` FOR EACH ROW
BEGIN
    IF @idempotency_console_rollup_writer IS NULL OR @idempotency_console_rollup_writer <> 'totals' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'event_rollup_tiers is written only by the console''s rollup writers (lib/stats): upgrade the console';
    END IF;
END;
DROP TRIGGER IF EXISTS `event_rollup_totals_writer_guard_insert`;
CREATE TRIGGER `event_rollup_totals_writer_guard_insert` BEFORE INSERT ON `event_rollup_totals` FOR EACH ROW
BEGIN
    IF @idempotency_console_rollup_writer IS NULL OR @idempotency_console_rollup_writer <> 'totals' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'event_rollup_totals is written only by the console''s rollup writers (lib/stats): upgrade the console';
    END IF;
END;
DROP TRIGGER IF EXISTS `event_rollup_totals_writer_guard_update`;
CREATE TRIGGER `event_rollup_totals_writer_guard_update` BEFORE UPDATE ON `event_rollup_totals` FOR EACH ROW
BEGIN
    IF @idempotency_console_rollup_writer IS NULL OR @idempotency_console_rollup_writer <> 'totals' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'event_rollup_totals is written only by the console''s rollup writers (lib/stats): upgrade the console';
    END IF;
END;
DROP TRIGGER IF EXISTS `event_rollup_totals_writer_guard_delete`;
CREATE TRIGGER `event_rollup_totals_writer_guard_delete` BEFORE DELETE ON `event_rollup_totals` FOR EACH ROW
BEGIN
    IF @idempotency_console_rollup_writer IS NULL OR @idempotency_console_rollup_writer <> 'totals' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'event_rollup_totals is written only by the console''s rollup writers (lib/stats): upgrade the console';
    END IF;
END;
DROP TRIGGER IF EXISTS `record_census_writer_guard_insert`;
CREATE TRIGGER `record_census_writer_guard_insert` BEFORE INSERT ON `record_census` FOR EACH ROW
BEGIN
    IF @idempotency_console_rollup_writer IS NULL OR @idempotency_console_rollup_writer <> 'totals' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'record_census is written only by the console''s rollup writers (lib/stats): upgrade the console';
    END IF;
END;
DROP TRIGGER IF EXISTS `record_census_writer_guard_update`;
CREATE TRIGGER `record_census_writer_guard_update` BEFORE UPDATE ON `record_census` FOR EACH ROW
BEGIN
    IF @idempotency_console_rollup_writer IS NULL OR @idempotency_console_rollup_writer <> 'totals' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'record_census is written only by the console''s rollup writers (lib/stats): upgrade the console';
    END IF;
END;
DROP TRIGGER IF EXISTS `record_census_writer_guard_delete`;
CREATE TRIGGER `record_census_writer_guard_delete` BEFORE DELETE ON `record_census` FOR EACH ROW
BEGIN
    IF @idempotency_console_rollup_writer IS NULL OR @idempotency_console_rollup_writer <> 'totals' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'record_census is written only by the console''s rollup writers (lib/stats): upgrade the console';
    END IF;
END;
DROP TRIGGER IF EXISTS `record_census_members_writer_guard_insert`;
CREATE TRIGGER `record_census_members_writer_guard_insert` BEFORE INSERT ON `record_census_members` FOR EACH ROW
BEGIN
    IF @idempotency_console_rollup_writer IS NULL OR @idempotency_console_rollup_writer <> 'totals' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'record_census_members is written only by the console''s rollup writers (lib/stats): upgrade the console';
    END IF;
END;
DROP TRIGGER IF EXISTS `record_census_members_writer_guard_update`;
CREATE TRIGGER `record_census_members_writer_guard_update` BEFORE UPDATE ON `record_census_members` FOR EACH ROW
BEGIN
    IF @idempotency_console_rollup_writer IS NULL OR @idempotency_console_rollup_writer <> 'totals' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'record_census_members is written only by the console''s rollup writers (lib/stats): upgrade the console';
    END IF;
END;
DROP TRIGGER IF EXISTS `record_census_members_writer_guard_delete`;
CREATE TRIGGER `record_census_members_writer_guard_delete` BEFORE DELETE ON `record_census_members` FOR EACH ROW
BEGIN
    IF @idempotency_console_rollup_writer IS NULL OR @idempotency_console_rollup_writer <> 'totals' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'record_census_members is written only by the console''s rollup writers (lib/stats): upgrade the console';
    END IF;
END;

-- Backfill as the writer, under the rollup writers' lock (a row of console_locks each takes first in
-- its transaction): a refresh of the previous version that passed its guards before they changed
-- commits first, and is summed.
START TRANSACTION;
SELECT `name` FROM `console_locks` WHERE `name` = 'rollups' FOR UPDATE;
SET @idempotency_console_rollup_writer = 'totals';
INSERT INTO `event_rollup_totals` (`grain_seconds`, `bucket`, `operation`, `kind`, `count`)
SELECT 60, `bucket`, `operation`, `kind`, SUM(`count`) FROM `event_rollups` GROUP BY `bucket`, `operation`, `kind`;
INSERT INTO `event_rollup_totals` (`grain_seconds`, `bucket`, `operation`, `kind`, `count`)
SELECT `grain_seconds`, `bucket`, `operation`, `kind`, SUM(`count`) FROM `event_rollup_tiers` GROUP BY `grain_seconds`, `bucket`, `operation`, `kind`;
SET @idempotency_console_rollup_writer = NULL;
COMMIT;
