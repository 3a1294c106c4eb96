/**
 * Path templates of google.api.http rules (google/api/http.proto):
 *
 *     Template = "/" Segments [ Verb ] ;
 *     Segments = Segment { "/" Segment } ;
 *     Segment  = "*" | "**" | LITERAL | Variable ;
 *     Variable = "{" FieldPath [ "=" Segments ] "}" ;
 *     FieldPath = IDENT { "." IDENT } ;
 *     Verb     = ":" LITERAL ;
 *
 * A variable without "=" matches one segment. "**" matches the rest of the
 * path and may only come last.
 */

type Part =
  | { kind: "literal"; value: string }
  | { kind: "wildcard" } // *
  | { kind: "rest" } // **
  | { kind: "variable"; fieldPath: string[]; parts: Part[] };

/** A compiled path template. */
export interface PathTemplate {
  /** The template as written. */
  readonly source: string;
  /** Literal segments count, used to prefer specific routes over general ones. */
  readonly specificity: number;
  /** Field paths the template binds, for example [["id"], ["message", "id"]]. */
  readonly fieldPaths: string[][];
  /**
   * Matches a request path (without query, still percent-encoded). Returns the
   * variables as field path (dotted) to decoded value, or undefined.
   */
  match(path: string): Map<string, string> | undefined;
}

/** Raised for a template that does not follow the grammar; names the template. */
export class PathTemplateError extends Error {}

function parseSegments(text: string, template: string): Part[] {
  const parts: Part[] = [];
  let i = 0;
  while (i <= text.length) {
    if (text[i] === "{") {
      const close = text.indexOf("}", i);
      if (close < 0) throw new PathTemplateError(`unclosed variable in path template ${template}`);
      const inner = text.slice(i + 1, close);
      const eq = inner.indexOf("=");
      const fieldPath = (eq < 0 ? inner : inner.slice(0, eq)).split(".");
      if (fieldPath.some((p) => !/^[A-Za-z_][A-Za-z0-9_]*$/.test(p))) {
        throw new PathTemplateError(`bad field path "${inner}" in path template ${template}`);
      }
      const sub = eq < 0 ? [{ kind: "wildcard" } as Part] : parseSegments(inner.slice(eq + 1), template);
      parts.push({ kind: "variable", fieldPath, parts: sub });
      i = close + 1;
      if (i < text.length && text[i] !== "/") throw new PathTemplateError(`text after a variable in ${template}`);
      i++;
      continue;
    }
    let end = text.indexOf("/", i);
    if (end < 0) end = text.length;
    const segment = text.slice(i, end);
    if (segment === "*") parts.push({ kind: "wildcard" });
    else if (segment === "**") parts.push({ kind: "rest" });
    else if (segment === "" || segment.includes("{")) throw new PathTemplateError(`empty or bad segment in path template ${template}`);
    else parts.push({ kind: "literal", value: segment });
    i = end + 1;
  }
  return parts;
}

function flatten(parts: Part[]): Part[] {
  return parts.flatMap((p) => (p.kind === "variable" ? flatten(p.parts) : [p]));
}

/**
 * Compiles a google.api.http path template such as "/v1/messages/{id}" or
 * "/console/v1/api_keys/{id}:revoke".
 *
 * @throws PathTemplateError when the template breaks the grammar.
 */
export function compilePathTemplate(template: string): PathTemplate {
  if (!template.startsWith("/")) throw new PathTemplateError(`path template must start with "/": ${template}`);
  let body = template.slice(1);
  let verb: string | undefined;
  const colon = body.lastIndexOf(":");
  if (colon > body.lastIndexOf("/") && colon > body.lastIndexOf("}")) {
    verb = body.slice(colon + 1);
    body = body.slice(0, colon);
  }
  const parts = parseSegments(body, template);
  const flat = flatten(parts);
  const restAt = flat.findIndex((p) => p.kind === "rest");
  if (restAt >= 0 && restAt !== flat.length - 1) throw new PathTemplateError(`"**" must come last in ${template}`);
  const fieldPaths = parts.filter((p) => p.kind === "variable").map((p) => (p as { fieldPath: string[] }).fieldPath);

  function match(path: string): Map<string, string> | undefined {
    let rest = path.startsWith("/") ? path.slice(1) : path;
    if (verb !== undefined) {
      if (!rest.endsWith(`:${verb}`)) return undefined;
      rest = rest.slice(0, -(verb.length + 1));
    } else if (rest.slice(rest.lastIndexOf("/") + 1).includes(":")) {
      return undefined;
    }
    const segments = rest.split("/");
    const values = new Map<string, string>();
    let index = 0;
    const take = (part: Part): string[] | undefined => {
      if (part.kind === "rest") {
        const taken = segments.slice(index);
        index = segments.length;
        return taken.length > 0 ? taken : undefined;
      }
      const segment = segments[index];
      if (segment === undefined || segment === "") return undefined;
      if (part.kind === "literal" && segment !== part.value) return undefined;
      index++;
      return [segment];
    };
    for (const part of parts) {
      if (part.kind !== "variable") {
        if (!take(part)) return undefined;
        continue;
      }
      const taken: string[] = [];
      for (const sub of flatten(part.parts)) {
        const got = take(sub);
        if (!got) return undefined;
        taken.push(...got);
      }
      try {
        const multi = part.parts.length > 1 || part.parts[0]?.kind === "rest";
        values.set(part.fieldPath.join("."), multi ? taken.map(decodeURIComponent).join("/") : decodeURIComponent(taken.join("/")));
      } catch {
        return undefined; // malformed percent-encoding
      }
    }
    return index === segments.length ? values : undefined;
  }

  return {
    source: template,
    specificity: flat.filter((p) => p.kind === "literal").length * 2 + (verb ? 1 : 0),
    fieldPaths,
    match,
  };
}
