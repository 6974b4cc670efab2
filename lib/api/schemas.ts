import { z } from "zod";

/** A reason is required for every change; it is stored in the audit entry. */
export const reasonSchema = z.string().trim().min(3, "is required (at least 3 characters)").max(2000);

const MAX_BIGINT_ID = 9223372036854775807n;
const ID_MESSAGE = "must be a positive whole number";

/**
 * The params of an `[id]` route (`/api/v1/users/<id>`): a decimal string of 1–19
 * digits, 1 … 2^63−1 (a Postgres bigint), as a bigint. Declare it as
 * `params: idParamsSchema` and read `ctx.params.id`; anything else is a 400.
 */
export const idParamsSchema = z.object({
  id: z
    .string({ error: ID_MESSAGE })
    .regex(/^\d{1,19}$/, ID_MESSAGE)
    .transform((v) => BigInt(v))
    .refine((v) => v > 0n && v <= MAX_BIGINT_ID, ID_MESSAGE),
});
