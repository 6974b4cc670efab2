import { z } from "zod";
import { PERMISSIONS, isPermission } from "../auth/permissions";
import type { RouteHandler } from "./handler";
import { IDEMPOTENCY_KEY_HEADER } from "./idempotent";

/**
 * The OpenAPI 3.1 document, generated from what the routes declare: each handler
 * made by apiRoute carries its spec (access, summary, params/query/body zod
 * schemas, audit action, idempotency), so the document cannot drift from the
 * code. test/openapi.test.ts checks that the route list covers every route file.
 */

export const HTTP_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

export interface RouteModuleEntry {
  /** Next's path with [segments] (e.g. /api/v1/records/[id]). */
  path: string;
  module: Partial<Record<HttpMethod, RouteHandler>> & Record<string, unknown>;
}

type JsonSchema = Record<string, unknown>;

function jsonSchema(schema: z.ZodType): JsonSchema {
  const out = z.toJSONSchema(schema, { io: "input", unrepresentable: "any", target: "draft-2020-12" }) as JsonSchema;
  delete out.$schema;
  return out;
}

const problemRef = { $ref: "#/components/schemas/Problem" };
const problem = (description: string) => ({ description, content: { "application/problem+json": { schema: problemRef } } });

/** /api/v1/records/[id] → /api/v1/records/{id}; `[...x]` catch-alls are left out of the document. */
export function openApiPath(nextPath: string): string | null {
  if (/\[\.\.\./.test(nextPath)) return null;
  return nextPath.replace(/\[(\w+)\]/g, "{$1}");
}

function tagOf(path: string): string {
  const m = /^\/api\/(?:v1\/)?([^/]+)/.exec(path);
  return m ? m[1] : "console";
}

function operationFor(path: string, method: HttpMethod, handler: RouteHandler): Record<string, unknown> | null {
  const spec = handler.spec;
  if (!spec) return null; // methodNotAllowed stubs
  const parameters: Record<string, unknown>[] = [];
  if (spec.params) {
    const s = jsonSchema(spec.params);
    for (const [name, schema] of Object.entries((s.properties ?? {}) as Record<string, JsonSchema>)) {
      parameters.push({ name, in: "path", required: true, schema });
    }
  }
  if (spec.query) {
    const s = jsonSchema(spec.query);
    const required = new Set((s.required ?? []) as string[]);
    for (const [name, schema] of Object.entries((s.properties ?? {}) as Record<string, JsonSchema>)) {
      parameters.push({ name, in: "query", required: required.has(name), schema });
    }
  }
  // One rule (lib/api/handler.ts): operator actions require the key, every other mutation honours it when sent.
  const keyed = spec.idempotent || (method !== "GET" && spec.action !== undefined);
  if (keyed) {
    parameters.push({
      name: "Idempotency-Key",
      in: "header",
      required: !!spec.idempotent,
      description:
        "One key per intended action (1–255 visible ASCII). A retry with the same key and body replays the first answer with Idempotent-Replayed: true." +
        (spec.idempotent ? "" : " Optional here: without it the request simply runs.") +
        (spec.replayWithholds?.length ? ` A replay withholds ${spec.replayWithholds.join(", ")} (shown once).` : ""),
      schema: { type: "string", minLength: 1, maxLength: 255 },
    });
  }
  const access = spec.access;
  const responses: Record<string, unknown> = {
    "200": { description: "Success (JSON; CSV where the path says export)." },
    "400": problem("Invalid input (the problem names each bad field)" + (spec.idempotent ? ", or the Idempotency-Key header is missing" : "")),
  };
  if (access !== "public") {
    responses["401"] = problem("Not signed in and no valid API token");
    responses["403"] = problem(`Lacks ${access === "signed_in" ? "a session" : `the permission ${access}`} (refusals are audited)`);
  }
  if (spec.params) responses["404"] = problem("No such resource");
  if (method !== "GET")
    responses["409"] = problem(
      "A precondition failed (the problem carries the current state)" + (keyed ? ", or the first request with this key is still in progress" : ""),
    );
  if (keyed) responses["422"] = problem("The Idempotency-Key was used before with a different request");
  const description = [
    access === "public"
      ? "Public."
      : access === "signed_in"
        ? "Any signed-in user or token."
        : `Permission \`${access}\`: ${isPermission(access) ? PERMISSIONS[access] : ""}.`,
    spec.action ? `Audited as \`${spec.action}\`.` : null,
    spec.idempotent ? `Requires \`${IDEMPOTENCY_KEY_HEADER}\`.` : keyed ? `Honours \`${IDEMPOTENCY_KEY_HEADER}\` when sent.` : null,
  ]
    .filter(Boolean)
    .join(" ");
  return {
    operationId: `${method.toLowerCase()}${path.replace(/[{}]/g, "").replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ""))}`,
    summary: spec.summary ?? `${method} ${path}`,
    description,
    tags: [tagOf(path)],
    "x-permission": access,
    ...(spec.action ? { "x-audit-action": spec.action } : {}),
    ...(spec.idempotent ? { "x-idempotent": true } : {}),
    ...(parameters.length ? { parameters } : {}),
    ...(spec.body ? { requestBody: { required: true, content: { "application/json": { schema: jsonSchema(spec.body) } } } } : {}),
    responses,
    security: access === "public" ? [] : [{ bearerToken: [] }, { sessionCookie: [] }],
  };
}

export function buildOpenApiDocument(routes: readonly RouteModuleEntry[], opts: { version?: string; serverUrl?: string } = {}) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of [...routes].sort((a, b) => a.path.localeCompare(b.path))) {
    const p = openApiPath(route.path);
    if (!p) continue;
    for (const method of HTTP_METHODS) {
      const handler = route.module[method];
      if (typeof handler !== "function") continue;
      const op = operationFor(p, method, handler);
      if (op) (paths[p] ??= {})[method.toLowerCase()] = op;
    }
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "Idempotency Console API",
      version: opts.version ?? "1",
      description:
        "Read and act on the shared idempotency tables. Errors are RFC 9457 problem details. Mutations need a reason (audited); every mutation takes an Idempotency-Key — required for operator actions, honoured when sent for the rest.",
    },
    ...(opts.serverUrl ? { servers: [{ url: opts.serverUrl }] } : {}),
    paths,
    components: {
      securitySchemes: {
        bearerToken: { type: "http", scheme: "bearer", description: "An API token (ic_<prefix>_<secret>) from Settings › API tokens or npm run token:create." },
        sessionCookie: {
          type: "apiKey",
          in: "cookie",
          name: "next-auth.session-token",
          description: "The console's session (browser); mutations must be same-origin.",
        },
      },
      schemas: {
        Problem: {
          type: "object",
          description: "RFC 9457 problem details",
          properties: {
            type: { type: "string", format: "uri" },
            title: { type: "string" },
            status: { type: "integer" },
            detail: { type: "string" },
            instance: { type: "string" },
          },
          required: ["type", "title", "status"],
        },
      },
    },
  };
}

export type OpenApiDocument = ReturnType<typeof buildOpenApiDocument>;
