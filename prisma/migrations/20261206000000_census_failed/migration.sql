-- The census counts failed records too (ADR 0016, lib/stats/census.ts): each member says whether
-- its record is failed, and record_census counts them per operation and expiry hour beside all
-- records. The overview's failed count then reads the census (a few thousand rows) and the
-- correction for records touched since the last refresh, where it read every failed record's
-- index entry (690k at 10M records: half of the overview).
--
-- Locks: console tables only; reads idempotency_records once (no lock on the services'
-- writes). At 10M records the backfill updates one member per failed record.

ALTER TABLE "record_census" ADD COLUMN "failed" BIGINT NOT NULL DEFAULT 0;
ALTER TABLE "record_census" ADD CONSTRAINT "record_census_failed_check" CHECK ("failed" >= 0);
ALTER TABLE "record_census_members" ADD COLUMN "failed" BOOLEAN NOT NULL DEFAULT false;

-- Where the census's "recently failed" records begin (lib/stats/census-store.postgres.ts
-- RECENTLY_FAILED_SQL): the last refresh's time less the grace for a late commit. A function, not
-- a scalar subquery in the statement: the planner evaluates a STABLE function's value when it
-- estimates a condition (a subquery's value it cannot know), so `updated_at > census_failed_since(…)`
-- is planned as the few rows it is — a range of (status, updated_at) — and not as a third of the
-- failed records, for which it read every failed entry of the unsettled-status index (10M records:
-- 0.8 ms against 137).
CREATE FUNCTION "census_failed_since"("grace_seconds" integer) RETURNS timestamptz LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN COALESCE((SELECT max(s."updated_at") FROM "rollup_state" s WHERE s."name" = 'events'), '-infinity') - make_interval(secs => "grace_seconds");
END $$;

-- Backfill under the refresher's lock, as its writer: each member failed as its record is now
-- (a record touched since the last refresh is read with the correction either way: +1 where it
-- is now, −1 where its member is), and each hour's failed count its members'.
SELECT pg_advisory_xact_lock(72707371);
SELECT set_config('idempotency_console.rollup_writer', 'members', true);
UPDATE "record_census_members" m SET "failed" = true
  FROM "idempotency_records" r WHERE r."id" = m."record_id" AND r."status" = 'failed';
UPDATE "record_census" c SET "failed" = f."n"
  FROM (SELECT "operation", "expires_hour", count(*) AS "n" FROM "record_census_members" WHERE "failed" GROUP BY 1, 2) f
 WHERE c."operation" = f."operation" AND c."expires_hour" = f."expires_hour";

-- The writers of the rollups and the census now keep `failed` too: a console still on the
-- previous version (flag 'members') would count records without it, so its refresh and purge
-- are refused (counts stay exact meanwhile: they are read with the correction for records not
-- refreshed yet).
CREATE OR REPLACE FUNCTION "event_rollups_writer_guard"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('idempotency_console.rollup_writer', true) IS DISTINCT FROM 'failed' THEN
    RAISE EXCEPTION '% is written only by refreshRollups/rebuildRollups/verifyRecordCensus (lib/stats/rollups.ts) and the retention purge, which keep the rollups and the record census in step; upgrade the console or call rebuildRollups', TG_TABLE_NAME;
  END IF;
  RETURN NULL;
END $$;
