import type { Metadata } from "next";
import Link from "next/link";
import { NewCompensation } from "@/components/compensations/NewCompensation";
import { pathWithQuery, type PageSearchParams } from "@/components/queue/page-path";
import { requirePage } from "@/components/server/page-auth";

export const metadata: Metadata = { title: "Request a compensation · Idempotency Console" };

const ID = /^[1-9]\d{0,18}$/;
const one = (v: string | string[] | undefined) => (typeof v === "string" ? v : undefined);

/** /compensations/new?recordId=…&relatedRecordId=…&reason=…: the request form (duplicate-charge hand-over). */
export default async function NewCompensationPage({ searchParams }: { searchParams: Promise<PageSearchParams> }) {
  const sp = await searchParams;
  await requirePage("/compensations/new", pathWithQuery("/compensations/new", sp));
  const recordId = one(sp.recordId);
  const related = one(sp.relatedRecordId);
  return (
    <>
      <nav className="breadcrumbs" aria-label="Breadcrumb">
        <Link href="/compensations">Compensations</Link> › <span>Request</span>
      </nav>
      <h1>Request a compensation</h1>
      {recordId && ID.test(recordId) ? (
        <NewCompensation recordId={recordId} relatedRecordId={related && ID.test(related) ? related : undefined} reason={one(sp.reason)?.slice(0, 2000)} />
      ) : (
        <p className="notice error" role="alert">
          Open this page from a record or from Duplicate charges (“Hand over to compensation”): it needs <code>?recordId=</code> naming the record whose charge
          is to be compensated.
        </p>
      )}
    </>
  );
}
