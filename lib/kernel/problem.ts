/**
 * RFC 9457 problem details. Every API error leaves the console as one of these,
 * with Content-Type application/problem+json.
 */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail?: string;
  instance?: string;
  [extension: string]: unknown;
}

export const PROBLEM_CONTENT_TYPE = "application/problem+json";
const TYPE_BASE = "https://idempotency-console.dev/problems/";

/** An error that knows how to present itself as problem details. */
export class ProblemError extends Error {
  constructor(
    readonly status: number,
    readonly slug: string,
    readonly title: string,
    detail?: string,
    readonly extensions: Record<string, unknown> = {},
  ) {
    super(detail ?? title);
    this.name = "ProblemError";
  }

  toProblem(instance?: string): Problem {
    return {
      type: TYPE_BASE + this.slug,
      title: this.title,
      status: this.status,
      detail: this.message,
      ...(instance ? { instance } : {}),
      ...this.extensions,
    };
  }
}

export function problemResponse(problem: Problem, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(problem), {
    status: problem.status,
    headers: { "content-type": PROBLEM_CONTENT_TYPE, "cache-control": "no-store", ...headers },
  });
}

/** Maps any thrown value to a problem; unknown errors become a 500 without internals. */
export function toProblem(err: unknown, instance?: string): Problem {
  if (err instanceof ProblemError) return err.toProblem(instance);
  return {
    type: TYPE_BASE + "internal",
    title: "Internal error",
    status: 500,
    detail: "The server failed to handle the request; it has been logged.",
    ...(instance ? { instance } : {}),
  };
}
