import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { buildOpenApiDocument } from "@/lib/api/openapi";
import { ROUTE_MODULES } from "./route-modules";

/** The OpenAPI 3.1 document of this API, generated from the routes' zod schemas. Public: it describes, it reveals no data. */
export const GET = apiRoute({ access: "public", summary: "This API as an OpenAPI 3.1 document" }, async () =>
  Response.json(buildOpenApiDocument(ROUTE_MODULES), { headers: { "cache-control": "no-store" } }),
);

const refuse = methodNotAllowed(["GET"]);
export { refuse as POST, refuse as PUT, refuse as PATCH, refuse as DELETE };
