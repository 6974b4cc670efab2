-- The rollups' primary keys with the kind before the scope: (bucket, operation, kind, scope) and
-- (grain_seconds, bucket, operation, kind, scope). The overview's series adds a tier's rows up by
-- bucket, operation and kind over every scope; with the scope before the kind MariaDB grouped
-- them in a memory temporary table 2 KB a row (two VARCHAR(255) columns), which past ten thousand
-- rows (one per scope and bucket) went to disk. In this order the grouping follows the key: no
-- temporary table (1M records, the 24-hour series 32–38 → ~20 ms; docs/scale.md). The rows are
-- the same, and so is every other index; the refresher adds to a row by the whole key, in any
-- order. PostgreSQL groups by hash and keeps its order. Online: the refresher goes on writing while
-- each table is rebuilt (InnoDB rebuilds a table for a new primary key, concurrent DML allowed).
ALTER TABLE `event_rollups`
    DROP PRIMARY KEY,
    ADD PRIMARY KEY (`bucket`, `operation`, `kind`, `scope`),
    ALGORITHM=INPLACE, LOCK=NONE;

ALTER TABLE `event_rollup_tiers`
    DROP PRIMARY KEY,
    ADD PRIMARY KEY (`grain_seconds`, `bucket`, `operation`, `kind`, `scope`),
    ALGORITHM=INPLACE, LOCK=NONE;
