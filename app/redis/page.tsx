import type { Metadata } from "next";
import { Suspense } from "react";
import { pathWithQuery, type PageSearchParams } from "@/components/queue/page-path";
import { SkeletonRows } from "@/components/queue/read-ui";
import { RedisScreen } from "@/components/redis/RedisScreen";
import { requirePage } from "@/components/server/page-auth";
import { can } from "@/lib/auth/permissions";

export const metadata: Metadata = { title: "Redis keys · Idempotency Console" };

/** Redis key stores: census, wedged keys (release), key lookup (GET /api/v1/redis/stores/…). */
export default async function RedisPage({ searchParams }: { searchParams: Promise<PageSearchParams> }) {
  const { principal } = await requirePage("/redis", pathWithQuery("/redis", await searchParams));
  return (
    <>
      <div className="toolbar rs-head">
        <div>
          <h1>Redis keys</h1>
          <p className="subtle">
            Idempotency keys services keep in Redis (<code>SET key &apos;processing&apos; NX EX ttl</code>, then the answer). A worker that dies after the{" "}
            <code>SET NX</code> leaves a <strong>wedged</strong> key: every retry is refused until it expires. Read-only, except releasing a wedged key.
          </p>
        </div>
      </div>
      <Suspense fallback={<SkeletonRows cols={6} label="Loading the Redis key stores" />}>
        <RedisScreen canReadKeys={can(principal, "records.read")} canRelease={can(principal, "records.resolve")} />
      </Suspense>
    </>
  );
}
