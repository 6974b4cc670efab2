import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatAge, formatInstant, inputToInstant, instantToInput, zoneLabel } from "@/lib/time/format";
import { provideDatabase } from "@/lib/db/client";
import { createTestDatabase, type TestDatabase } from "./helpers/db";
import { queryBound } from "./helpers/sql";
import { call, json, tokenFor } from "./helpers/records-api";

/**
 * One way to show time (components/time/format.ts): ISO-like absolute time in the user's
 * zone with the age beside it, and datetime inputs in the same zone; the zone is the
 * user's setting (PUT /api/v1/me/preferences).
 */
describe("time formatting", () => {
  const winter = "2026-01-15T09:05:36.123Z";
  const summer = "2026-07-15T09:05:36.123Z";

  it("writes an instant ISO-like, to the second, in UTC or the user's zone with its offset at that moment", () => {
    expect(formatInstant(winter)).toBe("2026-01-15 09:05:36 UTC");
    expect(formatInstant(winter, "Europe/Berlin")).toBe("2026-01-15 10:05:36 UTC+01:00");
    expect(formatInstant(summer, "Europe/Berlin")).toBe("2026-07-15 11:05:36 UTC+02:00");
    expect(formatInstant(summer, "America/St_Johns")).toBe("2026-07-15 06:35:36 UTC-02:30");
    expect(formatInstant(winter, "UTC", { seconds: false })).toBe("2026-01-15 09:05 UTC");
    expect(formatInstant("2026-12-31T23:59:59Z", "Asia/Tokyo")).toBe("2027-01-01 08:59:59 UTC+09:00");
    expect(formatInstant(null)).toBe("—");
    expect(formatInstant(winter, "Not/AZone")).toBe("2026-01-15 09:05:36 UTC");
    expect(zoneLabel("Europe/Berlin", Date.parse(summer))).toBe("UTC+02:00");
  });

  it("gives the age in its largest unit, past and future", () => {
    const now = Date.parse("2026-01-15T12:00:00Z");
    expect(formatAge("2026-01-15T11:59:58Z", now)).toBe("just now");
    expect(formatAge("2026-01-15T11:59:00Z", now)).toBe("1 min ago");
    expect(formatAge("2026-01-15T09:00:00Z", now)).toBe("3 h ago");
    expect(formatAge("2026-01-04T12:00:00Z", now)).toBe("11 d ago");
    expect(formatAge("2026-01-15T12:00:45Z", now)).toBe("in 45 s");
    expect(formatAge("2026-01-17T13:00:00Z", now)).toBe("in 2 d");
  });

  it("date inputs take and show wall-clock time in the user's zone, round trip, across daylight saving time", () => {
    expect(instantToInput(winter, "UTC")).toBe("2026-01-15 09:05");
    expect(instantToInput(winter, "Europe/Berlin")).toBe("2026-01-15 10:05");
    expect(inputToInstant("2026-01-15 10:05", "Europe/Berlin")).toBe("2026-01-15T09:05:00Z");
    expect(inputToInstant("2026-01-15", "UTC")).toBe("2026-01-15T00:00:00Z");
    expect(inputToInstant("2026-02-30 10:00", "UTC")).toBe("");
    expect(inputToInstant("2026-01-15 24:00", "UTC")).toBe("");
    expect(inputToInstant("2026-01-15T10:05", "Europe/Berlin")).toBe("2026-01-15T09:05:00Z");
    expect(inputToInstant("2026-07-15T11:05", "Europe/Berlin")).toBe("2026-07-15T09:05:00Z");
    expect(inputToInstant("2026-07-15T11:05", "UTC")).toBe("2026-07-15T11:05:00Z");
    expect(inputToInstant("2026-03-29T01:30", "Europe/Berlin")).toBe("2026-03-29T00:30:00Z"); // the hour before the change
    expect(inputToInstant("2026-03-29T03:30", "Europe/Berlin")).toBe("2026-03-29T01:30:00Z"); // after it
    expect(inputToInstant("", "UTC")).toBe("");
    expect(inputToInstant("yesterday", "UTC")).toBe("");
    for (const zone of ["UTC", "Europe/Berlin", "America/Los_Angeles", "Asia/Kolkata", "Australia/Lord_Howe"]) {
      for (const iso of ["2026-01-15T09:05:00Z", "2026-06-30T23:59:00Z", "2026-11-01T08:30:00Z"]) {
        expect(inputToInstant(instantToInput(iso, zone), zone), `${zone} ${iso}`).toBe(iso);
      }
    }
  });
});

describe("PUT /api/v1/me/preferences", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
    provideDatabase(db);
  });
  afterAll(() => db?.drop());

  const put = async (route: typeof import("@/app/api/v1/me/preferences/route"), token: string, body: unknown) =>
    call(route.PUT, "/api/v1/me/preferences", token, { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

  it("sets the caller's own time zone (canonical IANA name; UTC stored as the default), and refuses an unknown one without changing anything", async () => {
    const route = await import("@/app/api/v1/me/preferences/route");
    const alice = await tokenFor(db, ["viewer"]);
    const bob = await tokenFor(db, ["admin"]);
    expect(await json(await call(route.GET, "/api/v1/me/preferences", alice.token))).toEqual({ timeZone: "UTC" });

    const set = await put(route, alice.token, { timeZone: "Europe/Berlin" });
    expect(set.status).toBe(200);
    expect(await json(set)).toEqual({ timeZone: "Europe/Berlin" });
    expect((await db.prisma.consoleUser.findUniqueOrThrow({ where: { id: alice.userId } })).timeZone).toBe("Europe/Berlin");
    // Only the caller's own: Bob's is untouched.
    expect(await json(await call(route.GET, "/api/v1/me/preferences", bob.token))).toEqual({ timeZone: "UTC" });

    for (const bad of [
      { timeZone: "Mars/Olympus" },
      { timeZone: "" },
      { timeZone: "Europe/Berlin; DROP" },
      { timeZone: 1 },
      {},
      { timeZone: "UTC", extra: 1 },
    ]) {
      const res = await put(route, alice.token, bad);
      expect(res.status, JSON.stringify(bad)).toBe(400);
      expect(res.headers.get("content-type")).toBe("application/problem+json");
    }
    expect((await db.prisma.consoleUser.findUniqueOrThrow({ where: { id: alice.userId } })).timeZone).toBe("Europe/Berlin");

    expect(await json(await put(route, alice.token, { timeZone: "utc" }))).toEqual({ timeZone: "UTC" });
    expect((await db.prisma.consoleUser.findUniqueOrThrow({ where: { id: alice.userId } })).timeZone).toBeNull();
    expect((await call(route.PUT, "/api/v1/me/preferences", null, { method: "PUT", headers: { "content-type": "application/json" }, body: "{}" })).status).toBe(
      401,
    );
  });

  it("the database refuses a malformed zone written behind the API's back", async () => {
    const alice = await tokenFor(db, ["viewer"]);
    await expect(queryBound(db.sql, `UPDATE console_users SET time_zone = 'x y' WHERE id = $1`, [alice.userId])).rejects.toThrow(/time_zone_check/);
  });
});
