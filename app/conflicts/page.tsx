import type { Metadata } from "next";
import { Suspense } from "react";
import { ConflictsScreen } from "@/components/conflicts/ConflictsScreen";
import { SavedViews } from "@/components/records/SavedViews";
import { pathWithQuery, type PageSearchParams } from "@/components/queue/page-path";
import { SkeletonRows } from "@/components/queue/read-ui";
import { requirePage } from "@/components/server/page-auth";
import { can } from "@/lib/auth/permissions";

export const metadata: Metadata = { title: "Conflicts · Idempotency Console" };

/** Key reuse with a different payload, by operation and scope, over time (GET /api/v1/conflicts). */
export default async function ConflictsPage({ searchParams }: { searchParams: Promise<PageSearchParams> }) {
  const { principal } = await requirePage("/conflicts", pathWithQuery("/conflicts", await searchParams));
  return (
    <>
      <div className="toolbar rs-head">
        <div>
          <h1>Conflicts</h1>
          <p className="subtle">
            Requests that reused an idempotency key with a <em>different</em> payload and were refused (422): a changed intent under an old key, or a client
            bug. Stored (expected) and received payload hash for each.
          </p>
        </div>
        <SavedViews page="/conflicts" />
      </div>
      <Suspense fallback={<SkeletonRows cols={6} label="Loading conflicts" />}>
        <ConflictsScreen canExport={can(principal, "records.export")} />
      </Suspense>
    </>
  );
}
