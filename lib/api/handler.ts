import { randomUUID } from "node:crypto";
import { z } from "zod";
import { actorOf, audit, type RequestMeta } from "../audit";
import { can, type Access, type Principal } from "../auth/permissions";
import { sessionPrincipal } from "../auth/session";
import { verifyApiToken } from "../auth/tokens";
import { db, type Database } from "../db";
import { primaryAsRead, type ReadDatabase } from "../db/client";
import { clientAddress } from "../http/client-address";
import { IDEMPOTENCY_KEY_HEADER, runIdempotently } from "./idempotent";
import { parseRequestInput } from "./schemas";
import { problemResponse, ProblemError, toProblem } from "../kernel/problem";
import { ForbiddenError, InvalidInputError, UnauthorizedError } from "../kernel/errors";

/**
 * The one wrapper every API route handler goes through, in this order:
 * authenticate (Bearer token or session cookie) → 401; check the permission the
 * route declares against the permissions table → 403 (audited); CSRF check for
 * cookie-authenticated mutations → 403; parse the dynamic route params (Next's
 * second handler argument), the query and the JSON body with zod → 400, 413, 415
 * (refusals of mutations audited); run the handler; map every error to
 * RFC 9457 problem details. The declared access is attached to the handler so
 * test/route-permissions.test.ts can enumerate every route.
 */
/** A route without path or query parameters. */
type NoFields = Record<never, never>;

export interface RouteSpec<Q extends z.ZodType, B extends z.ZodType, P extends z.ZodType = z.ZodObject<NoFields>, A extends Access = Access> {
  /** A permission, "signed_in", or "public"; the handler's principal is typed from it (PrincipalFor). */
  access: A;
  /** One line for the OpenAPI document (/api/v1/openapi.json). */
  summary?: string;
  /**
   * Schema of the dynamic route segments (`[id]` → `{ id }`), e.g. idParamsSchema.
   * The only way a handler reads them (ctx.params); without it ctx.params is {}.
   */
  params?: P;
  query?: Q;
  /** JSON body schema (mutations). Mutations must include a `reason`. */
  body?: B;
  /** Audit action of a mutation, e.g. "users.create"; refusals are audited under it. */
  action?: string;
  /**
   * Operator actions: require an Idempotency-Key header and run at most once per
   * key (lib/api/idempotent.ts). Needs `action`. Every other mutation (POST, PUT,
   * PATCH, DELETE with an `action`) accepts one and honours it the same way; without
   * one it simply runs.
   */
  idempotent?: boolean;
  /** Top-level fields of the answer a replay must not carry (secrets shown once); see IdempotentCall.withhold. */
  replayWithholds?: readonly string[];
  /**
   * "replica": the route only reads, and what it reads may come from the streaming replica
   * (DATABASE_READ_URL, ADR 0013): its ctx.read is the database's read side. Never on a route with
   * a body or an operator action: actions read their preconditions on the primary (an audited read
   * — an export — audits through ctx.db, the primary). Without it ctx.read is the primary.
   */
  reads?: "replica";
}

/**
 * The principal a handler sees for the access its route declares: a route that requires
 * one (a permission or "signed_in") has one by the time its handler runs, so it is not
 * nullable there; a public route authenticates nobody, so it has none.
 */
export type PrincipalFor<A extends Access> = A extends "public" ? null : Principal;

export interface RouteContext<Q, B, P = Record<string, never>, A extends Access = Access> {
  request: Request;
  /** The dynamic route segments, parsed with the spec's params schema. */
  params: P;
  query: Q;
  body: B;
  /** The caller; null only on public routes. */
  principal: PrincipalFor<A>;
  requestId: string;
  meta: RequestMeta;
  /** The primary: authentication, audit entries, actions. */
  db: Database;
  /** Where the route's reads go: the read side for `reads: "replica"` routes, else the primary. */
  read: ReadDatabase;
}

/** Next's second route handler argument; params is absent only when a test calls the handler directly. */
export interface RouteHandlerContext {
  params?: Promise<Record<string, string | string[]>>;
}

export type RouteHandler = ((request: Request, routeContext?: RouteHandlerContext) => Promise<Response>) & {
  access: Access;
  action?: string;
  /** The declared spec (schemas included): the OpenAPI document and the route tests read it. */
  spec?: RouteSpec<z.ZodType, z.ZodType, z.ZodType>;
};

export const MAX_BODY_BYTES = 64 * 1024;
const UNSAFE = new Set(["POST", "PUT", "PATCH", "DELETE"]);

export function requestMeta(request: Request, requestId: string): RequestMeta {
  // The same client address sign-in throttling uses (lib/http/client-address.ts).
  return { requestId, ip: clientAddress(request.headers), userAgent: request.headers.get("user-agent") };
}

/** Bearer token first (no ambient credentials), then the session cookie. */
export async function authenticate(database: Database, request: Request): Promise<Principal | null> {
  const authorization = request.headers.get("authorization");
  if (authorization !== null) {
    const m = /^Bearer ([\x21-\x7e]{1,200})$/i.exec(authorization);
    if (!m) throw new UnauthorizedError("The Authorization header must be 'Bearer <API token>'.");
    const check = await verifyApiToken(database.prisma, m[1]);
    if (!check.ok) throw new UnauthorizedError(`The API token is ${check.reason.replace("_", " ")}.`);
    return check.principal;
  }
  return sessionPrincipal(database.prisma, request);
}

/** Cookie-authenticated mutations must come from our own origin. */
function checkSameOrigin(request: Request): void {
  const site = request.headers.get("sec-fetch-site");
  if (site === "same-origin") return;
  const origin = request.headers.get("origin");
  const expected = new URL(process.env.NEXTAUTH_URL || request.url).origin;
  if (origin && (origin === expected || origin === new URL(request.url).origin)) return;
  throw new ForbiddenError("Cross-site request refused (CSRF protection): send it from the console, or use an API token.");
}

