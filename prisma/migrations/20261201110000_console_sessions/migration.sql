-- Issue 11: server-side sessions. The session cookie (a next-auth JWT) carries a
-- random session secret; only its SHA-256 is stored here. A request's session is
-- valid while its row exists, is not revoked and has not expired: signing out
-- revokes it, an admin can revoke all of a user's sessions ("sign out everywhere").
CREATE TABLE "console_sessions" (
    "id" BIGSERIAL NOT NULL,
    "user_id" BIGINT NOT NULL,
    "secret_hash" TEXT NOT NULL,
    -- password | sso
    "method" TEXT NOT NULL,
    "provider" TEXT,
    -- The identity provider's ID token, for RP-initiated logout (id_token_hint); cleared on revocation.
    "id_token" TEXT,
    "ip" TEXT,
    "user_agent" TEXT,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(6) NOT NULL,
    "revoked_at" TIMESTAMPTZ(6),
    "revoked_reason" TEXT,

    CONSTRAINT "console_sessions_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "console_sessions_method_check" CHECK ("method" IN ('password', 'sso')),
    CONSTRAINT "console_sessions_secret_hash_check" CHECK ("secret_hash" ~ '^[0-9a-f]{64}$')
);
CREATE UNIQUE INDEX "console_sessions_secret_hash_key" ON "console_sessions"("secret_hash");
CREATE INDEX "console_sessions_user_id_expires_at_idx" ON "console_sessions"("user_id", "expires_at");
ALTER TABLE "console_sessions" ADD CONSTRAINT "console_sessions_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "console_users"("id") ON DELETE CASCADE ON UPDATE NO ACTION;
