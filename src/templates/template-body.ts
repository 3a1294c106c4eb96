/** Largest template body and rendered message, in characters (WhatsApp's limit for a template body). */
export const MAX_BODY_CHARS = 1024;
/** Most variables a body may have. */
export const MAX_VARIABLES = 100;

const VARIABLE = /\{\{\s*([^{}]*?)\s*\}\}/g;
const VARIABLE_NAME = /^[a-z_][a-z0-9_]{0,63}$/;

/** The rule a variable name must meet, as said in errors. */
export const VARIABLE_NAME_RULE = "must be a lower-case letter or '_' followed by up to 63 lower-case letters, digits or '_'";

/** What a body's variables are, or what is wrong with them. */
export interface ParsedBody {
  /** Variable names in order of first use, without repeats. */
  variables: string[];
  /** Problems found, for example a badly named variable; empty when the body is fine. */
  problems: string[];
}

/**
 * Reads the variables of a template body: each `{{name}}` (spaces inside the
 * braces are allowed). A name breaking VARIABLE_NAME_RULE, or an unmatched
 * `{{` or `}}`, is a problem.
 */
export function parseBody(body: string): ParsedBody {
  const variables: string[] = [];
  const problems: string[] = [];
  for (const match of body.matchAll(VARIABLE)) {
    const name = match[1] as string;
    if (!VARIABLE_NAME.test(name)) problems.push(`variable {{${name}}}: name ${VARIABLE_NAME_RULE}`);
    else if (!variables.includes(name)) variables.push(name);
  }
  const rest = body.replace(VARIABLE, "");
  if (rest.includes("{{") || rest.includes("}}")) problems.push("has an unmatched '{{' or '}}'");
  return { variables, problems };
}

/** Fills each `{{name}}` of `body` with `values[name]`, or "" when absent. */
export function renderBody(body: string, values: Readonly<Record<string, string>>): string {
  return body.replace(VARIABLE, (_, name: string) => values[name] ?? "");
}
