import { z } from "zod";
import { fitsInt8, isStorableText, storableText } from "../db/storable";
import { InvalidInputError } from "../kernel/errors";
import { parseInput } from "../kernel/input";

// --- the input boundary --------------------------------------------------------

type Issue = { path: string; message: string };
const UNSTORABLE_MESSAGE = "must not contain NUL characters or unpaired UTF-16 surrogates (PostgreSQL cannot store them)";
const INT8_MESSAGE = "is outside the range of a 64-bit integer (−9223372036854775808 … 9223372036854775807)";
const MAX_ISSUES = 20;

const join = (path: readonly (string | number)[]) => path.map(String).join(".") || "(input)";

/** Every string (and object key) in the raw input that PostgreSQL could not store. */
function unstorableIssues(value: unknown, path: (string | number)[] = [], out: Issue[] = []): Issue[] {
  if (out.length >= MAX_ISSUES) return out;
  if (typeof value === "string") {
    if (!isStorableText(value)) out.push({ path: join(path), message: UNSTORABLE_MESSAGE });
  } else if (Array.isArray(value)) {
    value.forEach((v, i) => unstorableIssues(v, [...path, i], out));
  } else if (value && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      if (!isStorableText(k)) out.push({ path: join([...path, storableText(k)]), message: `(a key) ${UNSTORABLE_MESSAGE}` });
      else unstorableIssues(v, [...path, k], out);
    }
  }
  return out;
}

/** Every integer in the parsed input that no bigint column could hold. */
function rangeIssues(value: unknown, path: (string | number)[] = [], out: Issue[] = []): Issue[] {
  if (out.length >= MAX_ISSUES) return out;
  if (typeof value === "bigint") {
    if (!fitsInt8(value)) out.push({ path: join(path), message: INT8_MESSAGE });
  } else if (typeof value === "number") {
    if (!Number.isFinite(value)) out.push({ path: join(path), message: "must be a finite number" });
    else if (Number.isInteger(value) && !fitsInt8(BigInt(value))) out.push({ path: join(path), message: INT8_MESSAGE });
  } else if (Array.isArray(value)) {
    value.forEach((v, i) => rangeIssues(v, [...path, i], out));
  } else if (value && typeof value === "object" && !(value instanceof Date)) {
    for (const [k, v] of Object.entries(value)) rangeIssues(v, [...path, k], out);
  }
  return out;
}

function refuse(what: string, issues: Issue[]): never {
  throw new InvalidInputError(`invalid ${what}: ${issues.map((i) => `${i.path} ${i.message}`).join("; ")}`, issues);
}

/**
 * The API's one input boundary (lib/api/handler.ts runs the path, the query and
 * the body of every route through it): text PostgreSQL cannot store is refused
 * before the schema sees it, the schema parses, and integers no bigint column can
 * hold are refused after it (an `\d{1,19}` id can still exceed 2^63−1). Each
 * refusal is a 400 naming every bad field; nothing reaches the database.
 */
export function parseRequestInput<S extends z.ZodType>(schema: S, raw: unknown, what: string): z.output<S> {
  const unstorable = unstorableIssues(raw);
  if (unstorable.length) refuse(what, unstorable);
  const parsed = parseInput(schema, raw, what);
  const outOfRange = rangeIssues(parsed);
  if (outOfRange.length) refuse(what, outOfRange);
  return parsed;
}
