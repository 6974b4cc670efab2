import { z } from "zod";
import { InvalidInputError } from "./errors";

/** Parses with zod and turns failures into a 400 that names every bad field. */
export function parseInput<S extends z.ZodType>(schema: S, input: unknown, what: string): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issues = result.error.issues.map((i) => ({ path: i.path.map(String).join(".") || "(input)", message: i.message }));
  throw new InvalidInputError(`invalid ${what}: ${issues.map((i) => `${i.path} ${i.message}`).join("; ")}`, issues);
}

export const MAX_ID = 9223372036854775807n;
const ID_MESSAGE = "must be a positive whole number";

/**
 * The one id schema: a row id (every table's primary key is a bigint) given as a bigint, a
 * JSON number or a decimal string (a path segment, a query parameter), 1 … 2^63−1.
 */
export const idSchema = z
  .union([z.bigint(), z.number({ error: ID_MESSAGE }).int(ID_MESSAGE), z.string({ error: ID_MESSAGE }).trim().regex(/^\d{1,19}$/, ID_MESSAGE)], { error: ID_MESSAGE })
  .transform((v) => BigInt(v))
  .refine((v) => v > 0n && v <= MAX_ID, ID_MESSAGE);
