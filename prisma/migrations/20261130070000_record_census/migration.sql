-- The record census (lib/stats/census.ts, ADR 0007): records per operation and expiry
-- hour, kept by the rollup refresher from the event watermark (each record is added when
-- its `reserved` event is rolled up) and by the console's purge (each purged record that
-- was counted is taken out, in the purge's transaction). The overview's record totals,
-- expired-not-purged, expiring and forecast then read this table, the partial hours at
-- the edges of their ranges and the records not counted yet — not every record.

CREATE TABLE "record_census" (
    "operation" TEXT NOT NULL,
    "expires_hour" TIMESTAMPTZ(6) NOT NULL,
    "count" BIGINT NOT NULL,

    CONSTRAINT "record_census_pkey" PRIMARY KEY ("operation", "expires_hour"),
    CONSTRAINT "record_census_count_check" CHECK ("count" >= 0),
    -- Hours are UTC-aligned from the epoch (date_bin), like the rollup buckets.
    CONSTRAINT "record_census_expires_hour_check"
        CHECK ("expires_hour" = date_bin(interval '1 hour', "expires_hour", TIMESTAMPTZ '1970-01-01 00:00:00+00'))
);
CREATE INDEX "record_census_expires_hour_idx" ON "record_census"("expires_hour");

-- Backfill under the refresher's lock: every record except those whose reserved event is
-- not rolled up yet (the next refresh adds those).
SELECT pg_advisory_xact_lock(72707371);
INSERT INTO "record_census" ("operation", "expires_hour", "count")
SELECT r."operation", date_bin(interval '1 hour', r."expires_at", TIMESTAMPTZ '1970-01-01 00:00:00+00'), count(*)
  FROM "idempotency_records" r
 WHERE NOT EXISTS (
   SELECT 1 FROM (
     SELECT e."record_id" FROM "idempotency_events" e
      WHERE e."kind" = 'reserved' AND e."id" > (SELECT COALESCE(max(s."watermark"), 0) FROM "rollup_state" s WHERE s."name" = 'events')
     UNION ALL
     SELECT e."record_id" FROM "rollup_gaps" g JOIN "idempotency_events" e ON e."id" = g."event_id" WHERE e."kind" = 'reserved'
   ) u WHERE u."record_id" = r."id")
 GROUP BY 1, 2;

-- Only this version's writers keep the census in step with the rollups: a console still on
-- the previous version (flag 'tiers') would roll events up without counting their records,
-- so its refresh is refused now (counts stay exact: unrolled events and uncounted records
-- are read raw).
CREATE OR REPLACE FUNCTION "event_rollups_writer_guard"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('idempotency_console.rollup_writer', true) IS DISTINCT FROM 'census' THEN
    RAISE EXCEPTION '% is written only by refreshRollups/rebuildRollups/verifyRecordCensus (lib/stats/rollups.ts) and the retention purge, which keep the rollups and the record census in step; upgrade the console or call rebuildRollups', TG_TABLE_NAME;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER "record_census_writer_guard" BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON "record_census"
    FOR EACH STATEMENT EXECUTE FUNCTION "event_rollups_writer_guard"();
