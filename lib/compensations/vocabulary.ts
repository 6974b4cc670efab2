/** The words of compensations (no imports: the model, its store and the screens share them). */

export const COMPENSATION_KINDS = ["refund", "void", "cancel"] as const;
export type CompensationKind = (typeof COMPENSATION_KINDS)[number];
export const COMPENSATION_STATES = ["requested", "approved", "rejected", "executing", "executed", "failed"] as const;
export type CompensationState = (typeof COMPENSATION_STATES)[number];

/**
 * last_error of a failed attempt whose outcome at the provider is unknown (timeout,
 * lost answer, 5xx) starts with this. Such a compensation still claims its amount
 * (the provider may have executed it), unlike one the provider refused.
 */
export const OUTCOME_UNKNOWN_PREFIX = "outcome unknown";
