-- The console is a guest at the writers' tables (DESIGN.md): its migrations keep only the
-- constraints that are the protocol itself — the unique key (scope, operation, key) and the
-- status values — and add none that could refuse a row a writer following the protocol may
-- write. The first migration's CHECKs went further and refused real services' writes:
-- response headers stored as a JSON object (PHP's json_encode of an associative array),
-- payload hashes other than lowercase hex SHA-256 (SHA-1, MD5, base64, upper case), keys
-- longer than 255 characters, lower-case currency codes, outbox states of the service's own.
-- The console reads all of these (lib/idempotency/stored-response.ts and the property tests in
-- test/record-shapes.test.ts); it treats any outbox state other than 'sent'/'failed' as not
-- dispatched yet (retention never purges a record with one).
--
-- Locks: DROP CONSTRAINT takes an ACCESS EXCLUSIVE lock on the table for a moment (no
-- rewrite, no scan). The runner applies every migration with lock_timeout and retries, so
-- it never queues behind a writer's long transaction while blocking the writers behind it.

ALTER TABLE "idempotency_records" DROP CONSTRAINT IF EXISTS "idempotency_records_payload_hash_check";
ALTER TABLE "idempotency_records" DROP CONSTRAINT IF EXISTS "idempotency_records_key_length_check";
ALTER TABLE "idempotency_records" DROP CONSTRAINT IF EXISTS "idempotency_records_currency_check";
ALTER TABLE "idempotency_records" DROP CONSTRAINT IF EXISTS "idempotency_records_response_headers_check";
ALTER TABLE "outbox_messages" DROP CONSTRAINT IF EXISTS "outbox_messages_status_check";
