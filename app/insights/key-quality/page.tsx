import type { Metadata } from "next";
import { Suspense } from "react";
import { KeyQuality } from "@/components/insights/KeyQuality";
import { pathWithQuery, type PageSearchParams } from "@/components/queue/page-path";
import { SkeletonRows } from "@/components/queue/read-ui";
import { requirePage } from "@/components/server/page-auth";

export const metadata: Metadata = { title: "Key quality · Idempotency Console" };

/** How each client makes its idempotency keys (GET /api/v1/insights/key-quality). */
export default async function KeyQualityPage({ searchParams }: { searchParams: Promise<PageSearchParams> }) {
  await requirePage("/insights/key-quality", pathWithQuery("/insights/key-quality", await searchParams));
  return (
    <>
      <div className="toolbar rs-head">
        <div>
          <h1>Key quality</h1>
          <p className="subtle">
            Keys must be unique per intent and unpredictable. Per scope and operation: keys that are short, counter-like, timestamp-like or low in entropy,
            reused with another payload or across operations — with the evidence and a fix to hand to the client.
          </p>
        </div>
      </div>
      <Suspense fallback={<SkeletonRows cols={5} label="Loading key quality" />}>
        <KeyQuality />
      </Suspense>
    </>
  );
}
