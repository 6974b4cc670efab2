"use client";

import { retryUnlessClientError } from "@/components/client/api";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useMemo } from "react";
import { apiFetch } from "@/components/client/api";
import { queryKeys } from "@/components/client/query-keys";
import {
  EmptyState,
  ErrorState,
  fmtInt,
  fmtPercent,
  Mono,
  OperationScopeFilters,
  RangePicker,
  resolveRange,
  SkeletonRows,
  Stat,
  toQuery,
  useUrlFilters,
} from "@/components/queue/read-ui";
import { ScrollBox } from "@/components/ScrollBox";
import type { KeyQualityJson } from "./types";

const FILTER_KEYS = ["range", "from", "to", "scope", "operation"] as const;
const RANGES = ["24h", "7d", "30d"];
const DEFAULT_RANGE = "7d";

/** Insights › Key quality: how each client makes its keys, with the evidence and a fix to hand over. */
export function KeyQuality() {
  const [f, setFilters] = useUrlFilters(FILTER_KEYS);
  const range = useMemo(() => resolveRange({ range: f.range, from: f.from, to: f.to }, DEFAULT_RANGE), [f.range, f.from, f.to]);
  const query = useQuery({
    queryKey: queryKeys.insights.keyQuality({ range: f.range, from: f.from, to: f.to, scope: f.scope, operation: f.operation }),
    queryFn: () =>
      apiFetch<KeyQualityJson>(`/api/v1/insights/key-quality?${toQuery({ from: range.from, to: range.to, scope: f.scope, operation: f.operation })}`),
    placeholderData: keepPreviousData,
    retry: retryUnlessClientError,
  });
  const d = query.data;
  const operations = useMemo(() => [...new Set(d?.scopes.flatMap((s) => s.operations.map((o) => o.operation)) ?? [])].sort(), [d]);

  return (
    <div className="rs-screen" data-testid="key-quality">
      <div className="rs-filters" role="group" aria-label="Key quality filters">
        <RangePicker key={`${f.range}|${f.from}|${f.to}`} values={f} presets={RANGES} fallback={DEFAULT_RANGE} onChange={(p) => setFilters(p)} />
        <OperationScopeFilters
          key={`${f.operation}|${f.scope}`}
          operation={f.operation}
          scope={f.scope}
          operations={operations}
          listId="key-quality-operations"
          scopeLabel="Scope (client)"
          onApply={(p) => setFilters(p)}
        />
      </div>
      {query.isError && !d ? (
        <ErrorState error={query.error} onRetry={() => void query.refetch()} />
      ) : !d ? (
        <SkeletonRows cols={5} label="Loading key quality" />
      ) : (
        <>
          <section className="cards" aria-label="Key quality in this range">
            <Stat label="Findings" value={<span data-testid="findings-total">{fmtInt(d.findings.length)}</span>} />
            <Stat label="Scopes with findings" value={fmtInt(new Set(d.findings.map((x) => x.scope)).size)} hint={`of ${fmtInt(d.scopes.length)} analysed`} />
            <Stat label="Keys sampled" value={fmtInt(d.scopes.reduce((s, x) => s + x.sampled, 0))} hint={`at most ${fmtInt(d.sampling.perScope)} per scope`} />
          </section>
          {d.findings.length === 0 ? (
            <EmptyState title="Every client's keys look unpredictable and unique." testId="findings-empty">
              No short, counter-like, timestamp-like or low-entropy keys, and no key reused with another payload or across operations.
            </EmptyState>
          ) : (
            <div className="insight-findings" data-testid="findings">
              {d.findings.map((x) => (
                <article
                  key={`${x.scope}|${x.operation}|${x.kind}`}
                  className="panel insight-finding"
                  data-testid="finding"
                  data-scope={x.scope}
                  data-operation={x.operation}
                  data-kind={x.kind}
                >
                  <h2>
                    {x.title}{" "}
                    <span className="subtle">
                      · {x.scope} · {x.operation === "*" ? "several operations" : x.operation}
                    </span>
                  </h2>
                  <p>
                    {x.evidence.note}: {fmtInt(x.evidence.count)} of {fmtInt(x.evidence.of)} ({fmtPercent(x.evidence.share)})
                    {x.evidence.trafficShare !== null ? ` · ${fmtPercent(x.evidence.trafficShare)} of the scope's requests` : ""}.
                  </p>
                  {x.evidence.examples.length ? (
                    <p className="insight-examples">
                      Examples:{" "}
                      {x.evidence.examples.map((k) => (
                        <Mono key={k} value={k} max={40} />
                      ))}
                    </p>
                  ) : null}
                  <p className="notice" data-testid="finding-fix">
                    <strong>Fix for the client:</strong> {x.fix}
                  </p>
                </article>
              ))}
            </div>
          )}
          <section aria-labelledby="kq-scopes-h">
            <h2 id="kq-scopes-h" className="section-title">
              Scopes analysed
            </h2>
            <ScrollBox label="Scopes analysed" className="rs-table-wrap">
              <table className="rs-table" data-testid="kq-scopes">
                <thead>
                  <tr>
                    <th>Scope</th>
                    <th>Operation</th>
                    <th className="num">Requests</th>
                    <th className="num">Conflicts</th>
                    <th className="num">Keys sampled</th>
                    <th>Findings</th>
                  </tr>
                </thead>
                <tbody>
                  {d.scopes.flatMap((s) =>
                    s.operations.map((o) => (
                      <tr key={`${s.scope}|${o.operation}`} data-testid="kq-row" data-scope={s.scope} data-operation={o.operation}>
                        <td>{s.scope}</td>
                        <td>
                          <code>{o.operation}</code>
                        </td>
                        <td className="num">{fmtInt(o.requests)}</td>
                        <td className="num">{fmtInt(o.conflicts)}</td>
                        <td className="num">{fmtInt(o.sampled)}</td>
                        <td>{o.findings.length ? o.findings.map((x) => x.title).join(", ") : <span className="subtle">none</span>}</td>
                      </tr>
                    )),
                  )}
                </tbody>
              </table>
            </ScrollBox>
          </section>
          <p className="subtle" data-testid="kq-sampling">
            {d.sampling.note}
          </p>
        </>
      )}
    </div>
  );
}
