import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { actorOf, audit } from "@/lib/audit";
import { auditCsvChunks, auditExportSchema, exportExceeds, filtersToParams, MAX_AUDIT_EXPORT_ROWS } from "@/lib/audit/query";

/**
 * GET /api/v1/audit/export — the filtered audit trail as CSV (same filters as
 * /api/v1/audit, without limit/cursor), newest first, streamed, at most
 * MAX_AUDIT_EXPORT_ROWS rows (X-Export-Truncated says when more matched).
 * Every export is itself audited ("audit.export", with the filters); the file is
 * a snapshot of the entries that existed when it started.
 */
export const GET = apiRoute(
  { access: "audit.export", summary: "Export the audit log as CSV (audited)", query: auditExportSchema },
  async ({ query, db, principal, meta }) => {
    const last = await db.prisma.auditEntry.findFirst({ orderBy: { id: "desc" }, select: { id: true } });
    const beforeId = (last?.id ?? 0n) + 1n;
    const truncated = await exportExceeds(db.prisma, query, beforeId);
    await audit(db.prisma, {
      actor: actorOf(principal),
      action: "audit.export",
      outcome: "done",
      request: meta,
      detail: { format: "csv", filters: filtersToParams(query), upToId: beforeId - 1n, truncated, maxRows: MAX_AUDIT_EXPORT_ROWS },
    });
    const chunks = auditCsvChunks(db.prisma, query, { beforeId });
    const encoder = new TextEncoder();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const next = await chunks.next();
        if (next.done) controller.close();
        else controller.enqueue(encoder.encode(next.value));
      },
      async cancel() {
        await chunks.return(undefined);
      },
    });
    const stamp = new Date().toISOString().slice(0, 19).replace(/:/g, "-");
    return new Response(body, {
      headers: {
        "content-type": "text/csv; charset=utf-8",
        "content-disposition": `attachment; filename="audit-log-${stamp}Z.csv"`,
        "cache-control": "no-store",
        "x-content-type-options": "nosniff",
        ...(truncated ? { "x-export-truncated": String(MAX_AUDIT_EXPORT_ROWS) } : {}),
      },
    });
  },
);

const refuse = methodNotAllowed(["GET"]);
export { refuse as POST, refuse as PUT, refuse as PATCH, refuse as DELETE };
