-- The Expiry page counts the expired processing and pending records by operation and status,
-- with how many are on legal hold and past their policy's window, and the earliest expiry
-- (lib/stats/expiry.ts, ADR 0017). They come from this index's ranges, but expires_at and
-- legal_hold were not in it: a heap fetch per record (10M records, 70k unsettled: 446 ms of the
-- page's 756). With both as INCLUDE columns the read is index-only. Processing and pending
-- records that have expired are the stuck and abandoned ones, not updated for hours: their
-- pages are the ones VACUUM marks all-visible. Same keys, same partial predicate: every other
-- read of the index is as before; a writer pays 9 bytes more per entry of a record that is not
-- completed, and an UPDATE of expires_at or legal_hold on such a record writes its entry anew
-- (an UPDATE of its status already does). MariaDB has no counterpart: its key there (three
-- VARCHAR(255) utf8mb4 columns and updated_at) takes 3,068 of InnoDB's 3,072 bytes, so its
-- Expiry page looks each such record up by primary key.
--
-- A replacement under the same name, as 20261205000000_unsettled_status_scope: built with
-- CREATE INDEX CONCURRENTLY under a temporary name and renamed in (lib/db/online-ddl.ts).
DROP INDEX IF EXISTS "idempotency_records_unsettled_status_idx";
CREATE INDEX "idempotency_records_unsettled_status_idx"
    ON "idempotency_records" ("status", "operation", "updated_at") INCLUDE ("scope", "id", "expires_at", "legal_hold") WHERE "status" <> 'completed';
