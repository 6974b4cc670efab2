import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { acknowledgeAlert, acknowledgeBodySchema } from "@/lib/insights/alerts";

/**
 * POST /api/v1/insights/alerts/acknowledge { fingerprint, reason } + Idempotency-Key
 * A firing alert acknowledged by the caller (alerts.acknowledge), audited; 409 when it is not
 * firing or was acknowledged already (with its current state).
 */
export const POST = apiRoute(
  {
    access: "alerts.acknowledge",
    summary: "Acknowledge a firing alert (reason required, audited)",
    body: acknowledgeBodySchema,
    action: "insights.alerts.acknowledge",
    idempotent: true,
  },
  async ({ db, principal, body, meta }) => jsonResponse({ alert: await acknowledgeAlert(db, principal, body, meta) }),
);

const refuse = methodNotAllowed(["POST"]);
export { refuse as GET, refuse as PUT, refuse as PATCH, refuse as DELETE };
