import { notFound } from "next/navigation";
import { RecordDetail } from "@/components/records/RecordDetail";
import { requirePage } from "@/components/server/page-auth";
import { can } from "@/lib/auth/permissions";

/**
 * One record: fields, timeline, reconciliation, outbox, audit trail, stored response
 * (withheld / masked / revealed per permission) and suspected duplicates.
 * ?window=10m sets the duplicate window (1m … 24h).
 */
export default async function RecordPage({
  params,
  searchParams,
}: {
  params: Promise<{ id: string }>;
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  const { id } = await params;
  const raw = (await searchParams).window;
  const window = typeof raw === "string" && /^\d{1,5}[smhd]$/.test(raw) ? raw : undefined;
  const path = `/records/${encodeURIComponent(id)}${window ? `?window=${window}` : ""}`;
  const { principal } = await requirePage("/records", path);
  if (!/^[1-9]\d{0,18}$/.test(id)) notFound();
  return (
    <RecordDetail
      key={`${id}:${window ?? ""}`}
      id={id}
      window={window}
      canReveal={can(principal, "records.reveal") && can(principal, "records.read_body")}
      canReadAudit={can(principal, "audit.read")}
      actions={{
        resolve: can(principal, "records.resolve"),
        reconcile: can(principal, "records.reconcile"),
        requestCompensation: can(principal, "compensations.request"),
        approveCompensation: can(principal, "compensations.approve"),
        legalHold: can(principal, "legal_holds.manage"),
      }}
    />
  );
}
