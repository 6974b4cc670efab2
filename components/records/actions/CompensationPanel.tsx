"use client";

import { useState } from "react";
import { CompensationRequestForm } from "@/components/compensations/CompensationRequestForm";
import { useRecordCompensations } from "@/components/compensations/RecordCompensations";
import { remainingMinor } from "@/components/compensations/shared";
import { formatMoney } from "../ui";
import type { RecordActionProps } from "./types";

/**
 * Request a refund/void/cancel of this record's charge: for holders of
 * compensations.request, on completed records that carry a provider reference, an
 * amount and a currency. The amount is pre-filled with what is left after the
 * record's other compensations. Approving happens in the Compensations section (or
 * at /compensations), by someone else.
 */
export function CompensationPanel({ record, access, availability, onChanged }: RecordActionProps) {
  const [open, setOpen] = useState(false);
  const comps = useRecordCompensations(record.id);
  if (!access.requestCompensation) return null;
  // A refund record, or one that never charged anything: say why there is nothing to request (only for completed ones; open ones are resolved first).
  if (!availability.compensation.allowed) {
    if (record.status !== "completed") return null;
    return (
      <section className="panel action-panel comp-panel" data-testid="compensation-panel" aria-label="Compensation">
        <h2>Compensation</h2>
        <p>
          <button type="button" disabled aria-describedby={`comp-why-${record.id}`} data-testid="compensation-open">
            Request refund / void / cancel…
          </button>{" "}
          <span className="subtle" id={`comp-why-${record.id}`} data-testid="compensation-unavailable">
            {availability.compensation.reason}
          </span>
        </p>
      </section>
    );
  }
  const left = comps.data ? remainingMinor(record.amountMinor, comps.data.items) : null;
  return (
    <section className="panel action-panel comp-panel" data-testid="compensation-panel" aria-label="Compensation">
      <h2>Compensation</h2>
      {open && left !== null ? (
        <CompensationRequestForm record={record} remainingMinor={left} onRequested={() => onChanged()} onCancel={() => setOpen(false)} />
      ) : left === null ? (
        <p className="subtle">{comps.isError ? `Could not load this record's compensations: ${comps.error.message}` : "Loading what is left to compensate…"}</p>
      ) : left === 0n ? (
        <p className="subtle" data-testid="compensation-nothing-left">
          Nothing left to compensate: the record&apos;s compensations already claim all of {formatMoney(record.amountMinor, record.currency)}.
        </p>
      ) : (
        <p>
          <button type="button" data-testid="compensation-open" onClick={() => setOpen(true)}>
            Request refund / void / cancel…
          </button>{" "}
          <span className="subtle">
            {formatMoney(left.toString(), record.currency)} of {formatMoney(record.amountMinor, record.currency)} left to compensate; someone else approves.
          </span>
        </p>
      )}
    </section>
  );
}
