/**
 * Redis glob patterns (KEYS / SCAN MATCH): `*`, `?`, `[abc]`, `[^a]`, `[a-z]`, `\x`.
 * The census lets Redis match (SCAN MATCH); a key looked up by name is checked here
 * against its store's pattern, so a key outside it is never read as a record.
 */
export function globToRegExp(pattern: string): RegExp {
  let re = "^";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === "*") re += "[\\s\\S]*";
    else if (c === "?") re += "[\\s\\S]";
    else if (c === "\\" && i + 1 < pattern.length) re += escapeRe(pattern[++i]);
    else if (c === "[") {
      const end = pattern.indexOf("]", i + 2);
      if (end < 0) {
        re += "\\[";
        continue;
      }
      let body = pattern.slice(i + 1, end);
      const negate = body.startsWith("^");
      if (negate) body = body.slice(1);
      re += `[${negate ? "^" : ""}${body.replace(/[\\\]]/g, (x) => `\\${x}`)}]`;
      i = end;
    } else re += escapeRe(c);
  }
  return new RegExp(`${re}$`);
}

const escapeRe = (c: string) => c.replace(/[.*+?^${}()|[\]\\/-]/g, (x) => `\\${x}`);

/** The glob matching exactly the keys that start with `prefix` (its special characters escaped). */
export function prefixGlob(prefix: string): string {
  return `${prefix.replace(/[*?[\]\\]/g, (x) => `\\${x}`)}*`;
}
