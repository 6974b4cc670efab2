"use client";

import { fmtDuration, fmtInt, fmtPercent } from "@/components/queue/read-ui";
import type { OverviewJson } from "./types";
import { ScrollBox } from "@/components/ScrollBox";

/** Per operation: traffic in the range and live state, with the totals in the footer. */
export function OperationTable({ data }: { data: OverviewJson }) {
  const names = [...new Set([...data.events.byOperation.map((o) => o.operation), ...data.operations.map((o) => o.operation)])].sort();
  const ev = new Map(data.events.byOperation.map((o) => [o.operation, o]));
  const st = new Map(data.operations.map((o) => [o.operation, o]));
  const t = data.events.total;
  return (
    <ScrollBox label="Operations" className="rs-table-wrap">
      <table className="rs-table" data-testid="operations-table">
        <caption className="ov-caption">Per operation: requests in the range, and the records&apos; state now</caption>
        <thead>
          <tr>
            <th scope="col">Operation</th>
            <th scope="col" className="num">
              Requests
            </th>
            <th scope="col" className="num">
              Replays
            </th>
            <th scope="col" className="num">
              Replay rate
            </th>
            <th scope="col" className="num">
              Conflicts
            </th>
            <th scope="col" className="num">
              Conflict rate
            </th>
            <th scope="col" className="num" title="processing for longer than the operation's stuck threshold">
              Stuck
            </th>
            <th scope="col" className="num">
              Pending
            </th>
            <th scope="col" className="num">
              Oldest pending
            </th>
            <th scope="col" className="num">
              Expired, not purged
            </th>
          </tr>
        </thead>
        <tbody>
          {names.map((op) => {
            const e = ev.get(op);
            const s = st.get(op);
            return (
              <tr key={op} data-testid={`op-row-${op}`}>
                <th scope="row">
                  <code>{op}</code>
                </th>
                <td className="num" data-col="requests">
                  {fmtInt(e?.requests ?? 0)}
                </td>
                <td className="num">{fmtInt(e?.replays ?? 0)}</td>
                <td className="num" data-col="replay-rate">
                  {fmtPercent(e?.replayRate ?? null)}
                </td>
                <td className="num">{fmtInt(e?.conflicts ?? 0)}</td>
                <td className="num" data-col="conflict-rate">
                  {fmtPercent(e?.conflictRate ?? null)}
                </td>
                <td className="num" title={s ? `threshold ${fmtDuration(s.stuckThresholdSeconds)}` : undefined}>
                  {fmtInt(s?.stuck ?? 0)}
                </td>
                <td className="num">{fmtInt(s?.pending ?? 0)}</td>
                <td className="num">{s?.oldestPendingAgeSeconds != null ? fmtDuration(s.oldestPendingAgeSeconds) : "—"}</td>
                <td className="num">{fmtInt(s?.expiredNotPurged ?? 0)}</td>
              </tr>
            );
          })}
        </tbody>
        <tfoot>
          <tr>
            <th scope="row">All</th>
            <td className="num">{fmtInt(t.requests)}</td>
            <td className="num">{fmtInt(t.replays)}</td>
            <td className="num">{fmtPercent(t.replayRate)}</td>
            <td className="num">{fmtInt(t.conflicts)}</td>
            <td className="num">{fmtPercent(t.conflictRate)}</td>
            <td className="num">{fmtInt(data.stuck.count)}</td>
            <td className="num">{fmtInt(data.pending.count)}</td>
            <td className="num">{data.pending.oldestAgeSeconds != null ? fmtDuration(data.pending.oldestAgeSeconds) : "—"}</td>
            <td className="num">{fmtInt(data.expiry.expiredNotPurged)}</td>
          </tr>
        </tfoot>
      </table>
    </ScrollBox>
  );
}
