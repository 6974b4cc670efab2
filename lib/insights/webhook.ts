import { createHash } from "node:crypto";

/**
 * The optional outgoing webhook (INSIGHTS_WEBHOOK_URL): one POST per newly firing alert, as
 * Slack-compatible JSON (`text`, plus `blocks` for Slack's layout; Mattermost, Rocket.Chat,
 * Teams' and Discord's Slack-compatible endpoints read `text`). Retried with exponential
 * backoff on network errors, timeouts, 429 and 5xx — under ONE idempotency key per alert
 * (the `Idempotency-Key` header, the same on every attempt and every later tick), so a
 * receiver that honours it posts once however often we retry. Other 4xx answers are final.
 */

export interface WebhookAlert {
  fingerprint: string;
  kind: string;
  severity: string;
  summary: string;
  scope: string | null;
  operation: string | null;
  firstSeenAt: Date;
}

export interface WebhookResult {
  ok: boolean;
  attempts: number;
  status: number | null;
  error: string | null;
  idempotencyKey: string;
}

/** The same key for every attempt at telling about this firing of this alert. */
export function webhookKey(alert: Pick<WebhookAlert, "fingerprint" | "firstSeenAt">): string {
  return `ic-alert-${createHash("sha256").update(`${alert.fingerprint}\n${alert.firstSeenAt.toISOString()}`).digest("hex").slice(0, 32)}`;
}

export function slackPayload(alert: WebhookAlert, consoleUrl: string | null): { text: string; blocks: unknown[] } {
  const where = [alert.scope, alert.operation].filter(Boolean).join(" · ");
  const link = consoleUrl ? `${consoleUrl.replace(/\/$/, "")}/insights/alerts` : null;
  const text = `${alert.severity === "critical" ? ":rotating_light:" : ":warning:"} Idempotency Console: ${alert.summary}${where ? ` (${where})` : ""}`;
  return {
    text,
    blocks: [
      { type: "section", text: { type: "mrkdwn", text: `*${alert.summary}*${where ? `\n${where}` : ""}` } },
      {
        type: "context",
        elements: [{ type: "mrkdwn", text: `${alert.kind} · since ${alert.firstSeenAt.toISOString()}${link ? ` · <${link}|open the alerts>` : ""}` }],
      },
    ],
  };
}

const retryable = (status: number) => status === 429 || status >= 500;

export async function sendWebhook(
  url: string,
  alert: WebhookAlert,
  opts: { attempts?: number; baseDelayMs?: number; timeoutMs?: number; consoleUrl?: string | null } = {},
): Promise<WebhookResult> {
  const attempts = opts.attempts ?? 4;
  const base = opts.baseDelayMs ?? 500;
  const key = webhookKey(alert);
  const body = JSON.stringify(slackPayload(alert, opts.consoleUrl ?? process.env.NEXTAUTH_URL ?? null));
  let last: WebhookResult = { ok: false, attempts: 0, status: null, error: null, idempotencyKey: key };
  for (let i = 1; i <= attempts; i++) {
    try {
      const res = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": key, "user-agent": "idempotency-console" },
        body,
        signal: AbortSignal.timeout(opts.timeoutMs ?? 5000),
      });
      await res.text().catch(() => "");
      last = { ok: res.ok, attempts: i, status: res.status, error: res.ok ? null : `HTTP ${res.status}`, idempotencyKey: key };
      if (res.ok || !retryable(res.status)) return last;
    } catch (err) {
      last = { ok: false, attempts: i, status: null, error: err instanceof Error ? err.message : String(err), idempotencyKey: key };
    }
    if (i < attempts) await new Promise((r) => setTimeout(r, base * 2 ** (i - 1)));
  }
  return last;
}
