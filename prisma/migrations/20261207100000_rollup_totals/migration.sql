-- The rollups over every scope (ADR 0019): per grain (minute, 15 minutes, hour, day), bucket,
-- operation and kind, the sum of event_rollups / event_rollup_tiers over their scopes. A read with
-- no scope filter — the overview's series, countEvents, the metrics' all-time totals — reads these
-- rows instead of one per scope: the rows it reads no longer grow with the number of scopes (a
-- tenant, a merchant, a customer per scope: up to one row per event in each bucket). Kept by
-- refreshRollups in the same statement as the other tiers, from the same watermark.
--
-- Locks: console tables only (the rollups are read under the refresher's lock while the backfill
-- runs); no lock on the services' tables.

CREATE TABLE "event_rollup_totals" (
    "grain_seconds" INTEGER NOT NULL,
    "bucket" TIMESTAMPTZ(6) NOT NULL,
    "operation" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "count" BIGINT NOT NULL,

    CONSTRAINT "event_rollup_totals_pkey" PRIMARY KEY ("grain_seconds", "bucket", "operation", "kind"),
    CONSTRAINT "event_rollup_totals_count_check" CHECK ("count" >= 0),
    CONSTRAINT "event_rollup_totals_grain_check" CHECK ("grain_seconds" IN (60, 900, 3600, 86400)),
    CONSTRAINT "event_rollup_totals_bucket_check"
        CHECK ("bucket" = date_bin(make_interval(secs => "grain_seconds"), "bucket", TIMESTAMPTZ '1970-01-01 00:00:00+00'))
);

-- Backfill under refreshRollups' lock (a refresh in flight finishes first; none starts until this
-- commits), as the rollups' writer.
SELECT pg_advisory_xact_lock(72707371);
SELECT set_config('idempotency_console.rollup_writer', 'totals', true);
INSERT INTO "event_rollup_totals" ("grain_seconds", "bucket", "operation", "kind", "count")
SELECT 60, "bucket", "operation", "kind", sum("count") FROM "event_rollups" GROUP BY 2, 3, 4;
INSERT INTO "event_rollup_totals" ("grain_seconds", "bucket", "operation", "kind", "count")
SELECT "grain_seconds", "bucket", "operation", "kind", sum("count") FROM "event_rollup_tiers" GROUP BY 1, 2, 3, 4;

-- Every writer of the rollups now keeps the totals too: a console still on the previous version
-- (flag 'failed') would roll events up without them, so its refresh and purge are refused (counts
-- stay exact meanwhile: the events not rolled up are counted raw).
CREATE OR REPLACE FUNCTION "event_rollups_writer_guard"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('idempotency_console.rollup_writer', true) IS DISTINCT FROM 'totals' THEN
    RAISE EXCEPTION '% is written only by refreshRollups/rebuildRollups/verifyRecordCensus (lib/stats/rollups.ts) and the retention purge, which keep the rollups and the record census in step; upgrade the console or call rebuildRollups', TG_TABLE_NAME;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER "event_rollup_totals_writer_guard" BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON "event_rollup_totals"
    FOR EACH STATEMENT EXECUTE FUNCTION "event_rollups_writer_guard"();