async function readJson(request: Request): Promise<unknown> {
  const type = request.headers.get("content-type") ?? "";
  if (!/^application\/json\s*(;|$)/i.test(type)) {
    throw new ProblemError(415, "unsupported-media-type", "Unsupported media type", "Send the body as application/json.");
  }
  const declared = Number(request.headers.get("content-length") ?? "0");
  if (declared > MAX_BODY_BYTES) throw tooLarge();
  const text = await request.text();
  if (Buffer.byteLength(text) > MAX_BODY_BYTES) throw tooLarge();
  try {
    return JSON.parse(text);
  } catch {
    throw new InvalidInputError("The body is not valid JSON.");
  }
}

const tooLarge = () => new ProblemError(413, "payload-too-large", "Payload too large", `Bodies are limited to ${MAX_BODY_BYTES} bytes.`);

export function apiRoute<
  A extends Access,
  Q extends z.ZodType = z.ZodObject<NoFields>,
  B extends z.ZodType = z.ZodUndefined,
  P extends z.ZodType = z.ZodObject<NoFields>,
>(spec: RouteSpec<Q, B, P, A>, handle: (ctx: RouteContext<z.output<Q>, z.output<B>, z.output<P>, A>) => Promise<Response>): RouteHandler {
  if (spec.reads === "replica" && (spec.body || spec.idempotent)) {
    throw new Error(`a route that reads the replica only reads: ${spec.summary ?? "this route"} declares a body or an operator action (ADR 0013)`);
  }
  const querySchema = (spec.query ?? z.object({}).strict()) as z.ZodType;
  // Undeclared segments are dropped: a handler reads only what its spec declares.
  const paramsSchema = (spec.params ?? z.object({})) as z.ZodType;
  const fn = async (request: Request, routeContext?: RouteHandlerContext) => {
    const requestId = request.headers.get("x-request-id")?.slice(0, 100) || randomUUID();
    const instance = new URL(request.url).pathname;
    const meta = requestMeta(request, requestId);
    const action = spec.action ?? `${request.method} ${instance}`;
    let database: Database | undefined;
    let principal: Principal | null = null;
    try {
      if (spec.access !== "public") {
        database = await db();
        principal = await authenticate(database, request);
        if (!principal) throw new UnauthorizedError();
        if (!can(principal, spec.access)) {
          await audit(database.prisma, {
            actor: actorOf(principal),
            action,
            outcome: "refused",
            request: meta,
            detail: { reason: `missing permission ${spec.access}`, path: instance, method: request.method },
          });
          throw new ForbiddenError(`This needs the permission ${spec.access}, which your roles do not grant.`);
        }
        if (principal.kind === "user" && UNSAFE.has(request.method)) checkSameOrigin(request);
      }
      let params: unknown;
      let query: unknown;
      let body: unknown;
      let rawBody: unknown;
      try {
        params = parseRequestInput(paramsSchema, (await routeContext?.params) ?? {}, "path");
        const raw: Record<string, string> = {};
        for (const [k, v] of new URL(request.url).searchParams) {
          if (k in raw) throw new InvalidInputError(`query parameter ${k} is given more than once`);
          raw[k] = v;
        }
        query = parseRequestInput(querySchema, raw, "query");
        if (spec.body) {
          rawBody = await readJson(request);
          body = parseRequestInput(spec.body, rawBody, "body");
        }
      } catch (err) {
        if (spec.action && principal && database && err instanceof ProblemError) {
          await audit(database.prisma, {
            actor: actorOf(principal),
            action,
            outcome: "refused",
            request: meta,
            detail: { status: err.status, problem: err.message },
          });
        }
        throw err;
      }
      database ??= await db();
      // Past the checks above, a route that is not public has its principal (PrincipalFor).
      const ctx: RouteContext<z.output<Q>, z.output<B>, z.output<P>, A> = {
        request,
        params: params as z.output<P>,
        query: query as z.output<Q>,
        body: body as z.output<B>,
        principal: principal as PrincipalFor<A>,
        requestId,
        meta,
        db: database,
        read: spec.reads === "replica" ? database.read : primaryAsRead(database),
      };
      // One rule: operator actions require an Idempotency-Key; every other mutation honours one when sent.
      const keyed = spec.idempotent || (UNSAFE.has(request.method) && spec.action !== undefined && request.headers.has(IDEMPOTENCY_KEY_HEADER));
      const response =
        keyed && principal
          ? await runIdempotently({ database, principal, request, action, path: instance, rawBody, withhold: spec.replayWithholds }, () => handle(ctx))
          : await handle(ctx);
      response.headers.set("x-request-id", requestId);
      return response;
    } catch (err) {
      if (!(err instanceof ProblemError)) console.error(`[${requestId}] ${request.method} ${instance}:`, err);
      return problemResponse(toProblem(err, instance), { "x-request-id": requestId });
    }
  };
  return Object.assign(fn, { access: spec.access, action: spec.action, spec });
}

/** For the methods a route does not serve: 405 as problem+json with Allow (Next's default is plain text). */
export function methodNotAllowed(allow: string[]): RouteHandler {
  const fn = async (request: Request) =>
    problemResponse(
      new ProblemError(405, "method-not-allowed", "Method not allowed", `${request.method} is not supported here; use ${allow.join(", ")}.`).toProblem(
        new URL(request.url).pathname,
      ),
      { allow: allow.join(", ") },
    );
  return Object.assign(fn, { access: "public" as Access });
}
