-- Coarser rollup tiers (15 minutes, hour, day) next to the per-minute event_rollups,
-- so the overview reads a few hundred buckets whatever the range (lib/stats/rollups.ts).
-- They are maintained by refreshRollups in the same statement as the minute tier, from
-- the same watermark: every tier always holds exactly the minute tier re-binned.

CREATE TABLE "event_rollup_tiers" (
    "grain_seconds" INTEGER NOT NULL,
    "bucket" TIMESTAMPTZ(6) NOT NULL,
    "operation" TEXT NOT NULL,
    "scope" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "count" BIGINT NOT NULL,

    CONSTRAINT "event_rollup_tiers_pkey" PRIMARY KEY ("grain_seconds", "bucket", "operation", "scope", "kind"),
    CONSTRAINT "event_rollup_tiers_count_check" CHECK ("count" >= 0),
    CONSTRAINT "event_rollup_tiers_grain_check" CHECK ("grain_seconds" IN (900, 3600, 86400)),
    -- Buckets are UTC-aligned from the epoch, like the overview's chart buckets (date_bin).
    CONSTRAINT "event_rollup_tiers_bucket_check"
        CHECK ("bucket" = date_bin(make_interval(secs => "grain_seconds"), "bucket", TIMESTAMPTZ '1970-01-01 00:00:00+00'))
);
CREATE INDEX "event_rollup_tiers_grain_seconds_operation_bucket_idx" ON "event_rollup_tiers"("grain_seconds", "operation", "bucket");
CREATE INDEX "event_rollup_tiers_grain_seconds_scope_bucket_idx" ON "event_rollup_tiers"("grain_seconds", "scope", "bucket");

-- Backfill from the minute tier, under refreshRollups' lock (a refresh in flight finishes
-- first; none starts until this commits).
SELECT pg_advisory_xact_lock(72707371);
INSERT INTO "event_rollup_tiers" ("grain_seconds", "bucket", "operation", "scope", "kind", "count")
SELECT g.s, date_bin(make_interval(secs => g.s), r."bucket", TIMESTAMPTZ '1970-01-01 00:00:00+00'), r."operation", r."scope", r."kind", sum(r."count")
  FROM "event_rollups" r CROSS JOIN (VALUES (900), (3600), (86400)) AS g(s)
 GROUP BY 1, 2, 3, 4, 5;

-- The tiers are only right if every write to the rollups updates all of them at once:
-- only refreshRollups/rebuildRollups may write them (they set this flag for their
-- transaction). A console still running the previous version fails its refresh with this
-- message instead of updating the minute tier alone; counts stay exact meanwhile (the
-- events not rolled up are counted raw).
CREATE FUNCTION "event_rollups_writer_guard"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('idempotency_console.rollup_writer', true) IS DISTINCT FROM 'tiers' THEN
    RAISE EXCEPTION '% is written only by refreshRollups/rebuildRollups (lib/stats/rollups.ts), which keep every rollup tier in step; upgrade the console or call rebuildRollups', TG_TABLE_NAME;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER "event_rollups_writer_guard" BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON "event_rollups"
    FOR EACH STATEMENT EXECUTE FUNCTION "event_rollups_writer_guard"();
CREATE TRIGGER "event_rollup_tiers_writer_guard" BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON "event_rollup_tiers"
    FOR EACH STATEMENT EXECUTE FUNCTION "event_rollups_writer_guard"();
