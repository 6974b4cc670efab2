-- The overview filtered to one scope counts that scope's records (all, by unsettled status,
-- expired, the 7-day forecast) by operation. Without this index each of them is a heap fetch —
-- a tenant's rows are spread over the table, one page each (10,000 records: 52 ms at 1M; a
-- 1.7M-record scope: 7–9 s at 10M, docs/scale.md); with it the count is an index-only scan of
-- the scope's entries. A writer pays one more index entry per reservation and per status change.
--
-- On a large live table the runner builds it with CREATE INDEX CONCURRENTLY before the
-- migration's transaction (lib/db/online-ddl.ts); to build it yourself first, without blocking
-- the services' writes:
--   CREATE INDEX CONCURRENTLY IF NOT EXISTS "idempotency_records_scope_counts_idx"
--       ON "idempotency_records" ("scope", "operation", "expires_at", "status");
CREATE INDEX IF NOT EXISTS "idempotency_records_scope_counts_idx"
    ON "idempotency_records" ("scope", "operation", "expires_at", "status");
