import type { Jsonified } from "@/lib/api/json";
import type { RecordDetail, RevealResult } from "@/lib/records/detail";
import type { ReactNode } from "react";

/** GET /api/v1/records/{id} as the browser receives it (the server's type; bigints and dates as strings). */
export type RecordDetailJson = Jsonified<RecordDetail>;
/** A record as the read API returns it. */
export type RecordJson = RecordDetailJson["record"];
/** The stored response at the viewer's level (masked, or revealed). */
export type StoredResponseJson = NonNullable<RecordDetailJson["response"]>;
export type SuspectedDuplicateJson = RecordDetailJson["suspectedDuplicates"][number];
/** POST /api/v1/records/{id}/reveal as the browser receives it. */
export type RevealJson = Jsonified<RevealResult>;
/** A row of a list the record API passes through loosely (reconciliation items, outbox messages, audit entries). */
export type LooseRow = RecordDetailJson["audit"][number];

export const str = (v: unknown) => (v === null || v === undefined ? null : String(v));

/** One panel of the record page: a titled section the e2e tests find by its test id. */
export function Section({ title, testId, children }: { title: string; testId: string; children: ReactNode }) {
  return (
    <section className="panel detail-section" data-testid={testId} aria-label={title}>
      <h2>{title}</h2>
      {children}
    </section>
  );
}
