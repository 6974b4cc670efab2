import type { ReactNode } from "react";
import { When } from "@/components/time/When";
import { formatMoney, StatusBadge } from "../ui";
import { Section, type RecordJson } from "./shared";

const Mono = ({ v }: { v: string | null }) => (v === null ? <span className="subtle">—</span> : <span className="mono">{v}</span>);

/** Every field of the record. */
export function FieldsPanel({ record: r }: { record: RecordJson }) {
  const rows: [string, ReactNode][] = [
    ["Id", <Mono key="id" v={r.id} />],
    ["Status", <StatusBadge key="s" status={r.status} />],
    ["Scope", <Mono key="sc" v={r.scope} />],
    ["Operation", <Mono key="op" v={r.operation} />],
    ["Idempotency key", <Mono key="k" v={r.idempotencyKey} />],
    ["Payload hash", <Mono key="h" v={r.payloadHash} />],
    ["Amount", r.amountMinor === null ? "—" : `${formatMoney(r.amountMinor, r.currency)} (${r.amountMinor} minor units${r.currency ? ` ${r.currency}` : ""})`],
    ["Response code", r.responseCode ?? "—"],
    ["Resource", r.resourceType || r.resourceId ? `${r.resourceType ?? "?"} ${r.resourceId ?? ""}` : "—"],
    ["Correlation id", <Mono key="c" v={r.correlationId} />],
    ["Provider", r.provider ?? "—"],
    ["Provider request id", <Mono key="pr" v={r.providerRequestId} />],
    ["Provider reference", <Mono key="pf" v={r.providerReference} />],
    ["Last error", r.lastError ?? "—"],
    ["Created", <When key="c1" iso={r.createdAt} />],
    ["Updated", <When key="u" iso={r.updatedAt} />],
    ["Expires", <When key="e" iso={r.expiresAt} />],
    ["Version", r.version],
    ["Legal hold", r.legalHold ? "yes" : "no"],
  ];
  return (
    <Section title="Fields" testId="record-fields">
      <dl className="fields">
        {rows.map(([label, value]) => (
          <div key={label} className="field">
            <dt>{label}</dt>
            <dd>{value}</dd>
          </div>
        ))}
      </dl>
    </Section>
  );
}
