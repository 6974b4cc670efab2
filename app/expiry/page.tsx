import type { Metadata } from "next";
import { Suspense } from "react";
import { ExpiryScreen } from "@/components/expiry/ExpiryScreen";
import { SavedViews } from "@/components/records/SavedViews";
import { pathWithQuery, type PageSearchParams } from "@/components/queue/page-path";
import { SkeletonRows } from "@/components/queue/read-ui";
import { requirePage } from "@/components/server/page-auth";

export const metadata: Metadata = { title: "Expiry & retention · Idempotency Console" };

/** Expiry histogram, expired-not-purged by operation and status, and a read-only purge preview (GET /api/v1/expiry). */
export default async function ExpiryPage({ searchParams }: { searchParams: Promise<PageSearchParams> }) {
  await requirePage("/expiry", pathWithQuery("/expiry", await searchParams));
  return (
    <>
      <div className="toolbar rs-head">
        <div>
          <h1>Expiry &amp; retention</h1>
          <p className="subtle">
            A record protects its intent until <code>expires_at</code>. Deleting too early reopens duplicates; keeping rows forever costs storage and privacy.
          </p>
        </div>
        <SavedViews page="/expiry" />
      </div>
      <Suspense fallback={<SkeletonRows cols={7} label="Loading expiry" />}>
        <ExpiryScreen />
      </Suspense>
    </>
  );
}
