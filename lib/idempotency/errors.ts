import { ProblemError } from "../kernel/problem";

/**
 * The protocol's refusals, with the status codes of the IETF Idempotency-Key
 * draft: missing key → 400, key reused with another payload → 422, original
 * request still in progress → 409.
 */
export class MissingKeyError extends ProblemError {
  constructor() {
    super(400, "idempotency-key-missing", "Idempotency-Key missing", "This operation requires an Idempotency-Key header.");
  }
}

export class PayloadMismatchError extends ProblemError {
  constructor(expectedHash: string, receivedHash: string) {
    super(
      422,
      "idempotency-key-reused",
      "Idempotency-Key reused with a different payload",
      "This key was first used with a different request payload; a changed intent needs a new key.",
      { expectedPayloadHash: expectedHash, receivedPayloadHash: receivedHash },
    );
  }
}

export class InProgressError extends ProblemError {
  constructor(status: string) {
    super(409, "idempotency-request-in-progress", "Request in progress", `The original request is still ${status}; retry later.`, {
      recordStatus: status,
    });
  }
}
