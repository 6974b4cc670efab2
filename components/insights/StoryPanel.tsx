"use client";

import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { apiFetch } from "@/components/client/api";
import { queryKeys } from "@/components/client/query-keys";

/**
 * The record page's "Story" panel: what happened to this intent in plain sentences
 * (GET /api/v1/records/{id}/story), in the reader's time zone and masked for their role,
 * with a button that copies it for a support reply.
 */
export function StoryPanel({ recordId }: { recordId: string }) {
  const story = useQuery({
    queryKey: queryKeys.insights.story(recordId),
    queryFn: () => apiFetch<{ sentences: { kind: string; text: string }[]; text: string; timeZone: string }>(`/api/v1/records/${recordId}/story`),
    retry: false,
  });
  const [copied, setCopied] = useState<"yes" | "no" | null>(null);

  async function copy(text: string) {
    try {
      await navigator.clipboard.writeText(text);
      setCopied("yes");
    } catch {
      setCopied("no");
    }
  }

  return (
    <section className="panel detail-section" data-testid="record-story" aria-label="What happened">
      <h2>What happened</h2>
      {story.isError ? (
        <p className="subtle">The story could not be told: {story.error.message}</p>
      ) : !story.data ? (
        <p className="subtle" aria-busy="true">
          Reading the timeline…
        </p>
      ) : (
        <>
          <ol className="insight-story" data-testid="story-sentences">
            {story.data.sentences.map((s, i) => (
              <li key={i} data-kind={s.kind}>
                {s.text}
              </li>
            ))}
          </ol>
          <p className="subtle">
            <button type="button" onClick={() => void copy(story.data.text)} data-testid="story-copy">
              Copy for a reply
            </button>{" "}
            <span role="status">{copied === "yes" ? "Copied." : copied === "no" ? "The browser refused the clipboard: select the text instead." : ""}</span>{" "}
            Times in {story.data.timeZone}.
          </p>
        </>
      )}
    </section>
  );
}
