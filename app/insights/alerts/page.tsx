import type { Metadata } from "next";
import { AlertsScreen } from "@/components/insights/AlertsScreen";
import { requirePage } from "@/components/server/page-auth";
import { can } from "@/lib/auth/permissions";

export const metadata: Metadata = { title: "Alerts · Idempotency Console" };

/** What needs attention now (GET /api/v1/insights/alerts); acknowledging needs alerts.acknowledge. */
export default async function AlertsPage() {
  const { principal } = await requirePage("/insights/alerts", "/insights/alerts");
  return (
    <>
      <div className="toolbar rs-head">
        <div>
          <h1>Alerts</h1>
          <p className="subtle">
            Conflict spikes against each client&apos;s own baseline, stuck records piling up, payments pending too long, retries after their key expired and new
            key-quality findings. Also on <code>/api/metrics</code> for Prometheus (rules and a Grafana dashboard ship in <code>ops/</code>).
          </p>
        </div>
      </div>
      <AlertsScreen canAcknowledge={can(principal, "alerts.acknowledge")} />
    </>
  );
}
