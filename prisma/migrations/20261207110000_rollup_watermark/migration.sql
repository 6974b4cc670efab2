-- The rollups' watermarks as a STABLE function, for the statements that read the events above one
-- ("not rolled up yet": the overview's series, countEvents, the census's correction, insights).
-- Written as a scalar subquery, the watermark is unknown when the statement is planned, and the
-- planner guesses a third of the table above it. Where the events' ids follow their physical order
-- (a table only appended to) it still chose the primary key's range; where they no longer do — rows
-- inserted into the space a purge freed, after VACUUM — a third of the table by index costs more
-- than a sequential scan, and every overview read every event (1M records, ids correlated 0.56 with
-- their order: 753 ms for the 0 events above the watermark, against 0.1 ms). The planner evaluates
-- a STABLE function's value when it estimates a condition (as census_failed_since, 20261206000000),
-- so `id > rollup_watermark('events')` is planned as the few rows it is. The executor evaluates it
-- in the statement's snapshot, as it did the subquery.
CREATE FUNCTION "rollup_watermark"("state" text) RETURNS bigint LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN COALESCE((SELECT max(s."watermark") FROM "rollup_state" s WHERE s."name" = "state"), 0);
END $$;
