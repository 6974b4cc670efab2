import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { idParamsSchema } from "@/lib/kernel/input";
import { getRun } from "@/lib/retention/runs";

/** GET /api/v1/purges/{id} — one run's progress: state, phase, watermarks, deleted vs estimated, batches, heartbeat. */
export const GET = apiRoute({ access: "stats.read", summary: "A purge run's progress", params: idParamsSchema }, async ({ db, params }) =>
  jsonResponse({ run: await getRun(db.prisma, params.id) }),
);

const refuse = methodNotAllowed(["GET"]);
export { refuse as POST, refuse as PUT, refuse as PATCH, refuse as DELETE };
