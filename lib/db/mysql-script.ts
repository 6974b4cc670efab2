/**
 * Splits a MySQL/MariaDB script into statements, as the `mysql` client does with its default
 * delimiter but without needing DELIMITER: quotes ('…', "…", `…`), comments (-- , #, /* *\/)
 * and the BEGIN … END bodies of CREATE TRIGGER/PROCEDURE/FUNCTION/EVENT are kept whole.
 * Trigger bodies are written BEGIN … END (prisma/mysql/migrations; ADR 0012). The runner
 * applies a migration statement by statement with it (no transactional DDL: it must know
 * which statement failed), and txExecutor runs a script through Prisma with it.
 */
export function splitMysqlStatements(script: string): string[] {
  const out: string[] = [];
  let start = 0;
  let blocks = 0; // open BEGIN … END blocks of a stored program
  let cases = 0; // open CASE … END (CASE) inside them
  let program = false; // the statement so far is CREATE … TRIGGER|PROCEDURE|FUNCTION|EVENT
  let i = 0;
  const push = (end: number) => {
    const s = script.slice(start, end).trim();
    if (withoutComments(s)) out.push(s);
    start = end + 1;
    blocks = cases = 0;
    program = false;
  };
  while (i < script.length) {
    const c = script[i];
    if ((c === "-" && script[i + 1] === "-" && /\s/.test(script[i + 2] ?? " ")) || c === "#") {
      const end = script.indexOf("\n", i);
      i = end < 0 ? script.length : end + 1;
    } else if (c === "/" && script[i + 1] === "*") {
      const end = script.indexOf("*/", i + 2);
      i = end < 0 ? script.length : end + 2;
    } else if (c === "'" || c === '"' || c === "`") {
      let j = i + 1;
      while (j < script.length) {
        if (script[j] === "\\" && c !== "`") j += 2;
        else if (script[j] === c && script[j + 1] === c) j += 2;
        else if (script[j] === c) break;
        else j++;
      }
      i = j + 1;
    } else if (c === ";") {
      if (blocks === 0) push(i);
      i++;
    } else if (/[A-Za-z_]/.test(c) && !/[\w$]/.test(script[i - 1] ?? " ")) {
      const word = /^[A-Za-z_][\w$]*/.exec(script.slice(i))![0];
      const upper = word.toUpperCase();
      const after = script.slice(i + word.length);
      if (!program && ["TRIGGER", "PROCEDURE", "FUNCTION", "EVENT"].includes(upper) && /^CREATE\b/i.test(withoutComments(script.slice(start, i))))
        program = true;
      else if (program && upper === "BEGIN" && !/^\s*(;|WORK\b|$)/i.test(after)) blocks++;
      else if (blocks > 0 && upper === "CASE") cases++;
      else if (blocks > 0 && upper === "END") {
        const next = /^\s*([A-Za-z]+)/.exec(after);
        const closes = next?.[1].toUpperCase();
        if (closes === "CASE") {
          cases = Math.max(0, cases - 1);
          i += word.length + next![0].length; // END CASE: the CASE word opens nothing
          continue;
        }
        if (!["IF", "LOOP", "WHILE", "REPEAT"].includes(closes ?? "")) {
          if (cases > 0) cases--;
          else blocks--;
        }
      }
      i += word.length;
    } else {
      i++;
    }
  }
  push(script.length);
  return out;
}

/** The text without its leading whitespace and comments. */
export function withoutComments(s: string): string {
  return s.replace(/^(\s|--\s[^\n]*(\n|$)|#[^\n]*(\n|$)|\/\*[\s\S]*?\*\/)+/, "");
}
