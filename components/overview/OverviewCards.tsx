"use client";

import type { ReactNode } from "react";
import { fmtDuration, fmtInt, fmtPercent, When } from "@/components/queue/read-ui";
import type { OverviewJson } from "./types";

const STATUSES = ["processing", "pending", "completed", "failed"] as const;

function Card({ label, value, hint, testId, dot, tone }: { label: string; value: string; hint?: ReactNode; testId: string; dot?: string; tone?: string }) {
  return (
    <div className={`card${tone ? ` ov-tone-${tone}` : ""}`} data-testid={testId}>
      <div className="label">
        {dot ? <span className={`dot ${dot}`} aria-hidden /> : null}
        {label}
      </div>
      <div className="value">{value}</div>
      {hint ? <div className="subtle ov-hint">{hint}</div> : null}
    </div>
  );
}

/** Records by status (live; the filters apply), plus open reconciliation items. */
export function StatusCards({ data }: { data: OverviewJson }) {
  return (
    <section className="cards ov-cards" aria-label="Records by status">
      {STATUSES.map((s) => (
        <Card key={s} label={s[0].toUpperCase() + s.slice(1)} value={fmtInt(data.records.byStatus[s])} testId={`count-${s}`} dot={s} />
      ))}
      <Card label="All records" value={fmtInt(data.records.total)} testId="count-total" />
      <Card label="Open reconciliation items" value={fmtInt(data.reconciliation.open)} testId="count-open-reconciliation" />
    </section>
  );
}

/** Traffic in the range (requests, replay and conflict rate) and what needs attention now. */
export function OverviewCards({ data, now }: { data: OverviewJson; now: number }) {
  const t = data.events.total;
  return (
    <>
      <section className="cards ov-cards" aria-label="Requests in the selected range">
        <Card
          label="Requests"
          value={fmtInt(t.requests)}
          testId="count-requests"
          hint={`${fmtInt(t.reserved)} new keys · ${fmtInt(t.inProgress)} rejected in progress`}
        />
        <Card label="Replay rate" value={fmtPercent(t.replayRate)} testId="rate-replay" hint={`${fmtInt(t.replays)} replayed`} />
        <Card
          label="Conflict rate"
          value={fmtPercent(t.conflictRate)}
          testId="rate-conflict"
          tone={t.conflicts > 0 ? "warn" : undefined}
          hint={`${fmtInt(t.conflicts)} key reuses with another payload`}
        />
      </section>
      <section className="cards ov-cards" aria-label="Needs attention now">
        <Card
          label="Stuck in processing"
          value={fmtInt(data.stuck.count)}
          testId="count-stuck"
          tone={data.stuck.count > 0 ? "bad" : undefined}
          hint={
            data.stuck.oldestSince ? (
              <>
                oldest since <When iso={data.stuck.oldestSince} now={now} />
              </>
            ) : (
              `threshold ${data.stuck.thresholds.default}${Object.keys(data.stuck.thresholds).length > 1 ? " (per operation)" : ""}`
            )
          }
        />
        <Card
          label="Oldest pending"
          value={data.pending.oldestAgeSeconds === null ? "—" : fmtDuration(data.pending.oldestAgeSeconds)}
          testId="pending-oldest-age"
          tone={data.pending.count > 0 ? "warn" : undefined}
          hint={
            data.pending.oldestSince ? (
              <>
                {fmtInt(data.pending.count)} pending · since <When iso={data.pending.oldestSince} now={now} />
              </>
            ) : (
              "nothing pending"
            )
          }
        />
        <Card label="Expiring in 24 h" value={fmtInt(data.expiry.expiringNext24h)} testId="count-expiring-24h" hint="keys that stop protecting their intent" />
        <Card label="Expired, not purged" value={fmtInt(data.expiry.expiredNotPurged)} testId="count-expired-not-purged" hint="awaiting a retention purge" />
      </section>
    </>
  );
}
