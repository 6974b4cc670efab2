-- Issue 17: the console's insights keep two small tables of their own (console-owned; nothing
-- on the services' tables). Alerts are computed from the rollups, the census and the events
-- (lib/insights/alerts.ts); these tables only remember what was seen, who acknowledged it and
-- whether the outgoing webhook was told.

-- One row per alert subject (fingerprint = kind|scope|operation|subject): open while it fires,
-- resolved_at set when it stops; a later firing reopens the row as a new alert (ack cleared).
CREATE TABLE "insight_alerts" (
    "id" BIGSERIAL NOT NULL,
    "fingerprint" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "scope" TEXT,
    "operation" TEXT,
    "severity" TEXT NOT NULL,
    "summary" TEXT NOT NULL,
    "detail" JSONB,
    "first_seen_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "resolved_at" TIMESTAMPTZ(6),
    "acknowledged_at" TIMESTAMPTZ(6),
    "acknowledged_by" BIGINT,
    "acknowledged_by_label" TEXT,
    "acknowledge_reason" TEXT,
    -- The outgoing webhook (INSIGHTS_WEBHOOK_URL): when it was told, tries, the last error, a lease so one server sends.
    "notified_at" TIMESTAMPTZ(6),
    "notify_attempts" INTEGER NOT NULL DEFAULT 0,
    "notify_last_error" TEXT,
    "notify_lease_until" TIMESTAMPTZ(6),
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "insight_alerts_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "insight_alerts_kind_check" CHECK ("kind" IN
        ('conflict_spike', 'stuck_growth', 'oldest_pending', 'replays_after_expiry', 'new_key_finding')),
    CONSTRAINT "insight_alerts_severity_check" CHECK ("severity" IN ('warning', 'critical')),
    CONSTRAINT "insight_alerts_notify_attempts_check" CHECK ("notify_attempts" >= 0),
    -- An acknowledgement names who and why, or nothing at all.
    CONSTRAINT "insight_alerts_acknowledged_check" CHECK (
        ("acknowledged_at" IS NULL AND "acknowledged_by_label" IS NULL AND "acknowledge_reason" IS NULL)
        OR ("acknowledged_at" IS NOT NULL AND "acknowledged_by_label" IS NOT NULL AND "acknowledge_reason" IS NOT NULL))
);
CREATE UNIQUE INDEX "insight_alerts_fingerprint_key" ON "insight_alerts"("fingerprint");
CREATE INDEX "insight_alerts_resolved_at_idx" ON "insight_alerts"("resolved_at");
ALTER TABLE "insight_alerts" ADD CONSTRAINT "insight_alerts_acknowledged_by_fkey"
    FOREIGN KEY ("acknowledged_by") REFERENCES "console_users"("id") ON DELETE SET NULL ON UPDATE NO ACTION;

-- Key-quality findings as first seen (fingerprint = scope|operation|finding): an alert says a
-- finding is new for INSIGHTS_NEW_FINDING_HOURS after its first sighting.
CREATE TABLE "insight_findings" (
    "fingerprint" TEXT NOT NULL,
    "scope" TEXT NOT NULL,
    "operation" TEXT NOT NULL,
    "finding" TEXT NOT NULL,
    "first_seen_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "insight_findings_pkey" PRIMARY KEY ("fingerprint")
);

-- When the alert evaluator last ran, per console-wide task (the metrics say how fresh the alerts are).
CREATE TABLE "insight_state" (
    "name" TEXT NOT NULL,
    "evaluated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "firing" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "insight_state_pkey" PRIMARY KEY ("name")
);
