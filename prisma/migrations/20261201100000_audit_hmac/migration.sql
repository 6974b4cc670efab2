-- Issue 11: a keyed audit chain. From now on each entry's hash is an HMAC-SHA256
-- under a key that lives outside the database (AUDIT_HMAC_KEY / AUDIT_HMAC_KEY_FILE);
-- key_id names that key (a fingerprint, never the key). Entries written before this
-- migration keep key_id NULL: they were chained with plain SHA-256 and still verify
-- that way, and the first keyed entry's HMAC covers the last of them (lib/audit).
-- Adding a column is no UPDATE: the append-only triggers are untouched.
ALTER TABLE "audit_log" ADD COLUMN "key_id" TEXT;
ALTER TABLE "audit_log" ADD CONSTRAINT "audit_log_key_id_check" CHECK ("key_id" IS NULL OR "key_id" ~ '^[0-9a-f]{16}$');
