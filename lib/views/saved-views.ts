import { isUniqueViolation } from "../db/errors";
import { z } from "zod";
import type { Principal } from "../auth/permissions";
import type { PrismaClient, SavedView } from "../generated/prisma/client";
import { ProblemError } from "../kernel/problem";
import { NotFoundError } from "../kernel/errors";
import { optional } from "../kernel/input";

/**
 * Saved views: a user's named filters for a console list page — the page path and
 * the URL query string the page keeps its filters in (filters live in the URL, so a
 * view is exactly a shareable link with a name). Private to their owner: every read
 * and write is scoped to the principal's user id, another user's view is "not found",
 * and views go when their user is deleted (ON DELETE CASCADE).
 *
 * Not audited and no reason asked (docs/decisions/0004-saved-views-and-exports.md):
 * a view is a personal bookmark, it changes nothing anyone else sees and reveals
 * nothing the owner could not already open. Refused calls are still audited by the
 * API wrapper like every refusal.
 */

export const MAX_VIEWS_PER_PAGE = 50;
export const MAX_VIEW_QUERY_LENGTH = 2000;

/** Query parameters that are positions, not filters: never part of a saved view. */
const NOT_SAVED = new Set(["cursor"]);

/** A console path: "/", "/records", "/admin/users" — lowercase segments, never "//" (no open redirect when applied). */
export const viewPageSchema = z
  .string({ error: "must be a string" })
  .trim()
  .max(100, "must be at most 100 characters")
  .regex(/^\/([a-z0-9_-]+(\/[a-z0-9_-]+)*)?$/, "must be a console path such as /records");

export const viewNameSchema = z
  .string({ error: "must be a string" })
  .trim()
  .min(1, "is required")
  .max(100, "must be at most 100 characters")
  .regex(/^[^\p{Cc}]*$/u, "must not contain control characters");

/**
 * The query string as stored: without "?", without empty values and positions (cursor),
 * in a canonical encoding (URLSearchParams), so the same filters always compare equal.
 */
export function normalizeViewQuery(query: string): string {
  const params = new URLSearchParams(query.replace(/^\?/, ""));
  const out = new URLSearchParams();
  for (const [k, v] of params) if (v.trim() !== "" && !NOT_SAVED.has(k)) out.append(k, v);
  return out.toString();
}

export const viewQueryStringSchema = z
  .string({ error: "must be a string" })
  .max(MAX_VIEW_QUERY_LENGTH * 3, `must be at most ${MAX_VIEW_QUERY_LENGTH} characters`)
  .transform(normalizeViewQuery)
  .refine((q) => q.length <= MAX_VIEW_QUERY_LENGTH, `must be at most ${MAX_VIEW_QUERY_LENGTH} characters`);

export const createViewSchema = z.strictObject({
  page: viewPageSchema,
  name: viewNameSchema,
  query: viewQueryStringSchema.default(""),
  /** Overwrite this user's view of the same page and name instead of answering 409. */
  replace: z.boolean({ error: "must be true or false" }).default(false),
});
export type CreateViewInput = z.input<typeof createViewSchema>;

export const listViewsQuerySchema = z.strictObject({ page: optional(viewPageSchema) });

export interface SavedViewJson {
  id: string;
  page: string;
  name: string;
  query: string;
  createdAt: string;
}

export function viewJson(v: SavedView): SavedViewJson {
  return { id: v.id.toString(), page: v.page, name: v.name, query: v.query, createdAt: v.createdAt.toISOString() };
}

type Owner = Pick<Principal, "userId">;

/** The principal's own views, of one page or all, by page then name. */
export async function listViews(prisma: PrismaClient, owner: Owner, page?: string): Promise<SavedViewJson[]> {
  const views = await prisma.savedView.findMany({
    where: { userId: owner.userId, ...(page !== undefined ? { page } : {}) },
    orderBy: [{ page: "asc" }, { name: "asc" }, { id: "asc" }],
  });
  return views.map(viewJson);
}

export class ViewExistsError extends ProblemError {
  constructor(name: string, page: string) {
    super(409, "view-exists", "A view with this name exists", `You already have a view named "${name}" on ${page}; choose another name or replace it.`);
  }
}

export class TooManyViewsError extends ProblemError {
  constructor(page: string) {
    super(409, "too-many-views", "Too many saved views", `You have ${MAX_VIEWS_PER_PAGE} views on ${page} already; delete one first.`);
  }
}

/** Saves a view for the principal's user; with replace, an existing one of the same page and name takes the new query. */
export async function createView(
  prisma: PrismaClient,
  owner: Owner,
  input: z.output<typeof createViewSchema>,
): Promise<{ view: SavedViewJson; replaced: boolean }> {
  const key = { userId_page_name: { userId: owner.userId, page: input.page, name: input.name } };
  if (input.replace) {
    const existing = await prisma.savedView.findUnique({ where: key });
    if (existing) {
      const view = await prisma.savedView.update({ where: { id: existing.id }, data: { query: input.query } });
      return { view: viewJson(view), replaced: true };
    }
  }
  const count = await prisma.savedView.count({ where: { userId: owner.userId, page: input.page } });
  if (count >= MAX_VIEWS_PER_PAGE) throw new TooManyViewsError(input.page);
  try {
    const view = await prisma.savedView.create({ data: { userId: owner.userId, page: input.page, name: input.name, query: input.query } });
    return { view: viewJson(view), replaced: false };
  } catch (err) {
    if (isUniqueViolation(err)) throw new ViewExistsError(input.name, input.page);
    throw err;
  }
}

/** Deletes one of the principal's views; someone else's (or none) is 404, telling nothing about it. */
export async function deleteView(prisma: PrismaClient, owner: Owner, id: bigint): Promise<{ deleted: true; id: string }> {
  const { count } = await prisma.savedView.deleteMany({ where: { id, userId: owner.userId } });
  if (count === 0) throw new NotFoundError(`You have no saved view ${id}.`);
  return { deleted: true, id: id.toString() };
}
