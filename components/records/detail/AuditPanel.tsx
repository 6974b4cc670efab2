import Link from "next/link";
import { ScrollBox } from "@/components/ScrollBox";
import { When } from "@/components/time/When";
import { Section, str, type LooseRow } from "./shared";

/** The audit entries that touch the record, and a link to them in the audit log. */
export function AuditPanel({ entries, id, canReadAudit }: { entries: LooseRow[]; id: string; canReadAudit: boolean }) {
  return (
    <Section title={`Audit trail (${entries.length})`} testId="record-audit">
      <AuditEntries entries={entries} id={id} canReadAudit={canReadAudit} />
    </Section>
  );
}

function AuditEntries({ entries, id, canReadAudit }: { entries: LooseRow[]; id: string; canReadAudit: boolean }) {
  return (
    <>
      {entries.length === 0 ? (
        <p className="subtle">No console action has touched this record yet.</p>
      ) : (
        <ScrollBox label="Audit entries">
          <table className="data-table">
            <thead>
              <tr>
                <th scope="col">#</th>
                <th scope="col">When</th>
                <th scope="col">Who</th>
                <th scope="col">Action</th>
                <th scope="col">Outcome</th>
                <th scope="col">Reason</th>
              </tr>
            </thead>
            <tbody>
              {entries.map((e) => (
                <tr key={String(e.id)} data-testid="record-audit-row">
                  <td className="num">{String(e.id)}</td>
                  <td className="nowrap">
                    <When iso={str(e.occurredAt)} />
                  </td>
                  <td>{str(e.actorLabel) ?? String(e.actorType)}</td>
                  <td>
                    <code>{String(e.action)}</code>
                  </td>
                  <td>
                    <span className={`outcome outcome-${String(e.outcome)}`}>{String(e.outcome)}</span>
                  </td>
                  <td>{str(e.reason) ?? ""}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </ScrollBox>
      )}
      {canReadAudit ? (
        <p>
          <Link href={`/audit?targetTable=idempotency_records&targetId=${id}`}>Open in the audit log</Link>
        </p>
      ) : null}
    </>
  );
}
