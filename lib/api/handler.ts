import { randomUUID } from "node:crypto";
import { z } from "zod";
import { InvalidInputError } from "../idempotency/errors";
import { parseInput } from "../idempotency/schemas";
import { problemResponse, ProblemError, toProblem } from "./problem";

/**
 * The one wrapper every API route handler goes through: parses the query with
 * zod (unknown parameters are refused, not ignored), runs the handler, and maps
 * any error to RFC 9457 problem details. Authentication and permission checks
 * plug in here too, so no route can forget them.
 */
export interface RouteSpec<Q extends z.ZodType> {
  query?: Q;
}

export interface RouteContext<Q> {
  request: Request;
  query: Q;
  requestId: string;
}

export function apiRoute<Q extends z.ZodType = z.ZodObject<{}>>(
  spec: RouteSpec<Q>,
  handle: (ctx: RouteContext<z.output<Q>>) => Promise<Response>,
): (request: Request) => Promise<Response> {
  const querySchema = (spec.query ?? z.object({}).strict()) as z.ZodType;
  return async (request: Request) => {
    const requestId = request.headers.get("x-request-id")?.slice(0, 100) || randomUUID();
    const instance = new URL(request.url).pathname;
    try {
      const params = new URL(request.url).searchParams;
      const raw: Record<string, string> = {};
      for (const [k, v] of params) {
        if (k in raw) throw new InvalidInputError(`query parameter ${k} is given more than once`);
        raw[k] = v;
      }
      const query = parseInput(querySchema, raw, "query") as z.output<Q>;
      const response = await handle({ request, query, requestId });
      response.headers.set("x-request-id", requestId);
      return response;
    } catch (err) {
      if (!(err instanceof ProblemError)) console.error(`[${requestId}] ${instance}:`, err);
      return problemResponse(toProblem(err, instance), { "x-request-id": requestId });
    }
  };
}

/** For the methods a route does not serve: 405 as problem+json with Allow (Next's default is plain text). */
export function methodNotAllowed(allow: string[]): (request: Request) => Promise<Response> {
  return async (request) =>
    problemResponse(
      new ProblemError(405, "method-not-allowed", "Method not allowed", `${request.method} is not supported here; use ${allow.join(", ")}.`).toProblem(
        new URL(request.url).pathname,
      ),
      { allow: allow.join(", ") },
    );
}
