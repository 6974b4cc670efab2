-- PostgreSQL's 20261204000000_scope_counts_index: the overview filtered to one scope counts that
-- scope's records by operation, status and expiry from this index alone (InnoDB's secondary
-- index carries the primary key: covering). Online: writers go on while it builds.
CREATE INDEX `idempotency_records_scope_counts_idx` ON `idempotency_records` (`scope`, `operation`, `expires_at`, `status`) ALGORITHM=INPLACE LOCK=NONE;
