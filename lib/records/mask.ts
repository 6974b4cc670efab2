import { readSideConfig, type MaskSettings } from "./config";

/**
 * Masks sensitive data in a stored response (headers and body) before it is shown
 * to someone without the reveal permission, and says what it masked.
 *
 * - Header values: Authorization / Proxy-Authorization (the scheme stays: "Bearer [masked]"),
 *   Cookie and Set-Cookie (cookie names and attributes stay, values go), API-key headers
 *   (X-Api-Key, X-Auth-Token, …, plus MASK_HEADERS); other headers get the text rules below.
 * - JSON bodies are walked on their original text, so what is not masked stays byte for byte
 *   (and 16-digit numbers keep their digits — JSON.parse would round them): values under
 *   sensitive keys (password, secret, token, api_key, card_number, cvc, iban, … plus
 *   MASK_KEYS; case, "_" and "-" ignored; also any key ending in password/secret/token/apikey)
 *   become "[masked]"; every other string value, and integer numbers, get the text rules.
 * - Text rules (also for non-JSON bodies): card numbers (13–19 digits, spaces or dashes
 *   allowed, a network's first digit 2–6, Luhn-valid; the last four stay), IBANs (mod-97
 *   valid), emails (first letter of the local part stays), Bearer/Basic credentials, API
 *   keys and JWTs, `name=value` pairs with a sensitive name, and MASK_PATTERNS.
 *
 * Masking is conservative: a Luhn-valid 16-digit order number is masked too; the
 * reveal permission (audited) shows the original.
 */

export const MASK = "[masked]";

export interface MaskedField {
  /** body, body.card.number, body.items[0].email, headers[2] */
  path: string;
  /** Why: key:password, card, email, token, iban, header:authorization, pattern:<name> … */
  rule: string;
}

export type HeaderPairs = [string, string][];

export interface StoredResponseView {
  code: number | null;
  headers: HeaderPairs | null;
  body: string | null;
}

export interface MaskResult extends StoredResponseView {
  masked: MaskedField[];
}

interface TextRule {
  name: string;
  re: RegExp;
  replace: (match: string, groups: string[]) => string | null;
}

export interface MaskRules {
  keys: Set<string>;
  keySuffixes: string[];
  authHeaders: Set<string>;
  cookieHeaders: Set<string>;
  secretHeaders: Set<string>;
  text: TextRule[];
}

const normKey = (k: string) => k.toLowerCase().replace(/[^a-z0-9]/g, "");

const DEFAULT_KEYS = [
  "password",
  "passwd",
  "pwd",
  "passphrase",
  "secret",
  "client_secret",
  "api_secret",
  "token",
  "access_token",
  "refresh_token",
  "id_token",
  "auth_token",
  "session_token",
  "api_key",
  "apikey",
  "private_key",
  "authorization",
  "cookie",
  "card_number",
  "cardnumber",
  "pan",
  "cvc",
  "cvv",
  "cvv2",
  "cvc2",
  "security_code",
  "iban",
  "account_number",
  "ssn",
  "pin",
];
const KEY_SUFFIXES = ["password", "secret", "token", "apikey"];
const SECRET_HEADERS = ["x-api-key", "api-key", "x-auth-token", "x-access-token", "x-csrf-token", "x-amz-security-token"];

