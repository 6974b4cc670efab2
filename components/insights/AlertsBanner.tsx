"use client";

import { useQuery } from "@tanstack/react-query";
import { usePathname } from "next/navigation";
import { apiFetch } from "@/components/client/api";
import { queryKeys } from "@/components/client/query-keys";
import type { AlertsJson } from "./types";

/**
 * The alerts banner above every screen (for stats.read): the unacknowledged alerts as the
 * server's evaluator last remembered them (GET /api/v1/insights/alerts?source=remembered —
 * console rows only, nothing computed per page), refreshed every minute. Silent when there
 * is nothing to say or the request fails: it must never get in the way of the page.
 */
export function AlertsBanner() {
  const pathname = usePathname();
  const query = useQuery({
    queryKey: queryKeys.insights.alerts("remembered"),
    queryFn: () => apiFetch<AlertsJson>("/api/v1/insights/alerts?source=remembered"),
    refetchInterval: 60_000,
    retry: false,
  });
  const d = query.data;
  if (!d || d.counts.unacknowledged === 0 || pathname === "/insights/alerts") return null;
  const open = d.alerts.filter((a) => !a.acknowledged);
  const critical = open.filter((a) => a.severity === "critical").length;
  return (
    <div className={`insight-banner${critical ? " insight-banner-critical" : ""}`} role="status" data-testid="alerts-banner">
      <strong>
        {open.length} alert{open.length === 1 ? "" : "s"} need{open.length === 1 ? "s" : ""} attention
        {critical ? ` (${critical} critical)` : ""}:
      </strong>{" "}
      <span className="insight-banner-first">{open[0].summary}</span> <a href="/insights/alerts">Open the alerts</a>
    </div>
  );
}
