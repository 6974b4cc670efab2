import type { Jsonified } from "@/lib/api/json";
import type { StoreSummary } from "@/lib/redis/views";

/** GET /api/v1/redis/stores as the client parses it. */
export type StoresJson = { stores: Jsonified<StoreSummary>[] };
export type RedisStoreJson = StoresJson["stores"][number]["store"];
