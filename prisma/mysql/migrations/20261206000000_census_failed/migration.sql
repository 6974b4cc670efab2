-- PostgreSQL's 20261206000000_census_failed (ADR 0016, lib/stats/census.ts): each member says
-- whether its record is failed, and record_census counts them per operation and expiry hour beside
-- all records, so the overview's failed count reads the census and the correction for records
-- touched since the last refresh instead of every failed record's index entry.
ALTER TABLE `record_census`
    ADD COLUMN `failed` BIGINT NOT NULL DEFAULT 0,
    ADD CONSTRAINT `record_census_failed_check` CHECK (`failed` >= 0);
ALTER TABLE `record_census_members` ADD COLUMN `failed` BOOLEAN NOT NULL DEFAULT FALSE;

-- The writers of the rollups and the census now keep `failed` too: a console still on the
-- previous version (flag 'members') would count records without it, so its refresh and purge
-- are refused (counts stay exact meanwhile: they are read with the correction for records not
-- refreshed yet). Each guard again, wanting the new flag.

DROP TRIGGER IF EXISTS `event_rollups_writer_guard_insert`;
CREATE TRIGGER `event_rollups_writer_guard_insert` BEFORE INSERT ON `event_rollups` FOR EACH ROW
BEGIN
    IF @idempotency_console_rollup_writer IS NULL OR @idempotency_console_rollup_writer <> 'failed' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'event_rollups is written only by the console''s rollup writers (lib/stats): upgrade the console';
    END IF;
END;
DROP TRIGGER IF EXISTS `event_rollups_writer_guard_update`;
CREATE TRIGGER `event_rollups_writer_guard_update` BEFORE UPDATE ON `event_rollups` FOR EACH ROW
BEGIN
    IF @idempotency_console_rollup_writer IS NULL OR @idempotency_console_rollup_writer <> 'failed' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'event_rollups is written only by the console''s rollup writers (lib/stats): upgrade the console';
    END IF;
END;
DROP TRIGGER IF EXISTS `event_rollups_writer_guard_delete`;
CREATE TRIGGER `event_rollups_writer_guard_delete` BEFORE DELETE ON `event_rollups` FOR EACH ROW
BEGIN
    IF @idempotency_console_rollup_writer IS NULL OR @idempotency_console_rollup_writer <> 'failed' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'event_rollups is written only by the console''s rollup writers (lib/stats): upgrade the console';
    END IF;
END;
DROP TRIGGER IF EXISTS `event_rollup_tiers_writer_guard_insert`;
CREATE TRIGGER `event_rollup_tiers_writer_guard_insert` BEFORE INSERT ON `event_rollup_tiers` FOR EACH ROW
BEGIN
    IF @idempotency_console_rollup_writer IS NULL OR @idempotency_console_rollup_writer <> 'failed' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'event_rollup_tiers is written only by the console''s rollup writers (lib/stats): upgrade the console';
    END IF;
END;
DROP TRIGGER IF EXISTS `event_rollup_tiers_writer_guard_update`;
CREATE TRIGGER `event_rollup_tiers_writer_guard_update` BEFORE UPDATE ON `event_rollup_tiers` FOR EACH ROW
BEGIN
    IF @idempotency_console_rollup_writer IS NULL OR @idempotency_console_rollup_writer <> 'failed' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'event_rollup_tiers is written only by the console''s rollup writers (lib/stats): upgrade the console';
    END IF;
END;
DROP TRIGGER IF EXISTS `event_rollup_tiers_writer_guard_delete`;
CREATE TRIGGER `event_rollup_tiers_writer_guard_delete` BEFORE DELETE ON `event_rollup_tiers` FOR EACH ROW
BEGIN
    IF @idempotency_console_rollup_writer IS NULL OR @idempotency_console_rollup_writer <> 'failed' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'event_rollup_tiers is written only by the console''s rollup writers (lib/stats): upgrade the console';
    END IF;
