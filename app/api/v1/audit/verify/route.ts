import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { verifyAuditChain } from "@/lib/audit";

/**
 * GET /api/v1/audit/verify — walks the whole hash chain and recomputes every hash.
 * Answers { intact, checked, brokenAt: { id, problem: "hash_mismatch" | "link_mismatch", expected, found } | null, lastHash }.
 */
export const GET = apiRoute({ access: "audit.read", summary: "Verify the audit hash chain" }, async ({ db }) => {
  const result = await verifyAuditChain(db.prisma);
  return Response.json(
    {
      intact: result.intact,
      checked: result.checked,
      brokenAt: result.brokenAt ? { ...result.brokenAt, id: result.brokenAt.id.toString() } : null,
      lastHash: result.lastHash,
    },
    { headers: { "cache-control": "no-store" } },
  );
});

const refuse = methodNotAllowed(["GET"]);
export { refuse as POST, refuse as PUT, refuse as PATCH, refuse as DELETE };
