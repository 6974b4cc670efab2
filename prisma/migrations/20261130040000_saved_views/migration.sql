-- Saved views: a user's named filters for a console list page (lib/views).
-- A view is the page path plus the URL query string the page keeps its filters in,
-- private to its owner and removed with them. Console-owned; services never see it.

CREATE TABLE "saved_views" (
    "id" BIGSERIAL NOT NULL,
    "user_id" BIGINT NOT NULL,
    -- A console path such as /records or /queue: lowercase segments, no "//", no query.
    "page" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    -- The query string without "?"; may be empty (the page's defaults).
    "query" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "saved_views_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "saved_views_page_check" CHECK ("page" ~ '^/([a-z0-9_-]+(/[a-z0-9_-]+)*)?$' AND length("page") <= 100),
    CONSTRAINT "saved_views_name_check" CHECK (length("name") BETWEEN 1 AND 100),
    CONSTRAINT "saved_views_query_check" CHECK (length("query") <= 2000 AND "query" NOT LIKE '?%')
);
-- One name per user and page; also serves "my views of this page" (user_id, page).
CREATE UNIQUE INDEX "saved_views_user_id_page_name_key" ON "saved_views"("user_id", "page", "name");
ALTER TABLE "saved_views" ADD CONSTRAINT "saved_views_user_id_fkey"
    FOREIGN KEY ("user_id") REFERENCES "console_users"("id") ON DELETE CASCADE ON UPDATE NO ACTION;
