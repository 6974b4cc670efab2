import type { Metadata } from "next";
import { RetentionScreen } from "@/components/retention/RetentionScreen";
import { requirePage } from "@/components/server/page-auth";
import { can } from "@/lib/auth/permissions";

export const metadata: Metadata = { title: "Retention · Idempotency Console" };

/** Retention policies, dry run, purge runs (live progress, history), scope legal holds. */
export default async function RetentionPage() {
  const { principal } = await requirePage("/retention", "/retention");
  return (
    <>
      <div className="toolbar rs-head">
        <div>
          <h1>Retention</h1>
          <p className="subtle">
            Expired records stop protecting their intent; keeping them forever costs storage and privacy. Purges delete them under the policies below, in short
            batches, never touching unfinished, held or still-needed rows. What has expired: <a href="/expiry">Expiry</a>.
          </p>
        </div>
      </div>
      <RetentionScreen
        canManagePolicies={can(principal, "retention.manage")}
        canRunPurges={can(principal, "purges.run")}
        canManageHolds={can(principal, "legal_holds.manage")}
      />
    </>
  );
}
