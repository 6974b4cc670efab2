import type { OpenApiDocument } from "@/lib/api/openapi";

type Operation = {
  operationId: string;
  summary: string;
  description: string;
  tags: string[];
  parameters?: { name: string; in: string; required: boolean; description?: string; schema: Record<string, unknown> }[];
  requestBody?: { content: { "application/json": { schema: Record<string, unknown> } } };
  responses: Record<string, { description: string }>;
};

/** Short type text for a JSON Schema node: "string (1–255)", "enum: a | b", "integer ≥ 1". */
function typeText(s: Record<string, unknown>): string {
  if (Array.isArray(s.enum)) return s.enum.map(String).join(" | ");
  if (s.const !== undefined) return JSON.stringify(s.const);
  if (Array.isArray(s.anyOf)) return (s.anyOf as Record<string, unknown>[]).map(typeText).join(" or ");
  const t = String(s.type ?? "any");
  const bits: string[] = [];
  if (s.minLength !== undefined || s.maxLength !== undefined) bits.push(`${s.minLength ?? 0}–${s.maxLength ?? "∞"} chars`);
  if (s.minimum !== undefined && Number(s.minimum) > -1e15) bits.push(`≥ ${s.minimum}`);
  if (s.maximum !== undefined && Number(s.maximum) < 1e15) bits.push(`≤ ${s.maximum}`);
  if (s.format) bits.push(String(s.format));
  if (t === "array" && s.items) return `array of ${typeText(s.items as Record<string, unknown>)}`;
  return bits.length ? `${t} (${bits.join(", ")})` : t;
}

function Fields({ schema }: { schema: Record<string, unknown> }) {
  const props = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
  const required = new Set((schema.required ?? []) as string[]);
  const names = Object.keys(props);
  if (!names.length) return <pre className="mono">{JSON.stringify(schema, null, 2)}</pre>;
  return (
    <table className="data-table compact">
      <tbody>
        {names.map((n) => (
          <tr key={n}>
            <td className="mono">
              {n}
              {required.has(n) ? " *" : ""}
            </td>
            <td>{typeText(props[n])}</td>
            <td className="subtle">{String(props[n].description ?? "")}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function ApiReference({ document: doc }: { document: OpenApiDocument }) {
  const ops = Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods as Record<string, Operation>).map(([method, op]) => ({ path, method: method.toUpperCase(), op })),
  );
  const tags = [...new Set(ops.map((o) => o.op.tags[0]))].sort();
  return (
    <>
      <div className="toolbar">
        <div>
          <h1>API reference</h1>
          <p className="subtle">
            {doc.info.description} Machine-readable: <a href="/api/v1/openapi.json">/api/v1/openapi.json</a> (OpenAPI {doc.openapi}). Authenticate with{" "}
            <code>Authorization: Bearer &lt;token&gt;</code> (Admin › API tokens).
          </p>
        </div>
      </div>
      <nav className="panel api-toc" aria-label="API sections">
        {tags.map((t) => (
          <a key={t} href={`#tag-${t}`}>
            {t}
          </a>
        ))}
      </nav>
      {tags.map((tag) => (
        <section key={tag} id={`tag-${tag}`} className="api-tag" aria-label={tag}>
          <h2>{tag}</h2>
          {ops
            .filter((o) => o.op.tags[0] === tag)
            .map(({ path, method, op }) => (
              <details key={op.operationId} className="panel api-op" data-testid={`op-${method} ${path}`}>
                <summary>
                  <span className={`api-method api-${method.toLowerCase()}`}>{method}</span> <span className="mono">{path}</span> — {op.summary}
                </summary>
                <p className="subtle">{op.description}</p>
                {op.parameters?.length ? (
                  <>
                    <h3>Parameters</h3>
                    <table className="data-table compact">
                      <tbody>
                        {op.parameters.map((p) => (
                          <tr key={`${p.in}:${p.name}`}>
                            <td className="mono">
                              {p.name}
                              {p.required ? " *" : ""}
                            </td>
                            <td>{p.in}</td>
                            <td>{typeText(p.schema)}</td>
                            <td className="subtle">{p.description ?? ""}</td>
                          </tr>
                        ))}
                      </tbody>
                    </table>
                  </>
                ) : null}
                {op.requestBody ? (
                  <>
                    <h3>JSON body</h3>
                    <Fields schema={op.requestBody.content["application/json"].schema} />
                  </>
                ) : null}
                <h3>Responses</h3>
                <ul className="api-responses">
                  {Object.entries(op.responses).map(([code, r]) => (
                    <li key={code}>
                      <span className="mono">{code}</span> {r.description}
                    </li>
                  ))}
                </ul>
              </details>
            ))}
        </section>
      ))}
    </>
  );
}
