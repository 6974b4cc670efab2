import { z } from "zod";
import { csvResponse, fileStamp } from "@/lib/kernel/csv";
import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { actorOf, audit } from "@/lib/audit";
import { can } from "@/lib/auth/permissions";
import { collectExport, exportFilters, exportList } from "@/lib/views/export";
import { ForbiddenError } from "@/lib/kernel/errors";

/**
 * GET /api/v1/export/{records|queue|duplicates|conflicts}?<the list API's filters>
 * The list as CSV: the same filters and rows as GET /api/v1/<list> (records = search),
 * every page (limit/cursor ignored), at most MAX_EXPORT_ROWS rows (X-Export-Truncated
 * when more matched). Needs records.export and the list's own permission. Audited as
 * records.export (list, filters, row count) before the first byte is sent.
 */
export const GET = apiRoute(
  {
    access: "records.export",
    summary: "Export a list (records, queue, duplicates, conflicts, expiry) as CSV (audited)",
    action: "records.export",
    params: z.object({ list: z.string().max(50) }),
    // Any parameters: the list's own schema judges them (400 with its messages).
    query: z.record(z.string(), z.string()),
    // The rows from the read side; the audit entry on the primary, before the first byte.
    reads: "replica",
  },
  async ({ params, query, principal, db, read, meta }) => {
    const list = exportList(params.list);
    if (!can(principal, list.access)) {
      await audit(db.prisma, {
        actor: actorOf(principal),
        action: "records.export",
        outcome: "refused",
        request: meta,
        detail: { list: list.name, filters: exportFilters(query), reason: `missing permission ${list.access}` },
      });
      throw new ForbiddenError(`Exporting ${list.name} also needs the permission ${list.access}, which your roles do not grant.`);
    }
    const result = await collectExport(read, list.name, query);
    await audit(db.prisma, {
      actor: actorOf(principal),
      action: "records.export",
      outcome: "done",
      request: meta,
      detail: { list: result.list, format: "csv", filters: result.filters, rows: result.rows, truncated: result.truncated, maxRows: result.maxRows },
    });
    return csvResponse(result.chunks, `${result.list}-${fileStamp()}.csv`, {
      "x-export-rows": String(result.rows),
      ...(result.truncated ? { "x-export-truncated": String(result.maxRows) } : {}),
    });
  },
);

const refuse = methodNotAllowed(["GET"]);
export { refuse as POST, refuse as PUT, refuse as PATCH, refuse as DELETE };
