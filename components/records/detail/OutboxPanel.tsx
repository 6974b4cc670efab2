import { ScrollBox } from "@/components/ScrollBox";
import { When } from "@/components/time/When";
import { Section, str, type LooseRow } from "./shared";

/** The outbox messages written with the record (payloads at the viewer's level). */
export function OutboxPanel({ messages }: { messages: LooseRow[] }) {
  return (
    <Section title={`Outbox messages (${messages.length})`} testId="outbox">
      <Outbox messages={messages} />
    </Section>
  );
}

function Outbox({ messages }: { messages: LooseRow[] }) {
  if (messages.length === 0) return <p className="subtle">No outbox messages were written with this record.</p>;
  return (
    <ScrollBox label="Outbox messages">
      <table className="data-table">
        <thead>
          <tr>
            <th scope="col">#</th>
            <th scope="col">Topic</th>
            <th scope="col">Status</th>
            <th scope="col">Attempts</th>
            <th scope="col">Sent / next attempt</th>
            <th scope="col">Payload</th>
          </tr>
        </thead>
        <tbody>
          {messages.map((m) => (
            <tr key={String(m.id)}>
              <td className="num">{String(m.id)}</td>
              <td className="mono">{String(m.topic)}</td>
              <td>{String(m.status)}</td>
              <td className="num">{String(m.attempts)}</td>
              <td>{m.sentAt ? <When iso={str(m.sentAt)} /> : <When iso={str(m.nextAttemptAt)} />}</td>
              <td>
                {m.payloadHidden ? (
                  <span className="subtle">hidden (needs records.read_body)</span>
                ) : (
                  <details>
                    <summary className="mono truncate">{JSON.stringify(m.payload)}</summary>
                    <ScrollBox as="pre" className="stored-body" label="Message payload">
                      {JSON.stringify(m.payload, null, 2)}
                    </ScrollBox>
                  </details>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </ScrollBox>
  );
}
