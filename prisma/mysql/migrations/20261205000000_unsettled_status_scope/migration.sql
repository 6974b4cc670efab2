-- PostgreSQL's 20261205000000_unsettled_status_scope: the overview and the queue filtered to a
-- scope read its processing and pending records (counts, stuck, oldest, pending ages) from this
-- index alone, the scope compared on the entry, instead of a primary-key lookup per entry (disk
-- reads when the buffer pool is smaller than the table). InnoDB has no INCLUDE: the scope is the
-- last key column. One ALTER drops and adds it: online, writers go on while it builds.
ALTER TABLE `idempotency_records`
    DROP INDEX `idempotency_records_unsettled_status_idx`,
    ADD INDEX `idempotency_records_unsettled_status_idx` (`status`, `operation`, `updated_at`, `scope`),
    ALGORITHM=INPLACE, LOCK=NONE;
