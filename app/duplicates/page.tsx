import type { Metadata } from "next";
import { Suspense } from "react";
import { DuplicatesScreen } from "@/components/duplicates/DuplicatesScreen";
import { SavedViews } from "@/components/records/SavedViews";
import { pathWithQuery, type PageSearchParams } from "@/components/queue/page-path";
import { SkeletonRows } from "@/components/queue/read-ui";
import { requirePage } from "@/components/server/page-auth";
import { can } from "@/lib/auth/permissions";

export const metadata: Metadata = { title: "Duplicate charges · Idempotency Console" };

/** Duplicate-charge investigation: the same purchase under different keys within a window (GET /api/v1/duplicates). */
export default async function DuplicatesPage({ searchParams }: { searchParams: Promise<PageSearchParams> }) {
  const { principal } = await requirePage("/duplicates", pathWithQuery("/duplicates", await searchParams));
  return (
    <>
      <div className="toolbar rs-head">
        <div>
          <h1>Duplicate charges</h1>
          <p className="subtle">
            Was this customer charged twice? Records of the same scope and operation, under <em>different</em> idempotency keys, created within a short window
            of each other, with the same payload hash or the same amount, currency and resource: the double charges a key cannot catch.
          </p>
        </div>
        <SavedViews page="/duplicates" />
      </div>
      <Suspense fallback={<SkeletonRows rows={4} cols={3} label="Looking for duplicate charges" />}>
        <DuplicatesScreen canExport={can(principal, "records.export")} canRequestCompensation={can(principal, "compensations.request")} />
      </Suspense>
    </>
  );
}