END;
DROP TRIGGER IF EXISTS `record_census_writer_guard_insert`;
CREATE TRIGGER `record_census_writer_guard_insert` BEFORE INSERT ON `record_census` FOR EACH ROW
BEGIN
    IF @idempotency_console_rollup_writer IS NULL OR @idempotency_console_rollup_writer <> 'failed' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'record_census is written only by the console''s rollup writers (lib/stats): upgrade the console';
    END IF;
END;
DROP TRIGGER IF EXISTS `record_census_writer_guard_update`;
CREATE TRIGGER `record_census_writer_guard_update` BEFORE UPDATE ON `record_census` FOR EACH ROW
BEGIN
    IF @idempotency_console_rollup_writer IS NULL OR @idempotency_console_rollup_writer <> 'failed' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'record_census is written only by the console''s rollup writers (lib/stats): upgrade the console';
    END IF;
END;
DROP TRIGGER IF EXISTS `record_census_writer_guard_delete`;
CREATE TRIGGER `record_census_writer_guard_delete` BEFORE DELETE ON `record_census` FOR EACH ROW
BEGIN
    IF @idempotency_console_rollup_writer IS NULL OR @idempotency_console_rollup_writer <> 'failed' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'record_census is written only by the console''s rollup writers (lib/stats): upgrade the console';
    END IF;
END;
DROP TRIGGER IF EXISTS `record_census_members_writer_guard_insert`;
CREATE TRIGGER `record_census_members_writer_guard_insert` BEFORE INSERT ON `record_census_members` FOR EACH ROW
BEGIN
    IF @idempotency_console_rollup_writer IS NULL OR @idempotency_console_rollup_writer <> 'failed' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'record_census_members is written only by the console''s rollup writers (lib/stats): upgrade the console';
    END IF;
END;
DROP TRIGGER IF EXISTS `record_census_members_writer_guard_update`;
CREATE TRIGGER `record_census_members_writer_guard_update` BEFORE UPDATE ON `record_census_members` FOR EACH ROW
BEGIN
    IF @idempotency_console_rollup_writer IS NULL OR @idempotency_console_rollup_writer <> 'failed' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'record_census_members is written only by the console''s rollup writers (lib/stats): upgrade the console';
    END IF;
END;
DROP TRIGGER IF EXISTS `record_census_members_writer_guard_delete`;
CREATE TRIGGER `record_census_members_writer_guard_delete` BEFORE DELETE ON `record_census_members` FOR EACH ROW
BEGIN
    IF @idempotency_console_rollup_writer IS NULL OR @idempotency_console_rollup_writer <> 'failed' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'record_census_members is written only by the console''s rollup writers (lib/stats): upgrade the console';
    END IF;
END;

-- Backfill as the writer: each member failed as its record is now (a record touched since the
-- last refresh is read with the correction either way), each hour's failed count its members'.
-- The failed records' ids are copied first: the runner's session is READ COMMITTED, where
-- INSERT … SELECT reads idempotency_records without locking the services' rows (an UPDATE joined
-- to it could lock the rows it reads).
CREATE TEMPORARY TABLE `census_failed_backfill` (`id` BIGINT NOT NULL PRIMARY KEY);
INSERT INTO `census_failed_backfill` (`id`) SELECT `id` FROM `idempotency_records` WHERE `status` = 'failed';
SET @idempotency_console_rollup_writer = 'failed';
UPDATE `record_census_members` m JOIN `census_failed_backfill` f ON f.`id` = m.`record_id` SET m.`failed` = TRUE;
UPDATE `record_census` c
  JOIN (SELECT `operation`, `expires_hour`, COUNT(*) AS `n` FROM `record_census_members` WHERE `failed` GROUP BY `operation`, `expires_hour`) f
    ON c.`operation` = f.`operation` AND c.`expires_hour` = f.`expires_hour`
   SET c.`failed` = f.`n`;
SET @idempotency_console_rollup_writer = NULL;
DROP TEMPORARY TABLE `census_failed_backfill`;
