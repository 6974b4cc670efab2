-- MariaDB's counterpart of PostgreSQL's 20261206100000_unsettled_status_expiry. The Expiry page
-- counts the expired processing and pending records by operation and status, with how many are
-- on legal hold (and, under retention rules, in a scope on hold): it read them from the
-- (status, updated_at) index and looked each up by primary key for expires_at and legal_hold
-- (10M records, 70k unsettled: 712 of the page's 853 ms). PostgreSQL carries those columns in
-- its unsettled index (INCLUDE); InnoDB has no INCLUDE and that index's key is already 3,068 of
-- its 3,072 bytes. This one is a range of (status, expires_at) with the rest in the key:
-- 1,020 + 8 + 1,020 + 1,020 + 1 = 3,069 bytes. Its cost: one more index entry per record, moved
-- when the status changes (measured in docs/scale.md). Online: writers go on while it builds.
ALTER TABLE `idempotency_records`
    ADD INDEX `idempotency_records_status_expires_at_idx` (`status`, `expires_at`, `operation`, `scope`, `legal_hold`),
    ALGORITHM=INPLACE, LOCK=NONE;
