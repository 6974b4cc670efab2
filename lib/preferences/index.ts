import { z } from "zod";
import type { Principal } from "../auth/permissions";
import type { PrismaClient } from "../generated/prisma/client";

/**
 * A signed-in user's own display preferences: the time zone every time in the console
 * is shown in (and date inputs take). Stored on the user (console_users.time_zone,
 * NULL = UTC), so it follows them to any browser. Like saved views
 * (docs/decisions/0004-saved-views-and-exports.md): personal, changes nothing anyone
 * else sees, so no reason is asked and no audit entry written; PUT sets the whole value
 * (a retry is harmless).
 */

export const UTC = "UTC";

/** The IANA zones this server knows, UTC first (for the settings form). */
export function knownTimeZones(): string[] {
  return [UTC, ...Intl.supportedValuesOf("timeZone").filter((z) => z !== UTC)];
}

/** The canonical name of a time zone the server knows, or null ("Europe/Berlin", "utc" → "UTC"). */
export function canonicalTimeZone(name: string): string | null {
  if (!/^[A-Za-z][A-Za-z0-9_+/-]{0,63}$/.test(name)) return null;
  try {
    const resolved = new Intl.DateTimeFormat("en-US", { timeZone: name }).resolvedOptions().timeZone;
    return resolved === "Etc/UTC" || resolved === "Etc/GMT" || resolved === "GMT" ? UTC : resolved;
  } catch {
    return null;
  }
}

export const timeZoneSchema = z
  .string({ error: "must be a string" })
  .trim()
  .transform((v, ctx) => {
    const zone = canonicalTimeZone(v);
    if (!zone) {
      ctx.addIssue({ code: "custom", message: "must be an IANA time zone such as UTC, Europe/Berlin or America/New_York" });
      return z.NEVER;
    }
    return zone;
  });

export const preferencesSchema = z.strictObject({ timeZone: timeZoneSchema });

export interface Preferences {
  timeZone: string;
}

export async function getPreferences(prisma: PrismaClient, userId: bigint): Promise<Preferences> {
  const user = await prisma.consoleUser.findUnique({ where: { id: userId }, select: { timeZone: true } });
  return { timeZone: (user?.timeZone && canonicalTimeZone(user.timeZone)) || UTC };
}

export async function setPreferences(prisma: PrismaClient, principal: Principal, input: z.output<typeof preferencesSchema>): Promise<Preferences> {
  await prisma.consoleUser.update({ where: { id: principal.userId }, data: { timeZone: input.timeZone === UTC ? null : input.timeZone } });
  return getPreferences(prisma, principal.userId);
}
