import { connection } from "next/server";
import { Suspense } from "react";
import { OverviewDashboard } from "@/components/overview/OverviewDashboard";
import { RedisTiles } from "@/components/redis/RedisTiles";
import { requirePage } from "@/components/server/page-auth";
import { db } from "@/lib/db";
import { serverIdentity } from "@/lib/db/health";

/**
 * The overview. The numbers come from GET /api/v1/stats/overview (TanStack Query in
 * OverviewDashboard), the same API scripts use; this server part only checks the
 * permission (sending a signed-out visitor to sign-in and back to this very view).
 */
export default async function OverviewPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  await connection(); // live data: render per request, never at build time
  const raw = await searchParams;
  const qs = new URLSearchParams();
  for (const key of ["range", "from", "to", "operation", "scope"]) {
    const v = raw[key];
    const value = Array.isArray(v) ? v[0] : v;
    if (value) qs.set(key, value.slice(0, 300));
  }
  await requirePage("/", qs.size ? `/?${qs}` : "/");
  const database = await db();
  // The engine that answers (PostgreSQL, MariaDB or MySQL), as /api/health names it.
  const engine =
    database.mode === "embedded"
      ? "embedded demo database"
      : await serverIdentity(database.mode, database.sql).then(
          (s) => s.engine,
          () => "database server",
        );
  const subtitle = `Idempotency records, requests, replays and conflicts · ${engine}`;
  return (
    <Suspense fallback={null}>
      <OverviewDashboard subtitle={subtitle} />
      <RedisTiles />
    </Suspense>
  );
}
