import type { Jsonified } from "@/lib/api/json";
import type { Overview } from "@/lib/stats/overview";

/** GET /api/v1/stats/overview, as the browser receives it (lib/api/json.ts: Dates and bigints become strings). */
export type OverviewJson = Jsonified<Overview>;
