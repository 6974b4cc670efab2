import type { Overview } from "@/lib/stats/overview";

/** What JSON makes of a server type (lib/api/json.ts): Dates and bigints become strings. */
export type Jsonify<T> = T extends Date | bigint
  ? string
  : T extends (infer U)[]
    ? Jsonify<U>[]
    : T extends object
      ? { [K in keyof T]: Jsonify<T[K]> }
      : T;

/** GET /api/v1/stats/overview, as the browser receives it. */
export type OverviewJson = Jsonify<Overview>;
