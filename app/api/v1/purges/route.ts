import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { purgeLeaseSeconds } from "@/lib/retention/config";
import { listRuns, listRunsQuerySchema, startPurge, startPurgeBodySchema } from "@/lib/retention/runs";
import { processWorkerId, workInBackground } from "@/lib/retention/worker";

/**
 * GET  /api/v1/purges?limit=20&before=<id> — purge runs, newest first, and the active one.
 * POST /api/v1/purges — { reason, confirm, asOf?, batchSize?, pauseMs? } → 202 with the run,
 *      which this server then works in the background (batches of short transactions).
 *      `confirm` must be the number of records the purge deletes (the dry run's count for
 *      the same asOf). 409 when a purge is in progress or the confirmation does not match.
 */
export const GET = apiRoute(
  { access: "stats.read", summary: "List purge runs (newest first) and the active one", query: listRunsQuerySchema },
  async ({ db, query }) => jsonResponse(await listRuns(db.prisma, query)),
);

export const POST = apiRoute(
  {
    access: "purges.run",
    summary: "Start a retention purge run (typed confirmation, one at a time)",
    body: startPurgeBodySchema,
    action: "purges.start",
    idempotent: true,
  },
  async ({ db, principal, body, meta }) => {
    const run = await startPurge(db.prisma, principal, body, { workerId: processWorkerId(), leaseSeconds: purgeLeaseSeconds() }, meta);
    void workInBackground(db, run.id);
    return jsonResponse({ run }, { status: 202, headers: { location: `/api/v1/purges/${run.id}` } });
  },
);

const refuse = methodNotAllowed(["GET", "POST"]);
export { refuse as PUT, refuse as PATCH, refuse as DELETE };
