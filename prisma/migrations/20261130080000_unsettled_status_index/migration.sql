-- The overview's and the queue's small populations — processing, pending and failed records
-- (a few per cent of the table) — by status, operation and age, read from the index alone:
-- per-operation stuck counts (thresholds differ per operation), the three small statuses
-- with an operation filter, pending ages. Without it each of those rows is a heap fetch
-- (at 10M records: 3.6 s for one operation's failed count, see docs/scale.md).
-- Partial: completed records (the bulk) are not in it, so a writer pays one index entry
-- per reservation and per move to failed/pending, nothing for completions.
--
-- On a large live table create it first, without blocking the services' writes:
--   CREATE INDEX CONCURRENTLY IF NOT EXISTS "idempotency_records_unsettled_status_idx"
--       ON "idempotency_records" ("status", "operation", "updated_at") WHERE "status" <> 'completed';
-- then this migration finds it and does nothing.
CREATE INDEX IF NOT EXISTS "idempotency_records_unsettled_status_idx"
    ON "idempotency_records" ("status", "operation", "updated_at") WHERE "status" <> 'completed';
