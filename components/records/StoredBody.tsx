"use client";

import type { ReactNode } from "react";
import type { MaskedField } from "@/lib/records/mask";
import { ScrollBox } from "@/components/ScrollBox";

/**
 * A stored response body, pretty-printed when it is JSON, with the places the masker
 * reported highlighted (paths as lib/records/mask.ts writes them: body, body.card.number,
 * body.items[0]["weird key"]). JSON is re-indented from its TEXT, token by token — never
 * through JSON.parse, which would round a 16-digit number and show a revealed card number
 * wrong. Text that is not JSON is shown as is, with "[masked]" and "****" runs highlighted.
 */

type Node = { kind: "object"; entries: { key: string; raw: string; value: Node }[] } | { kind: "array"; items: Node[] } | { kind: "scalar"; raw: string };

const STRING_RE = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;
const NUMBER_RE = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

function parseJsonText(s: string): Node | null {
  let i = 0;
  const ws = () => {
    while (i < s.length && " \n\r\t".includes(s[i])) i++;
  };
  const token = (re: RegExp): string => {
    re.lastIndex = i;
    const m = re.exec(s);
    if (!m) throw new Error("not JSON");
    i += m[0].length;
    return m[0];
  };
  const value = (depth: number): Node => {
    if (depth > 200) throw new Error("too deep");
    ws();
    const c = s[i];
    if (c === "{") {
      i++;
      const entries: { key: string; raw: string; value: Node }[] = [];
      ws();
      if (s[i] === "}") {
        i++;
        return { kind: "object", entries };
      }
      for (;;) {
        ws();
        const raw = token(STRING_RE);
        ws();
        if (s[i++] !== ":") throw new Error("not JSON");
        entries.push({ key: JSON.parse(raw) as string, raw, value: value(depth + 1) });
        ws();
        if (s[i] === ",") i++;
        else if (s[i++] === "}") return { kind: "object", entries };
        else throw new Error("not JSON");
      }
    }
    if (c === "[") {
      i++;
      const items: Node[] = [];
      ws();
      if (s[i] === "]") {
        i++;
        return { kind: "array", items };
      }
      for (;;) {
        items.push(value(depth + 1));
        ws();
        if (s[i] === ",") i++;
        else if (s[i++] === "]") return { kind: "array", items };
        else throw new Error("not JSON");
      }
    }
    if (c === '"') return { kind: "scalar", raw: token(STRING_RE) };
    if (c === "-" || (c >= "0" && c <= "9")) return { kind: "scalar", raw: token(NUMBER_RE) };
    for (const lit of ["true", "false", "null"]) {
      if (s.startsWith(lit, i)) {
        i += lit.length;
        return { kind: "scalar", raw: lit };
      }
    }
    throw new Error("not JSON");
  };
  try {
    const node = value(0);
    ws();
    return i === s.length ? node : null;
  } catch {
    return null;
  }
}

/** The masker's path syntax (lib/records/mask.ts childPath). */
const childPath = (path: string, key: string) => (/^[A-Za-z_$][\w$-]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`);

function render(node: Node, path: string, indent: string, marks: Map<string, string[]>, mode: "masked" | "revealed"): ReactNode {
  const inner = (() => {
    if (node.kind === "scalar") return <span className={node.raw.startsWith('"') ? "json-string" : "json-literal"}>{node.raw}</span>;
    const next = indent + "  ";
    if (node.kind === "array") {
      if (node.items.length === 0) return "[]";
      return (
        <>
          {"[\n"}
          {node.items.map((item, k) => (
            <span key={k}>
              {next}
              {render(item, `${path}[${k}]`, next, marks, mode)}
              {k < node.items.length - 1 ? ",\n" : "\n"}
            </span>
          ))}
          {indent}]
        </>
      );
    }
    if (node.entries.length === 0) return "{}";
    return (
      <>
        {"{\n"}
        {node.entries.map((e, k) => (
          <span key={k}>
            {next}
            <span className="json-key">{e.raw}</span>
            {": "}
            {render(e.value, childPath(path, e.key), next, marks, mode)}
            {k < node.entries.length - 1 ? ",\n" : "\n"}
          </span>
        ))}
        {indent}
        {"}"}
      </>
    );
  })();
  const rules = marks.get(path);
  if (!rules) return inner;
  return (
    <mark className={`masked-value ${mode}`} data-testid="masked-value" title={`${mode === "masked" ? "masked" : "masked for others"}: ${rules.join(", ")}`}>
      {inner}
    </mark>
  );
}

/** Plain text with what the masker leaves behind highlighted. */
function highlightText(text: string, mode: "masked" | "revealed"): ReactNode[] {
  if (mode === "revealed") return [text];
  const out: ReactNode[] = [];
  const re = /\[masked\]|\*{3,}/g;
  let at = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    out.push(text.slice(at, m.index));
    out.push(
      <mark key={m.index} className="masked-value masked" data-testid="masked-value">
        {m[0]}
      </mark>,
    );
    at = m.index + m[0].length;
  }
  out.push(text.slice(at));
  return out;
}

export function StoredBody({ body, masked, mode, testId }: { body: string; masked: MaskedField[]; mode: "masked" | "revealed"; testId?: string }) {
  const marks = new Map<string, string[]>();
  for (const m of masked)
    if (m.path === "body" || m.path.startsWith("body.") || m.path.startsWith("body[")) marks.set(m.path, [...(marks.get(m.path) ?? []), m.rule]);
  const tree = body.trim() ? parseJsonText(body) : null;
  return (
    <ScrollBox as="pre" className="stored-body" label="Stored response body" testId={testId}>
      {tree ? (
        render(tree, "body", "", marks, mode)
      ) : marks.has("body") && mode === "revealed" ? (
        <mark className="masked-value revealed">{body}</mark>
      ) : (
        highlightText(body, mode)
      )}
    </ScrollBox>
  );
}
