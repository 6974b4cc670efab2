import { ApiReference } from "@/components/api-docs/ApiReference";
import { requirePage } from "@/components/server/page-auth";
import { buildOpenApiDocument } from "@/lib/api/openapi";
import { ROUTE_MODULES } from "../api/v1/openapi.json/route-modules";

/** A readable rendering of /api/v1/openapi.json (the same document, built the same way). */
export default async function ApiDocsPage() {
  await requirePage("/api-docs", "/api-docs");
  return <ApiReference document={buildOpenApiDocument(ROUTE_MODULES)} />;
}
