import type { Metadata } from "next";
import { Suspense } from "react";
import { SavedViews } from "@/components/records/SavedViews";
import { pathWithQuery, type PageSearchParams } from "@/components/queue/page-path";
import { QueueScreen } from "@/components/queue/QueueScreen";
import { SkeletonRows } from "@/components/queue/read-ui";
import { requirePage } from "@/components/server/page-auth";
import { can } from "@/lib/auth/permissions";

export const metadata: Metadata = { title: "Stuck & pending · Idempotency Console" };

/** Stuck & pending: processing past its threshold, pending records, open reconciliation items (GET /api/v1/queue). */
export default async function QueuePage({ searchParams }: { searchParams: Promise<PageSearchParams> }) {
  const { principal } = await requirePage("/queue", pathWithQuery("/queue", await searchParams));
  return (
    <>
      <div className="toolbar rs-head">
        <div>
          <h1>Stuck &amp; pending</h1>
          <p className="subtle">
            Records a worker left in <code>processing</code> past its operation&apos;s threshold, payments whose outcome at the provider is unknown (
            <code>pending</code>), and open reconciliation items. Oldest first.
          </p>
        </div>
        <SavedViews page="/queue" />
      </div>
      <Suspense fallback={<SkeletonRows cols={8} label="Loading the queue" />}>
        <QueueScreen
          canExport={can(principal, "records.export")}
          canReconcile={can(principal, "records.reconcile")}
          canResolve={can(principal, "records.resolve") || can(principal, "records.reconcile")}
        />
      </Suspense>
    </>
  );
}
