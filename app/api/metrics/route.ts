import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { anchorMetricsText } from "@/lib/audit/anchor";
import { renderMetrics } from "@/lib/stats/metrics";

/**
 * GET /api/metrics — Prometheus text exposition (lib/stats/metrics.ts). Needs stats.read:
 * scrape with `authorization: Bearer <API token>` (a token scoped to stats.read is enough).
 */
export const GET = apiRoute({ access: "stats.read", summary: "Prometheus metrics (text exposition format)" }, async ({ db }) => {
  const { text, contentType } = await db.withSession((session) => renderMetrics(session, { snapshot: db.mode === "postgres" }));
  // The audit chain's last published anchor (lib/audit/anchor.ts): an outside copy of its head.
  return new Response(text + (await anchorMetricsText()), { status: 200, headers: { "content-type": contentType, "cache-control": "no-store" } });
});

const refuse = methodNotAllowed(["GET"]);
export { refuse as POST, refuse as PUT, refuse as PATCH, refuse as DELETE };
