import { ApiReference } from "@/components/api-docs/ApiReference";
import { Forbidden } from "@/components/Forbidden";
import { requirePage } from "@/components/server/page-auth";
import { buildOpenApiDocument } from "@/lib/api/openapi";
import { ROUTE_MODULES } from "../api/v1/openapi.json/route-modules";

/** A readable rendering of /api/v1/openapi.json (the same document, built the same way). */
export default async function ApiDocsPage() {
  const { allowed } = await requirePage("signed_in", "/api-docs");
  if (!allowed) return <Forbidden access="signed_in" />;
  return <ApiReference document={buildOpenApiDocument(ROUTE_MODULES)} />;
}
