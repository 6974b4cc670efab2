-- The record census follows writers that depart from the letter of the protocol (ADR 0008,
-- lib/stats/census.ts): each counted record is a member (record id → the operation and
-- expiry hour it is counted under), so a refresh that sees an event of a record whose
-- expires_at moved (sliding expiry) or that is gone (deleted outside the console) moves or
-- takes out exactly that record; new records are counted from the record id high-water
-- mark, with or without a `reserved` event. census_departures keeps what writers were seen
-- doing outside the protocol, for the overview.
--
-- Locks: console tables only; reads idempotency_records once (no lock on the services'
-- writes). At 10M records the backfill writes 10M member rows (about a minute).

CREATE TABLE "record_census_members" (
    "record_id" BIGINT NOT NULL,
    "operation" TEXT NOT NULL,
    "expires_hour" TIMESTAMPTZ(6) NOT NULL,

    CONSTRAINT "record_census_members_pkey" PRIMARY KEY ("record_id")
);

CREATE TABLE "census_departures" (
    "kind" TEXT NOT NULL,
    "records" BIGINT NOT NULL DEFAULT 0,
    "first_seen_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "census_departures_pkey" PRIMARY KEY ("kind")
);

-- Backfill under the refresher's lock, as its writer: every record is a member, counted where
-- it is now, and the record high-water mark is the highest of them.
SELECT pg_advisory_xact_lock(72707371);
SELECT set_config('idempotency_console.rollup_writer', 'census', true);
INSERT INTO "record_census_members" ("record_id", "operation", "expires_hour")
SELECT "id", "operation", date_bin(interval '1 hour', "expires_at", TIMESTAMPTZ '1970-01-01 00:00:00+00') FROM "idempotency_records";
DELETE FROM "record_census";
INSERT INTO "record_census" ("operation", "expires_hour", "count")
SELECT "operation", "expires_hour", count(*) FROM "record_census_members" GROUP BY 1, 2;
INSERT INTO "rollup_state" ("name", "watermark")
SELECT 'records', COALESCE(max("record_id"), 0) FROM "record_census_members"
ON CONFLICT ("name") DO UPDATE SET "watermark" = EXCLUDED."watermark", "updated_at" = now();

-- The writers of the rollups and the census now keep the members too: a console still on the
-- previous version (flag 'census') would count records without their members, so its
-- refresh and purge are refused (counts stay exact meanwhile: they are read with the
-- correction for records not refreshed yet).
CREATE OR REPLACE FUNCTION "event_rollups_writer_guard"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('idempotency_console.rollup_writer', true) IS DISTINCT FROM 'members' THEN
    RAISE EXCEPTION '% is written only by refreshRollups/rebuildRollups/verifyRecordCensus (lib/stats/rollups.ts) and the retention purge, which keep the rollups and the record census in step; upgrade the console or call rebuildRollups', TG_TABLE_NAME;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER "record_census_members_writer_guard" BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON "record_census_members"
    FOR EACH STATEMENT EXECUTE FUNCTION "event_rollups_writer_guard"();
