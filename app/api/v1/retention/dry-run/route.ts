import { z } from "zod";
import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { dryRunInSnapshot } from "@/lib/retention/dry-run";
import { currentRules } from "@/lib/retention/policies";
import { intParam, optional } from "@/lib/kernel/input";

/**
 * GET /api/v1/retention/dry-run?samples=5
 * What a purge as of now would delete, per policy: eligible records and events, what is past
 * the window but protected (by reason), a few sample records. Read-only, one snapshot. Start
 * the run with this asOf and the eligible record count as confirmation (POST /api/v1/purges).
 */
export const GET = apiRoute(
  {
    access: "purges.run",
    summary: "Dry-run a retention purge: eligible and protected counts per policy, with samples",
    query: z.object({ samples: optional(intParam(0, 20)) }).strict(),
  },
  async ({ db, query }) => {
    const rules = await currentRules(db.prisma);
    return jsonResponse(await dryRunInSnapshot(db.withSession, rules, new Date(), { samples: query.samples ?? 5 }));
  },
);

const refuse = methodNotAllowed(["GET"]);
export { refuse as POST, refuse as PUT, refuse as PATCH, refuse as DELETE };
