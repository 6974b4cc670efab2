import { When } from "@/components/time/When";
import { Section, type RecordDetailJson } from "./shared";

/** The record's event timeline (newest kept when there are more than the API returns). */
export function TimelinePanel({ timeline }: { timeline: RecordDetailJson["timeline"] }) {
  return (
    <Section title={`Event timeline (${timeline.total.toLocaleString("en")})`} testId="timeline">
      <Timeline timeline={timeline} />
    </Section>
  );
}

function Timeline({ timeline }: { timeline: RecordDetailJson["timeline"] }) {
  if (timeline.events.length === 0) return <p className="subtle">No events recorded for this record.</p>;
  return (
    <>
      {timeline.truncated ? (
        <p className="subtle">
          Showing the newest {timeline.events.length.toLocaleString("en")} of {timeline.total.toLocaleString("en")} events.
        </p>
      ) : null}
      <ol className="timeline">
        {timeline.events.map((e) => {
          const detail = (e.detail ?? null) as Record<string, unknown> | null;
          return (
            <li key={e.id} className={`timeline-event kind-${e.kind}`} data-testid="timeline-event">
              <span className="timeline-kind">{e.kind.replace(/_/g, " ")}</span>
              <span className="nowrap">
                <When iso={e.occurredAt} />
              </span>
              {e.responseCode !== null ? <span className="subtle">HTTP {e.responseCode}</span> : null}
              {e.kind === "conflict" && detail ? (
                <span className="subtle mono">
                  stored {String(detail.expectedPayloadHash ?? "?").slice(0, 12)}… ≠ received{" "}
                  {String(detail.receivedPayloadHash ?? e.payloadHash ?? "?").slice(0, 12)}…
                </span>
              ) : e.payloadHash ? (
                <span className="subtle mono" title={e.payloadHash}>
                  payload {e.payloadHash.slice(0, 12)}…
                </span>
              ) : null}
              {detail && e.kind !== "conflict" ? <span className="subtle mono truncate">{JSON.stringify(detail)}</span> : null}
            </li>
          );
        })}
      </ol>
    </>
  );
}
