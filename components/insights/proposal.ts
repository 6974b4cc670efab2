"use client";

import { useSearchParams } from "next/navigation";
import { useMemo } from "react";

/**
 * "Propose policy": the retention advisor links to /retention with its proposal in the URL;
 * the policies panel pre-fills its form from it. Saving stays the admin's audited action.
 */
export interface PolicyProposal {
  operation: string;
  keepRecordsDays: number;
  keepEventsDays: number;
}

export function proposalHref(p: PolicyProposal): string {
  const q = new URLSearchParams({ propose: p.operation, keepRecordsDays: String(p.keepRecordsDays), keepEventsDays: String(p.keepEventsDays) });
  return `/retention?${q.toString()}#policies-h`;
}

const days = (v: string | null) => (v !== null && /^\d{1,5}$/.test(v) && Number(v) <= 36500 ? Number(v) : null);

/** The proposal in the page's URL, or null. */
export function useProposal(): PolicyProposal | null {
  const sp = useSearchParams();
  const search = sp.toString();
  return useMemo(() => {
    const p = new URLSearchParams(search);
    const operation = p.get("propose");
    const keepRecordsDays = days(p.get("keepRecordsDays"));
    const keepEventsDays = days(p.get("keepEventsDays"));
    if (!operation || !/^[a-z][a-z0-9_.]{0,99}$/.test(operation) || keepRecordsDays === null || keepEventsDays === null) return null;
    return { operation, keepRecordsDays, keepEventsDays };
  }, [search]);
}
