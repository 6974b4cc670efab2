import type { Metadata } from "next";
import { Suspense } from "react";
import { CompensationsScreen } from "@/components/compensations/CompensationsScreen";
import { pathWithQuery, type PageSearchParams } from "@/components/queue/page-path";
import { SkeletonRows } from "@/components/queue/read-ui";
import { requirePage } from "@/components/server/page-auth";
import { can } from "@/lib/auth/permissions";

export const metadata: Metadata = { title: "Compensations · Idempotency Console" };

/** Compensations: the approval queue (four eyes) and every other state (GET /api/v1/compensations). */
export default async function CompensationsPage({ searchParams }: { searchParams: Promise<PageSearchParams> }) {
  const { principal } = await requirePage("/compensations", pathWithQuery("/compensations", await searchParams));
  return (
    <>
      <div className="toolbar rs-head">
        <div>
          <h1>Compensations</h1>
          <p className="subtle">
            Refunds, voids and cancels of completed charges. One person requests, a different person approves; approving executes it through the provider with
            the compensation&apos;s own idempotency key, so a retry after a timeout never refunds twice.
          </p>
        </div>
      </div>
      <Suspense fallback={<SkeletonRows cols={7} label="Loading compensations" />}>
        <CompensationsScreen canApprove={can(principal, "compensations.approve")} canRequest={can(principal, "compensations.request")} />
      </Suspense>
    </>
  );
}
