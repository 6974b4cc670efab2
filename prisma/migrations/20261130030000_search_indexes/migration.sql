-- Search, record-detail and duplicate-finder indexes (lib/records).
--
-- Prefix search is `column LIKE $1 || '%'`. A btree index with the default operator
-- class serves LIKE only when the database collation is "C"; production databases
-- often use en_US.UTF-8 or ICU. text_pattern_ops compares byte-wise, so the planner
-- turns a prefix into an index range under any collation — and the same index still
-- serves equality (`=` is in the operator class), so the four single-column lookup
-- indexes are rebuilt with it rather than doubled: writers keep paying for one index
-- per column, and their own equality lookups (webhooks by provider reference …) keep
-- working.
--
-- CREATE INDEX blocks writes to the table while it builds, and the runner applies each
-- migration in one transaction (so CONCURRENTLY is not possible here): on a large live
-- table, apply this migration in a quiet period.

DROP INDEX IF EXISTS "idempotency_records_provider_reference_idx";
CREATE INDEX "idempotency_records_provider_reference_idx"
    ON "idempotency_records"("provider_reference" text_pattern_ops);

DROP INDEX IF EXISTS "idempotency_records_provider_request_id_idx";
CREATE INDEX "idempotency_records_provider_request_id_idx"
    ON "idempotency_records"("provider_request_id" text_pattern_ops);

DROP INDEX IF EXISTS "idempotency_records_correlation_id_idx";
CREATE INDEX "idempotency_records_correlation_id_idx"
    ON "idempotency_records"("correlation_id" text_pattern_ops);

-- Also the duplicate finder's "same amount, currency and resource" variant: resource ids
-- are near-unique, so an equality lookup here plus a filter on amount/currency is enough.
DROP INDEX IF EXISTS "idempotency_records_resource_id_idx";
CREATE INDEX "idempotency_records_resource_id_idx"
    ON "idempotency_records"("resource_id" text_pattern_ops);

-- Search by key alone: the unique index leads with (scope, operation), so it cannot.
CREATE INDEX "idempotency_records_key_pattern_idx"
    ON "idempotency_records"("idempotency_key" text_pattern_ops);

-- Search by scope (exact: already in keyset order, newest first; prefix: a range), and
-- the scope filter of the duplicate finder over a time range.
CREATE INDEX "idempotency_records_scope_created_at_idx"
    ON "idempotency_records"("scope" text_pattern_ops, "created_at", "id");

-- Newest-first listing with keyset pagination, time-range scans (duplicate finder), and
-- the fallback the planner prefers when a prefix matches a large share of the rows.
CREATE INDEX "idempotency_records_created_at_idx"
    ON "idempotency_records"("created_at", "id");
