import { AuditLog } from "@/components/AuditLog";
import { requirePage } from "@/components/server/page-auth";
import { AUDIT_FILTER_KEYS, type AuditFilterValues } from "@/lib/audit/query";
import { can } from "@/lib/auth/permissions";

/** The audit log: filterable (filters live in the URL), newest first, exportable, chain verification. */
export default async function AuditPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const raw = await searchParams;
  const filters: AuditFilterValues = {};
  for (const key of AUDIT_FILTER_KEYS) {
    const v = raw[key];
    const value = Array.isArray(v) ? v[0] : v;
    if (value) filters[key] = value.slice(0, 300);
  }
  const qs = new URLSearchParams(filters as Record<string, string>).toString();
  const { principal } = await requirePage("/audit", qs ? `/audit?${qs}` : "/audit");
  return (
    <>
      <div className="toolbar">
        <div>
          <h1>Audit log</h1>
          <p className="subtle">
            Every change and every refusal, newest first. Append-only in the database and hash-chained: verify the chain to detect entries altered or removed
            behind its back.
          </p>
        </div>
      </div>
      <AuditLog key={qs} filters={filters} canExport={can(principal, "audit.export")} />
    </>
  );
}
