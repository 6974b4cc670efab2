import type { Metadata } from "next";
import { Suspense } from "react";
import { RetentionAdvisor } from "@/components/insights/RetentionAdvisor";
import { pathWithQuery, type PageSearchParams } from "@/components/queue/page-path";
import { SkeletonRows } from "@/components/queue/read-ui";
import { requirePage } from "@/components/server/page-auth";
import { can } from "@/lib/auth/permissions";

export const metadata: Metadata = { title: "Retention advisor · Idempotency Console" };

/** How long clients keep retrying, beside how long keys are kept (GET /api/v1/insights/retention). */
export default async function RetentionAdvisorPage({ searchParams }: { searchParams: Promise<PageSearchParams> }) {
  const { principal } = await requirePage("/insights/retention", pathWithQuery("/insights/retention", await searchParams));
  return (
    <>
      <div className="toolbar rs-head">
        <div>
          <h1>Retention advisor</h1>
          <p className="subtle">
            A key protects its intent only as long as its record lives. Per operation: how long after the first request clients still come back, beside the
            expiry the services set and the console&apos;s retention policy — retries after expiry, and keys kept far longer than any retry.
          </p>
        </div>
      </div>
      <Suspense fallback={<SkeletonRows cols={8} label="Loading the retention advice" />}>
        <RetentionAdvisor canManage={can(principal, "retention.manage")} />
      </Suspense>
    </>
  );
}
