import { ScrollBox } from "@/components/ScrollBox";
import { When } from "@/components/time/When";
import { Section, str, type LooseRow } from "./shared";

/** The record's reconciliation items (an uncertain outcome being checked with the provider). */
export function ReconciliationPanel({ items }: { items: LooseRow[] }) {
  return (
    <Section title={`Reconciliation (${items.length})`} testId="reconciliation">
      <Reconciliation items={items} />
    </Section>
  );
}

function Reconciliation({ items }: { items: LooseRow[] }) {
  if (items.length === 0) return <p className="subtle">No reconciliation items: the outcome was never uncertain.</p>;
  return (
    <ScrollBox label="Reconciliation items">
      <table className="data-table">
        <thead>
          <tr>
            <th scope="col">#</th>
            <th scope="col">State</th>
            <th scope="col">Attempts</th>
            <th scope="col">Provider request id</th>
            <th scope="col">Last check</th>
            <th scope="col">Next check</th>
            <th scope="col">Last error</th>
            <th scope="col">Resolved</th>
          </tr>
        </thead>
        <tbody>
          {items.map((i) => (
            <tr key={String(i.id)}>
              <td className="num">{String(i.id)}</td>
              <td>
                <span className="role-badge">{String(i.state)}</span>
              </td>
              <td className="num">{String(i.attempts)}</td>
              <td className="mono">{str(i.providerRequestId) ?? "—"}</td>
              <td>
                <When iso={str(i.lastCheckedAt)} fallback="never" />
              </td>
              <td>
                <When iso={str(i.nextCheckAt)} />
              </td>
              <td>{str(i.lastError) ?? "—"}</td>
              <td>
                {i.resolvedAt ? (
                  <>
                    {str(i.resolvedBy) ?? "?"}, <When iso={String(i.resolvedAt)} />
                  </>
                ) : (
                  "—"
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </ScrollBox>
  );
}
