-- Console-owned tables: users and roles, API tokens, the audit trail, sign-in throttling.

CREATE TABLE "console_users" (
    "id" BIGSERIAL NOT NULL,
    "email" TEXT NOT NULL,
    "name" TEXT,
    -- scrypt$N$r$p$salt$hash (lib/auth/password.ts); NULL for single-sign-on-only users.
    "password_hash" TEXT,
    "roles" TEXT[] NOT NULL DEFAULT ARRAY[]::TEXT[],
    "sso_subject" TEXT,
    "disabled_at" TIMESTAMPTZ(6),
    "last_sign_in_at" TIMESTAMPTZ(6),
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "console_users_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "console_users_email_check" CHECK ("email" = lower("email") AND length("email") BETWEEN 3 AND 254),
    CONSTRAINT "console_users_roles_check"
        CHECK ("roles" <@ ARRAY['viewer', 'support', 'operator', 'approver', 'admin']::TEXT[])
);
CREATE UNIQUE INDEX "console_users_email_key" ON "console_users"("email");
CREATE UNIQUE INDEX "console_users_sso_subject_key" ON "console_users"("sso_subject");

CREATE TABLE "api_tokens" (
    "id" BIGSERIAL NOT NULL,
    "user_id" BIGINT NOT NULL,
    "name" TEXT NOT NULL,
    -- The public part of the token ("ic_<prefix>_<secret>"): finds the row without a scan.
    "token_prefix" TEXT NOT NULL,
    -- SHA-256 of the secret part: tokens are 256-bit random, so a fast hash is enough.
    "token_hash" TEXT NOT NULL,
    "scopes" TEXT[] NOT NULL,
    "expires_at" TIMESTAMPTZ(6),
    "revoked_at" TIMESTAMPTZ(6),
    "last_used_at" TIMESTAMPTZ(6),
    "created_by_id" BIGINT,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "api_tokens_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "api_tokens_token_prefix_key" ON "api_tokens"("token_prefix");
CREATE INDEX "api_tokens_user_id_idx" ON "api_tokens"("user_id");
ALTER TABLE "api_tokens" ADD CONSTRAINT "api_tokens_user_id_fkey"
    FOREIGN KEY ("user_id") REFERENCES "console_users"("id") ON DELETE CASCADE ON UPDATE NO ACTION;
ALTER TABLE "api_tokens" ADD CONSTRAINT "api_tokens_created_by_id_fkey"
    FOREIGN KEY ("created_by_id") REFERENCES "console_users"("id") ON DELETE SET NULL ON UPDATE NO ACTION;

CREATE TABLE "audit_log" (
    "id" BIGSERIAL NOT NULL,
    "occurred_at" TIMESTAMPTZ(6) NOT NULL,
    -- user | token | system | anonymous
    "actor_type" TEXT NOT NULL,
    "actor_id" TEXT,
    "actor_label" TEXT,
    "token_id" BIGINT,
    "action" TEXT NOT NULL,
    "target_table" TEXT,
    "target_id" TEXT,
    "before" JSONB,
    "after" JSONB,
    "reason" TEXT,
    "request_id" TEXT,
    "ip" TEXT,
    "user_agent" TEXT,
    -- done | refused | failed
    "outcome" TEXT NOT NULL,
    "detail" JSONB,
    -- Hash chain: hash = SHA-256(prev_hash || canonical entry), see lib/audit.
    "prev_hash" TEXT NOT NULL,
    "hash" TEXT NOT NULL,

    CONSTRAINT "audit_log_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "audit_log_actor_type_check" CHECK ("actor_type" IN ('user', 'token', 'system', 'anonymous')),
    CONSTRAINT "audit_log_outcome_check" CHECK ("outcome" IN ('done', 'refused', 'failed'))
);
CREATE UNIQUE INDEX "audit_log_hash_key" ON "audit_log"("hash");
CREATE INDEX "audit_log_occurred_at_idx" ON "audit_log"("occurred_at");
CREATE INDEX "audit_log_actor_id_occurred_at_idx" ON "audit_log"("actor_id", "occurred_at");
CREATE INDEX "audit_log_action_occurred_at_idx" ON "audit_log"("action", "occurred_at");
CREATE INDEX "audit_log_target_idx" ON "audit_log"("target_table", "target_id");

-- Append-only, enforced by the database for every role and client, not only the console.
CREATE FUNCTION "audit_log_append_only"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_log is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END;
$$;
CREATE TRIGGER "audit_log_no_update_delete" BEFORE UPDATE OR DELETE ON "audit_log"
    FOR EACH ROW EXECUTE FUNCTION "audit_log_append_only"();
CREATE TRIGGER "audit_log_no_truncate" BEFORE TRUNCATE ON "audit_log"
    FOR EACH STATEMENT EXECUTE FUNCTION "audit_log_append_only"();

CREATE TABLE "sign_in_attempts" (
    "id" BIGSERIAL NOT NULL,
    "email" TEXT NOT NULL,
    "ip" TEXT NOT NULL,
    "succeeded" BOOLEAN NOT NULL,
    "attempted_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "sign_in_attempts_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "sign_in_attempts_email_attempted_at_idx" ON "sign_in_attempts"("email", "attempted_at");
CREATE INDEX "sign_in_attempts_ip_attempted_at_idx" ON "sign_in_attempts"("ip", "attempted_at");
