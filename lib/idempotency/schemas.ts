import { z } from "zod";

/** Stripe's limit; visible ASCII so keys survive headers, logs and CSV unchanged. */
export const idempotencyKeySchema = z
  .string()
  .max(255, "must be at most 255 characters")
  .regex(/^[\x21-\x7e]+$/, "must be 1–255 visible ASCII characters");

export const scopeSchema = z
  .string()
  .min(1, "is required")
  .max(200, "must be at most 200 characters")
  .regex(/^[A-Za-z0-9_.:@/-]+$/, "may contain letters, digits and _ . : @ / - only");

export const operationSchema = z
  .string()
  .min(1, "is required")
  .max(100, "must be at most 100 characters")
  .regex(/^[a-z][a-z0-9_.]*$/, "must be lower_snake_case");

const optionalText = (max: number) => z.string().min(1).max(max).optional();

export const beginInputSchema = z.object({
  scope: scopeSchema,
  operation: operationSchema,
  key: idempotencyKeySchema,
  payload: z.unknown(),
  /** How long the record protects the intent (24 h to 30 days is typical). */
  ttlSeconds: z
    .number()
    .int()
    .min(60)
    .max(400 * 86400)
    .default(86400),
  correlationId: optionalText(200),
  resourceType: optionalText(100),
  resourceId: optionalText(200),
  provider: optionalText(100),
  /** Known before the provider call (client-generated request ids): lets a dead worker's record be reconciled. */
  providerRequestId: optionalText(200),
  amountMinor: z.union([z.bigint(), z.number().int().safe()]).optional(),
  currency: z
    .string()
    .regex(/^[A-Z]{3}$/, "must be an ISO 4217 code such as EUR")
    .optional(),
});
export type BeginInput = z.input<typeof beginInputSchema>;

/** Header pairs in their original order; repeats (Set-Cookie) stay separate pairs. */
export const headerPairsSchema = z.array(z.tuple([z.string().min(1).max(256), z.string().max(8192)])).max(200);

export const storedResponseSchema = z.object({
  code: z.number().int().min(100).max(599),
  headers: headerPairsSchema.default([]),
  /** Stored and replayed exactly as given (text; base64 for binary bodies). */
  body: z
    .string()
    .max(10 * 1024 * 1024)
    .nullable()
    .default(null),
});
export type StoredResponseInput = z.input<typeof storedResponseSchema>;

export const completeInputSchema = storedResponseSchema.extend({
  resourceType: optionalText(100),
  resourceId: optionalText(200),
  providerReference: optionalText(200),
  outbox: z
    .array(z.object({ topic: z.string().min(1).max(200), payload: z.unknown() }))
    .max(100)
    .default([]),
});
export type CompleteInput = z.input<typeof completeInputSchema>;

export const failInputSchema = storedResponseSchema.extend({ error: z.string().min(1).max(4000) });
export type FailInput = z.input<typeof failInputSchema>;

export const pendingInputSchema = z.object({
  provider: optionalText(100),
  providerRequestId: z.string().min(1).max(200),
  error: z.string().min(1).max(4000),
  /** First reconciliation attempt; defaults to one minute later. */
  firstCheckInSeconds: z.number().int().min(0).max(86400).default(60),
});
export type PendingInput = z.input<typeof pendingInputSchema>;