export function luhnValid(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

/** 13–19 digits, a card network's first digit (2–6), Luhn-valid. */
export function looksLikeCard(digits: string): boolean {
  return /^[2-6]\d{12,18}$/.test(digits) && luhnValid(digits);
}

function ibanValid(compact: string): boolean {
  if (!/^[A-Z]{2}\d{2}[A-Z0-9]{11,30}$/.test(compact)) return false;
  const moved = compact.slice(4) + compact.slice(0, 4);
  let rem = 0;
  for (const ch of moved) {
    const v = ch >= "A" ? String(ch.charCodeAt(0) - 55) : ch;
    for (const d of v) rem = (rem * 10 + (d.charCodeAt(0) - 48)) % 97;
  }
  return rem === 1;
}

/** Every digit but the last four becomes *, separators stay. */
function keepLastFour(text: string): string {
  let seen = 0;
  const total = text.replace(/\D/g, "").length;
  return text.replace(/\d/g, (d) => (++seen > total - 4 ? d : "*"));
}

function buildTextRules(keys: Set<string>, suffixes: string[], extra: MaskSettings["extraPatterns"]): TextRule[] {
  const sensitiveName = (name: string) => keys.has(normKey(name)) || suffixes.some((s) => normKey(name).endsWith(s));
  return [
    {
      name: "key",
      re: /\b([A-Za-z][A-Za-z0-9_.-]{1,63})=([^&\s;"',]+)/g,
      replace: (m, [name]) => (sensitiveName(name) ? `${name}=${MASK}` : null),
    },
    // "Basic authentication failed" is prose: a Basic credential decodes to user:password,
    // a Bearer one is long or has a digit or symbol in it.
    {
      name: "token",
      re: /\b(Bearer|Basic)\s+([A-Za-z0-9._~+/=-]{8,})/g,
      replace: (_m, [scheme, credential]) => {
        const looksReal =
          scheme === "Basic"
            ? /^[\x20-\x7e]*:[\x20-\x7e]*$/.test(Buffer.from(credential, "base64").toString("latin1"))
            : credential.length >= 20 || /[0-9._~+/=-]/.test(credential);
        return looksReal ? `${scheme} ${MASK}` : null;
      },
    },
    {
      name: "token",
      re: /\b(?:(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{8,}|whsec_[A-Za-z0-9+/=]{8,}|ic_[a-z0-9]{12}_[A-Za-z0-9_-]{43}|gh[pousr]_[A-Za-z0-9]{30,}|AKIA[0-9A-Z]{16}|xox[abpr]-[A-Za-z0-9-]{10,})\b/g,
      replace: () => MASK,
    },
    { name: "token", re: /\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}/g, replace: () => MASK },
    ...extra.map((p) => {
      const flags = p.flags ?? "";
      return { name: `pattern:${p.name}`, re: new RegExp(p.pattern, flags.includes("g") ? flags : `${flags}g`), replace: () => MASK };
    }),
    {
      name: "card",
      re: /(?<!\d)\d(?:[ -]?\d){12,18}(?!\d)/g,
      replace: (m) => (looksLikeCard(m.replace(/\D/g, "")) ? keepLastFour(m) : null),
    },
    {
      name: "iban",
      re: /\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b/g,
      replace: (m) => {
        const compact = m.replace(/ /g, "");
        return ibanValid(compact) ? compact.slice(0, 2) + "*".repeat(compact.length - 6) + compact.slice(-4) : null;
      },
    },
    {
      name: "email",
      re: /\b([A-Za-z0-9._%+-])[A-Za-z0-9._%+-]*@([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,})\b/g,
      replace: (_m, [first, domain]) => `${first}***@${domain}`,
    },
  ];
}

export function buildMaskRules(settings: MaskSettings = readSideConfig().mask): MaskRules {
  const keys = new Set([...DEFAULT_KEYS, ...settings.extraKeys].map(normKey));
  return {
    keys,
    keySuffixes: KEY_SUFFIXES,
    authHeaders: new Set(["authorization", "proxy-authorization"]),
    cookieHeaders: new Set(["cookie", "set-cookie"]),
    secretHeaders: new Set([...SECRET_HEADERS, ...settings.extraHeaders.map((h) => h.toLowerCase())]),
    text: buildTextRules(keys, KEY_SUFFIXES, settings.extraPatterns),
  };
}

let defaultRules: MaskRules | undefined;
const rulesOrDefault = (rules?: MaskRules) => rules ?? (defaultRules ??= buildMaskRules());

/** Applies the text rules; returns the masked text and the rules that fired. */
export function maskText(text: string, rules?: MaskRules): { text: string; fired: string[] } {
  const fired = new Set<string>();
  let out = text;
  for (const rule of rulesOrDefault(rules).text) {
    rule.re.lastIndex = 0;
    out = out.replace(rule.re, (...args: unknown[]) => {
      const match = args[0] as string;
      // (match, ...groups, offset, input[, namedGroups]): the groups end at the numeric offset.
      const groups = args.slice(
        1,
        args.findIndex((a, k) => k > 0 && typeof a === "number"),
      ) as string[];
      const r = rule.replace(match, groups);
      if (r === null || r === match) return match;
      fired.add(rule.name);
      return r;
    });
  }
  return { text: out, fired: [...fired] };
}

function isSensitiveKey(key: string, rules: MaskRules): string | null {
  const n = normKey(key);
  if (rules.keys.has(n) || rules.keySuffixes.some((s) => n.endsWith(s))) return n;
  return null;
}

// --- JSON, walked on its text -----------------------------------------------------

class NotJson extends Error {}

const STRING_RE = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;
const NUMBER_RE = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const MAX_DEPTH = 256;

const childPath = (path: string, key: string) => (/^[A-Za-z_$][\w$-]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`);

/** Masks a JSON document on its text; null when the text is not JSON. */
function maskJson(s: string, rules: MaskRules, masked: MaskedField[]): string | null {
  const edits: [number, number, string][] = [];
  let i = 0;
  const ws = () => {
    while (i < s.length && (s[i] === " " || s[i] === "\n" || s[i] === "\r" || s[i] === "\t")) i++;
  };
  const expect = (ch: string) => {
    if (s[i] !== ch) throw new NotJson();
    i++;
  };
  const token = (re: RegExp) => {
    re.lastIndex = i;
    const m = re.exec(s);
    if (!m) throw new NotJson();
    i += m[0].length;
    return m[0];
  };
  const value = (path: string, record: boolean, depth: number): void => {
    if (depth > MAX_DEPTH) throw new NotJson();
    ws();
    const start = i;
    const c = s[i];
    if (c === "{") {
      i++;
      ws();
      if (s[i] === "}") return void i++;
      for (;;) {
        ws();
        const key = JSON.parse(token(STRING_RE)) as string;
        ws();
        expect(":");
        ws();
        const vStart = i;
        const rule = record ? isSensitiveKey(key, rules) : null;
        value(childPath(path, key), record && !rule, depth + 1);
        if (rule) {
          const raw = s.slice(vStart, i);
          if (raw !== "null" && raw !== '""') {
            edits.push([vStart, i, JSON.stringify(MASK)]);
            masked.push({ path: childPath(path, key), rule: `key:${rule}` });
          }
        }
        ws();
        if (s[i] === ",") i++;
        else return expect("}");
      }
    }
    if (c === "[") {
      i++;
      ws();
      if (s[i] === "]") return void i++;
      for (let k = 0; ; k++) {
        value(`${path}[${k}]`, record, depth + 1);
        ws();
        if (s[i] === ",") i++;
        else return expect("]");
      }
    }
    if (c === '"') {
      const raw = token(STRING_RE);
      if (!record) return;
      const r = maskText(JSON.parse(raw) as string, rules);
      if (r.fired.length) {
        edits.push([start, i, JSON.stringify(r.text)]);
        for (const rule of r.fired) masked.push({ path, rule });
      }
      return;
    }
    if (c === "-" || (c >= "0" && c <= "9")) {
      const raw = token(NUMBER_RE);
      if (record && looksLikeCard(raw)) {
        edits.push([start, i, JSON.stringify(keepLastFour(raw))]);
        masked.push({ path, rule: "card" });
      }
      return;
    }
    for (const lit of ["true", "false", "null"]) {
      if (s.startsWith(lit, i)) return void (i += lit.length);
    }
    throw new NotJson();
  };
  try {
    value("body", true, 0);
    ws();
    if (i !== s.length) throw new NotJson();
  } catch (err) {
    if (err instanceof NotJson || err instanceof SyntaxError || err instanceof RangeError) return null;
    throw err;
  }
  let out = "";
  let at = 0;
  for (const [from, to, text] of edits.sort((a, b) => a[0] - b[0])) {
    out += s.slice(at, from) + text;
    at = to;
  }
  return out + s.slice(at);
}

/** Masks the body: JSON on its text, anything else with the text rules. */
export function maskBody(body: string, rules?: MaskRules): { body: string; masked: MaskedField[] } {
  const r = rulesOrDefault(rules);
  const masked: MaskedField[] = [];
  const trimmed = body.trimStart();
  if (trimmed.startsWith("{") || trimmed.startsWith("[") || trimmed.startsWith('"')) {
    const json = maskJson(body, r, masked);
    if (json !== null) return { body: json, masked };
    masked.length = 0;
  }
  const t = maskText(body, r);
  return { body: t.text, masked: t.fired.map((rule) => ({ path: "body", rule })) };
}

function maskCookiePairs(value: string, onlyFirst: boolean): string {
  const parts = value.split(";");
  return parts
    .map((part, k) => {
      if (onlyFirst && k > 0) return part;
      const eq = part.indexOf("=");
      return eq < 0 ? part : `${part.slice(0, eq + 1)}${MASK}`;
    })
    .join(";");
}

export function maskHeaders(headers: HeaderPairs, rules?: MaskRules): { headers: HeaderPairs; masked: MaskedField[] } {
  const r = rulesOrDefault(rules);
  const masked: MaskedField[] = [];
  const out = headers.map(([name, value], k): [string, string] => {
    const lower = name.toLowerCase();
    const path = `headers[${k}]`;
    if (r.authHeaders.has(lower)) {
      masked.push({ path, rule: `header:${lower}` });
      const m = /^([A-Za-z][A-Za-z0-9-]*)\s+\S/.exec(value);
      return [name, m ? `${m[1]} ${MASK}` : MASK];
    }
    if (r.cookieHeaders.has(lower)) {
      masked.push({ path, rule: `header:${lower}` });
      return [name, maskCookiePairs(value, lower === "set-cookie")];
    }
    if (r.secretHeaders.has(lower)) {
      masked.push({ path, rule: `header:${lower}` });
      return [name, MASK];
    }
    const t = maskText(value, r);
    for (const rule of t.fired) masked.push({ path, rule });
    return [name, t.text];
  });
  return { headers: out, masked };
}

/** The stored response with sensitive data masked, and where. */
export function maskResponse(resp: StoredResponseView, rules?: MaskRules): MaskResult {
  const h = resp.headers ? maskHeaders(resp.headers, rules) : { headers: null, masked: [] };
  const b = resp.body !== null ? maskBody(resp.body, rules) : { body: null, masked: [] };
  return { code: resp.code, headers: h.headers, body: b.body, masked: [...h.masked, ...b.masked] };
}
