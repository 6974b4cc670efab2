-- The overview and the queue filtered to a scope read its processing and pending records (how
-- many, how many stuck, the oldest, the pending ages) from the unsettled-status index; without
-- the scope in it each of those entries was a heap fetch to read the record's scope (7k at 1M
-- records, one random page each). With the scope as an INCLUDE column they are index-only
-- ranges, filtered on the index entry. Same keys, same partial predicate: every other read of
-- the index is as before, and a writer pays nothing more (the entry was written anyway).
--
-- A replacement of the index under the same name: on a live table the runner builds the new one
-- with CREATE INDEX CONCURRENTLY under a temporary name (writers go on meanwhile) and swaps it in
-- by a rename in a short transaction with a bounded lock wait (lib/db/online-ddl.ts); the old
-- one serves the reads until then.
DROP INDEX IF EXISTS "idempotency_records_unsettled_status_idx";
CREATE INDEX "idempotency_records_unsettled_status_idx"
    ON "idempotency_records" ("status", "operation", "updated_at") INCLUDE ("scope") WHERE "status" <> 'completed';
