import { connection } from "next/server";
import { AutoRefresh } from "@/components/AutoRefresh";
import { Forbidden } from "@/components/Forbidden";
import { StatusCards } from "@/components/StatusCards";
import { requirePage } from "@/components/server/page-auth";
import { db } from "@/lib/db";
import { statusCounts } from "@/lib/stats/status-counts";

export default async function OverviewPage() {
  await connection(); // live data: render per request, never at build time
  const { allowed } = await requirePage("stats.read", "/");
  if (!allowed) return <Forbidden access="stats.read" />;
  const database = await db();
  const counts = await statusCounts(database.prisma);
  return (
    <>
      <div className="toolbar">
        <div>
          <h1>Overview</h1>
          <p className="subtle">
            Idempotency records by status · {database.mode === "embedded" ? "embedded demo database" : "PostgreSQL"}
          </p>
        </div>
        <AutoRefresh asOf={counts.asOf.toISOString()} />
      </div>
      <StatusCards counts={counts} />
    </>
  );
}
