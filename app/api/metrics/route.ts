import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { anchorMetricsText } from "@/lib/audit/anchor";
import { insightMetricsText } from "@/lib/insights/metrics";
import { readMetrics } from "@/lib/stats/metrics";

/**
 * GET /api/metrics — Prometheus text exposition (lib/stats/metrics.ts). Needs stats.read:
 * scrape with `authorization: Bearer <API token>` (a token scoped to stats.read is enough).
 */
export const GET = apiRoute({ access: "stats.read", summary: "Prometheus metrics (text exposition format)", reads: "replica" }, async ({ read, db }) => {
  const { text, contentType } = await readMetrics(read);
  // The audit chain's last published anchor (lib/audit/anchor.ts): an outside copy of its head.
  // The insight alerts as last evaluated (lib/insights/metrics.ts): console rows, no computing.
  return new Response(text + (await anchorMetricsText()) + (await insightMetricsText(db.prisma)), {
    status: 200,
    headers: { "content-type": contentType, "cache-control": "no-store" },
  });
});

const refuse = methodNotAllowed(["GET"]);
export { refuse as POST, refuse as PUT, refuse as PATCH, refuse as DELETE };
