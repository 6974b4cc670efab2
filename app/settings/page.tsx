import type { Metadata } from "next";
import { connection } from "next/server";
import { SettingsForm } from "@/components/SettingsForm";
import { requirePage } from "@/components/server/page-auth";
import { ROLE_DESCRIPTIONS } from "@/lib/auth/permissions";
import { db } from "@/lib/db";
import { getPreferences, knownTimeZones } from "@/lib/preferences";

export const metadata: Metadata = { title: "Settings · Idempotency Console" };

/** The signed-in user's own settings: the time zone every time is shown in; the theme is in the top bar. */
export default async function SettingsPage() {
  await connection();
  const { principal } = await requirePage("/settings", "/settings");
  const { timeZone } = await getPreferences((await db()).prisma, principal.userId);
  return (
    <>
      <h1>Settings</h1>
      <p className="subtle">
        Signed in as <strong>{principal.email}</strong>
        {principal.roles.length ? <> · {principal.roles.map((r) => ROLE_DESCRIPTIONS[r]).join("; ")}</> : " · no roles"}.
      </p>
      <SettingsForm timeZone={timeZone} zones={knownTimeZones()} />
    </>
  );
}
