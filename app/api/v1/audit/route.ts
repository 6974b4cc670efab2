import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { auditEntryJson, auditQuerySchema, listAudit } from "@/lib/audit/query";

/**
 * GET /api/v1/audit — the audit trail, newest first.
 * Filters: actor (user id or label prefix), action (exact, or prefix with a trailing *),
 * targetTable, targetId, outcome, from/to (ISO 8601), limit (≤ 200), cursor (keyset on id).
 * Answers { entries, nextCursor }; pass nextCursor back as cursor for the next page.
 */
export const GET = apiRoute({ access: "audit.read", summary: "Audit log entries, filtered, newest first", query: auditQuerySchema }, async ({ query, db }) => {
  const page = await listAudit(db.prisma, query);
  return Response.json({ entries: page.entries.map(auditEntryJson), nextCursor: page.nextCursor }, { headers: { "cache-control": "no-store" } });
});

const refuse = methodNotAllowed(["GET"]);
export { refuse as POST, refuse as PUT, refuse as PATCH, refuse as DELETE };
