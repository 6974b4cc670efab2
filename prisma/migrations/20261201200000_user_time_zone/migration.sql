-- A console user's time zone (IANA name such as Europe/Berlin): every time in the console is
-- shown in it, and date inputs take it. NULL = UTC. Console-owned; services never see it.
ALTER TABLE "console_users" ADD COLUMN "time_zone" TEXT;
ALTER TABLE "console_users" ADD CONSTRAINT "console_users_time_zone_check"
    CHECK ("time_zone" IS NULL OR "time_zone" ~ '^[A-Za-z][A-Za-z0-9_+/-]{0,63}$');
