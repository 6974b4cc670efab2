"use client";

import Link from "next/link";
import { When, useNow } from "@/components/queue/read-ui";
import { formatMoney } from "@/components/records/ui";
import { CompensationActions, type OnCompensationChanged } from "./CompensationActions";
import { StateBadge, type CompensationJson } from "./shared";
import { ScrollBox } from "@/components/ScrollBox";

/**
 * Compensations as a table: record (optional), kind and amount, state, who asked
 * and when, who decided, attempts and the last provider error, and the actions the
 * viewer may take (approve / reject / retry, each with a reason).
 */
export function CompensationsTable({
  items,
  showRecord = true,
  onChanged,
}: {
  items: CompensationJson[];
  showRecord?: boolean;
  onChanged?: OnCompensationChanged;
}) {
  const now = useNow();
  return (
    <ScrollBox label="Compensations">
      <table className="data-table comp-table">
        <thead>
          <tr>
            <th scope="col">#</th>
            {showRecord ? <th scope="col">Record</th> : null}
            <th scope="col">Compensation</th>
            <th scope="col">State</th>
            <th scope="col">Requested</th>
            <th scope="col">Decided</th>
            <th scope="col">Execution</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {items.map((c) => (
            <tr key={c.id} data-testid="compensation-row" data-id={c.id} data-state={c.state} data-record-id={c.recordId ?? ""}>
              <td className="num">{c.id}</td>
              {showRecord ? (
                <td>
                  {c.recordId ? (
                    <Link href={`/records/${c.recordId}`} data-testid="compensation-record-link">
                      #{c.recordId}
                    </Link>
                  ) : (
                    <span className="subtle" title="purged">
                      purged
                    </span>
                  )}
                  <div className="subtle comp-sub">
                    {c.operation} · {c.scope}
                  </div>
                  {c.relatedRecordId ? (
                    <div className="subtle comp-sub">
                      duplicate of <Link href={`/records/${c.relatedRecordId}`}>#{c.relatedRecordId}</Link>
                    </div>
                  ) : null}
                </td>
              ) : null}
              <td>
                <strong>{c.kind}</strong> {formatMoney(c.amountMinor, c.currency)}
                <div className="subtle comp-sub">
                  {c.provider} <span className="mono">{c.providerReference}</span>
                </div>
                <div className="comp-reason" title={c.reason}>
                  “{c.reason}”
                </div>
              </td>
              <td>
                <StateBadge state={c.state} stale={c.stale} />
              </td>
              <td>
                <span className="who-email">{c.requestedByLabel}</span>
                {c.requestedByYou ? <span className="subtle"> (you)</span> : null}
                <div className="subtle comp-sub">
                  <When iso={c.requestedAt} now={now} />
                </div>
              </td>
              <td>
                {c.decidedByLabel ? (
                  <>
                    <span className="who-email">{c.decidedByLabel}</span>
                    <div className="subtle comp-sub">
                      <When iso={c.decidedAt} now={now} />
                    </div>
                    {c.decisionReason ? (
                      <div className="comp-reason" title={c.decisionReason}>
                        “{c.decisionReason}”
                      </div>
                    ) : null}
                  </>
                ) : (
                  <span className="subtle">—</span>
                )}
              </td>
              <td>
                {c.attempts === 0 ? (
                  <span className="subtle">not sent</span>
                ) : (
                  <>
                    {c.attempts} attempt{c.attempts === 1 ? "" : "s"}
                    {c.lastAttemptAt ? (
                      <>
                        , last <When iso={c.lastAttemptAt} now={now} />
                      </>
                    ) : null}
                  </>
                )}
                {c.providerCompensationId ? (
                  <div className="comp-sub">
                    provider id{" "}
                    <span className="mono" data-testid="provider-compensation-id">
                      {c.providerCompensationId}
                    </span>
                  </div>
                ) : null}
                {c.lastError ? (
                  <div className="comp-error" data-testid="compensation-last-error">
                    {c.lastError}
                  </div>
                ) : null}
              </td>
              <td>
                <CompensationActions compensation={c} onChanged={onChanged} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </ScrollBox>
  );
}
