import type { StatusCounts } from "@/lib/stats/status-counts";
import { RECORD_STATUSES } from "@/lib/stats/status-counts";

const numberFormat = new Intl.NumberFormat("en-US");

/** Records by status, plus open reconciliation items: the first thing anyone looks at. */
export function StatusCards({ counts }: { counts: StatusCounts }) {
  return (
    <section className="cards" aria-label="Records by status">
      {RECORD_STATUSES.map((status) => (
        <div className="card" key={status} data-testid={`count-${status}`}>
          <div className="label">
            <span className={`dot ${status}`} aria-hidden />
            {status}
          </div>
          <div className="value">{numberFormat.format(counts.byStatus[status])}</div>
        </div>
      ))}
      <div className="card" data-testid="count-total">
        <div className="label">All records</div>
        <div className="value">{numberFormat.format(counts.total)}</div>
      </div>
      <div className="card" data-testid="count-open-reconciliation">
        <div className="label">Open reconciliation items</div>
        <div className="value">{numberFormat.format(counts.openReconciliation)}</div>
      </div>
    </section>
  );
}
