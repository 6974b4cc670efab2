import { ProblemError } from "./problem";

/**
 * The refusals every layer shares, as RFC 9457 problems (lib/kernel/problem.ts). One class
 * per meaning: a module that refuses for a reason of its own extends ProblemError next to
 * the rule it enforces (e.g. lib/retention/runs.ts PurgeActiveError).
 */

/** 400: the input does not fit its schema (every bad field named in `errors`). */
export class InvalidInputError extends ProblemError {
  constructor(
    detail: string,
    readonly issues: { path: string; message: string }[] = [],
  ) {
    super(400, "invalid-input", "Invalid input", detail, issues.length ? { errors: issues } : {});
  }
}

/** 401: no valid credentials. */
export class UnauthorizedError extends ProblemError {
  constructor(detail = "Sign in, or send Authorization: Bearer <API token>.") {
    super(401, "unauthorized", "Authentication required", detail);
  }
}

/** 403: the one forbidden error — a missing permission, a cross-site request, a rule of the domain. */
export class ForbiddenError extends ProblemError {
  constructor(detail: string) {
    super(403, "forbidden", "Forbidden", detail);
  }
}

/** 404. */
export class NotFoundError extends ProblemError {
  constructor(detail: string) {
    super(404, "not-found", "Not found", detail);
  }
}

/** 409: a state transition whose precondition no longer holds (someone changed the record first). */
export class StateConflictError extends ProblemError {
  constructor(detail: string, current?: Record<string, unknown>) {
    super(409, "state-conflict", "The record changed", detail, current ? { current } : {});
  }
}
