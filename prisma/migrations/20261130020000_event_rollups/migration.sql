-- Per-minute rollups of idempotency_events by operation, scope and kind, kept
-- incrementally from an id watermark (lib/stats/rollups.ts), so the overview
-- never scans the events table.

CREATE TABLE "event_rollups" (
    "bucket" TIMESTAMPTZ(6) NOT NULL,
    "operation" TEXT NOT NULL,
    "scope" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "count" BIGINT NOT NULL,

    CONSTRAINT "event_rollups_pkey" PRIMARY KEY ("bucket", "operation", "scope", "kind"),
    CONSTRAINT "event_rollups_count_check" CHECK ("count" >= 0)
);
CREATE INDEX "event_rollups_operation_bucket_idx" ON "event_rollups"("operation", "bucket");
CREATE INDEX "event_rollups_scope_bucket_idx" ON "event_rollups"("scope", "bucket");

-- All events with id <= watermark are counted, except the ids in rollup_gaps.
CREATE TABLE "rollup_state" (
    "name" TEXT NOT NULL,
    "watermark" BIGINT NOT NULL DEFAULT 0,
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "rollup_state_pkey" PRIMARY KEY ("name")
);

-- Ids below the watermark not yet visible when it moved (a writer's transaction
-- still open, or rolled back). Counted when they appear; dropped after a grace period.
CREATE TABLE "rollup_gaps" (
    "event_id" BIGINT NOT NULL,
    "seen_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "rollup_gaps_pkey" PRIMARY KEY ("event_id")
);
