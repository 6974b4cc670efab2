import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { db } from "@/lib/db";
import { healthReport } from "@/lib/db/health";

/** Liveness and readiness: database mode, reachability, migration state. No secrets. */
export const GET = apiRoute({ access: "public", summary: "Liveness and database health" }, async () => {
  const report = await healthReport(db);
  return Response.json(report, {
    status: report.status === "unavailable" ? 503 : 200,
    headers: { "cache-control": "no-store" },
  });
});

const refuse = methodNotAllowed(["GET"]);
export { refuse as POST, refuse as PUT, refuse as PATCH, refuse as DELETE };
