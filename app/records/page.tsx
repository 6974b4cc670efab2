import { RecordSearch } from "@/components/records/RecordSearch";
import { filtersFrom, filtersQuery } from "@/components/records/search-filters";
import { requirePage } from "@/components/server/page-auth";
import { can } from "@/lib/auth/permissions";

/** Record search: by key, scope, provider reference/request id, correlation id or resource id — filters in the URL. */
export default async function RecordsPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const filters = filtersFrom(await searchParams);
  const qs = filtersQuery(filters);
  const { principal } = await requirePage("/records", qs ? `/records?${qs}` : "/records");
  return (
    <>
      <div className="toolbar">
        <div>
          <h1>Search records</h1>
          <p className="subtle">
            Find an idempotency record by its key, scope, provider reference, provider request id, correlation id or resource id — exact, or by how it starts.
            Newest first.
          </p>
        </div>
      </div>
      <RecordSearch key={qs} filters={filters} canExport={can(principal, "records.export")} />
    </>
  );
}
