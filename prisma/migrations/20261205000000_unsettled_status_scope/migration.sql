-- The overview filtered to a scope reads its processing and pending records (how many, how many
-- stuck, the oldest, the pending ages) from the unsettled-status index; without the scope in it
-- each of those entries was a heap fetch to read the record's scope (7k at 1M records, one
-- random page each). The queue's count of records with an open reconciliation item that are
-- neither processing nor pending needs the processing and pending records' ids; without them
-- it probed a record per open item (25k at 5M records: 171 ms; with the ids, 13 ms). With scope
-- and id as INCLUDE columns both are index-only. Same keys, same partial predicate: every other
-- read of the index is as before, and a writer pays nothing more (the entry was written anyway;
-- neither column changes).
--
-- A replacement of the index under the same name: on a live table the runner builds the new one
-- with CREATE INDEX CONCURRENTLY under a temporary name (writers go on meanwhile) and swaps it in
-- by a rename in a short transaction with a bounded lock wait (lib/db/online-ddl.ts); the old
-- one serves the reads until then.
DROP INDEX IF EXISTS "idempotency_records_unsettled_status_idx";
CREATE INDEX "idempotency_records_unsettled_status_idx"
    ON "idempotency_records" ("status", "operation", "updated_at") INCLUDE ("scope", "id") WHERE "status" <> 'completed';
