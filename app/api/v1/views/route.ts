import { apiRoute, methodNotAllowed } from "@/lib/api/handler";
import { jsonResponse } from "@/lib/api/json";
import { createView, createViewSchema, listViews, listViewsQuerySchema } from "@/lib/views/saved-views";

/**
 * GET /api/v1/views?page=/records — the caller's own saved views (of one page, or all).
 * Views are personal: nobody sees or changes another user's views.
 */
export const GET = apiRoute({ access: "signed_in", summary: "Your saved views of a page", query: listViewsQuerySchema }, async ({ query, principal, db }) =>
  jsonResponse({ views: await listViews(db.prisma, principal, query.page) }),
);

/**
 * POST /api/v1/views {page, name, query, replace?} — saves the page's URL query under a
 * name; 409 when the name exists on that page (unless replace: true). No reason and no
 * audit entry: a personal preference (docs/decisions/0004-saved-views-and-exports.md).
 */
export const POST = apiRoute(
  { access: "signed_in", summary: "Save the current filters of a page as a view", body: createViewSchema, action: "views.create" },
  async ({ body, principal, db }) => {
    const { view, replaced } = await createView(db.prisma, principal, body);
    return jsonResponse({ view, replaced }, { status: replaced ? 200 : 201 });
  },
);

const refuse = methodNotAllowed(["GET", "POST"]);
export { refuse as PUT, refuse as PATCH, refuse as DELETE };
