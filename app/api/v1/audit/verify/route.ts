import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { verifyAuditChain } from "@/lib/audit";
import { lastPublishedAnchor, toAuditAnchor } from "@/lib/audit/anchor";
import { verifyQuerySchema } from "@/lib/audit/query";

/**
 * GET /api/v1/audit/verify[?anchorId&anchorHash&anchorCount] — walks the whole chain,
 * recomputing every HMAC, and checks it against a published anchor (the one given,
 * and the last one this server published). Answers { intact, checked, unkeyed,
 * breaks: [{ id, problem, expected?, found?, detail? }…], breakCount, brokenAt (the
 * first), anchorsChecked, lastId, lastHash }.
 */
export const GET = apiRoute(
  { access: "audit.read", summary: "Verify the audit chain (HMAC, links, published anchors); lists every break", query: verifyQuerySchema },
  async ({ db, query }) => {
    const anchors = [];
    if (query.anchorId !== undefined) anchors.push({ id: query.anchorId, hash: query.anchorHash!, count: query.anchorCount! });
    const published = lastPublishedAnchor();
    if (published) anchors.push(toAuditAnchor(published));
    const result = await verifyAuditChain(db.prisma, { anchors });
    const breaks = result.breaks.map((b) => ({ ...b, id: b.id.toString() }));
    return Response.json(
      {
        intact: result.intact,
        checked: result.checked,
        unkeyed: result.unkeyed,
        breaks,
        breakCount: result.breakCount,
        brokenAt: breaks[0] ?? null,
        anchorsChecked: result.anchorsChecked,
        lastId: result.lastId?.toString() ?? null,
        lastHash: result.lastHash,
      },
      { headers: { "cache-control": "no-store" } },
    );
  },
);

const refuse = methodNotAllowed(["GET"]);
export { refuse as POST, refuse as PUT, refuse as PATCH, refuse as DELETE };
