import { createRegistry, isFieldSet, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import type { FieldMask } from "@bufbuild/protobuf/wkt";
import type { Path } from "@bufbuild/protobuf/reflect";
import { createValidator, type Violation } from "@bufbuild/protovalidate";
import { RE2JS } from "@bufbuild/re2";
import { file_messaging_v1_field_rules } from "../../gen/messaging/v1/field_rules_pb.js";
import type { FieldViolation } from "../shared/errors.js";
import { integerRange, rangeText } from "./integer-range.js";

/*
 * The input rules of the contract: protovalidate's `(buf.validate.field)` and
 * `(buf.validate.message)` annotations in proto/, with the shared predefined
 * rules of messaging/v1/field_rules.proto, evaluated here. The gateway enforces
 * them for every protocol (src/gateway/validation.ts); services read them for
 * updates (readUpdate) and client-streamed messages. Rules that need the
 * database (a sender of this workspace, the variables of a template) stay in
 * the services.
 */

/** Compiled matchers by pattern (the schema's patterns: a fixed, small set). */
const matchers = new Map<string, (against: string) => boolean>();

/**
 * The regex matcher of the rules (CEL `matches()`, `string.pattern`): RE2
 * syntax, as protovalidate's contract says and every language's validator of
 * these protos reads it, so each pattern is compiled by RE2 once (one RE2
 * refuses is refused here too), then matched by the platform's RegExp with
 * the `u` flag (code points, as RE2 matches), which is several times faster
 * than the RE2 port and allocates nothing per match (the port's DFA made a
 * Set per step: 7% of the service's allocation under the send benchmark).
 * Every pattern comes from the schema (proto/), never from input, as with
 * protovalidate's own fixed formats, which it matches with RegExp for the
 * same reason. A pattern in RE2 syntax the platform reads otherwise or not at
 * all (`(?i)`, `\pL`, `\z`) is matched by RE2.
 *
 * @throws Error (RE2's) for a pattern that is not RE2 syntax: a mistake in the protos, answered as `internal`.
 */
export function matchRegex(pattern: string, against: string): boolean {
  let match = matchers.get(pattern);
  if (!match) {
    const re2 = RE2JS.compile(pattern);
    const platform = platformReads(pattern) ? new RegExp(pattern, "u") : null;
    match = platform ? (text) => platform.test(text) : (text) => re2.test(text);
    if (matchers.size >= 1024) matchers.clear(); // bounded, as protovalidate's own cache, should a rule build patterns
    matchers.set(pattern, match);
  }
  return match(against);
}

/**
 * Whether RegExp (with `u`) reads `pattern` as RE2 does: plain syntax only. No dot (RE2's matches a line
 * end other than \n), no "(?" (flags, named groups), no POSIX class "[:", and of the escapes only \t \n \r
 * \f \v \d, \xHH and escaped punctuation; then what RegExp compiles.
 */
function platformReads(pattern: string): boolean {
  if (/\.|\(\?|\[:/.test(pattern) || /\\(?![tnrfvd]|x[0-9A-Fa-f]{2}|[^A-Za-z0-9])/.test(pattern)) return false;
  try {
    new RegExp(pattern, "u");
    return true;
  } catch {
    return false;
  }
}

const validator = createValidator({ registry: createRegistry(file_messaging_v1_field_rules), regexMatch: matchRegex });

/**
 * A request field as errors name it: snake_case proto names joined by ".",
 * list items as `[i]`, map entries as `.key` (`template.variables.name`,
 * `files[0].field`); `(body)` for a rule of the whole message.
 */
export function fieldPathOf(path: Path): string {
  let out = "";
  for (const item of path) {
    if (item.kind === "list_sub") out += `[${item.index}]`;
    else if (item.kind === "map_sub") out += `.${String(item.key)}`;
    else out += (out === "" ? "" : ".") + item.name;
  }
  return out || "(body)";
}

/**
 * The rule a violation broke, worded as the service's other errors are
 * ("must be at most 200 characters"): protovalidate's message without its
 * leading "value" / "value length", ranges said as "from 1 to 100". An
 * integer out of its bounds is told its whole range ("must be from 0 to
 * 2147483647" for `gte: 0` on an int32), as one past its type is when the
 * request is read (src/contract/integer-range.ts).
 */
function ruleText(violation: Violation): string {
  const last = violation.field.at(-1);
  if (last?.kind === "field" && !violation.forKey && /^u?int(32|64)\.(gte?|lte?|gt_lte?|gte_lte?)$/.test(violation.ruleId)) {
    const range = integerRange(last);
    if (range) return rangeText(range);
  }
  return violation.message
    .replace(/^value (length )?(?=must|is )/, "")
    .replace(/^must be at least 1 characters$/, "must not be empty")
    .replace(/^repeated value must contain unique items$/, "must not repeat an item")
    .replace(/^must contain at least 1 item\(s\)$/, "must not be empty")
    .replace(/^must be in list \[(.*)\]$/, "must be one of $1")
    .replace(/^must be greater than or equal to (\S+) and less than or equal to (\S+)$/, "must be from $1 to $2")
    .replace(/^must be greater than or equal to (\S+)$/, "must be at least $1")
    .replace(/^must be less than or equal to (\S+)$/, "must be at most $1");
}

/**
 * The violations of `message` against the rules of `schema`, every one of
 * them (empty when it is valid).
 *
 * @throws Error when the rules themselves cannot be evaluated (a mistake in
 *   the protos, answered as `internal`).
 */
export function contractViolations<Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>): FieldViolation[] {
  const result = validator.validate(schema, message);
  if (result.kind === "valid") return [];
  if (result.kind === "error") throw result.error;
  return result.error.violations.map((v) => {
    // A rule of the message (a CEL rule comparing two fields) names the field in its id: "received_before.after_received_after".
    const field = v.field.length > 0 ? fieldPathOf(v.field) : v.ruleId.split(".", 1)[0] || "(body)";
    return { field: v.forKey ? `${field} (key)` : field, description: ruleText(v) };
  });
}

/**
 * Reads an AIP-134 update: the paths of `update_mask`, or, when the mask is
 * unset or empty, the updatable fields set in `resource` (non-empty); every
 * path must be one of `updatable`. The rules of the contract are checked for
 * the named fields only (an update leaves the others empty), each violation
 * named under `field` of the request (`api_key.name`, `update_mask[0]`).
 */
export function readUpdate<Desc extends DescMessage>(update: {
  field: string;
  schema: Desc;
  resource: MessageShape<Desc>;
  mask: FieldMask | undefined;
  updatable: readonly string[];
}): { paths: string[]; violations: FieldViolation[] } {
  const { field, schema, resource, updatable } = update;
  const implied = updatable.filter((name) => {
    const desc = schema.fields.find((f) => f.name === name);
    return desc !== undefined && isFieldSet(resource, desc);
  });
  const paths = update.mask?.paths.length ? [...update.mask.paths] : implied;
  const violations: FieldViolation[] = paths.flatMap((path, i) =>
    updatable.includes(path) ? [] : [{ field: `update_mask[${i}]`, description: `must be one of ${updatable.join(", ")} (got ${JSON.stringify(path)})` }],
  );
  if (paths.length === 0) violations.push({ field: "update_mask", description: `names no field to change (${updatable.join(", ")})` });
  for (const v of contractViolations(schema, resource)) {
    if (paths.includes(v.field.split(/[.[ ]/, 1)[0] as string)) violations.push({ ...v, field: `${field}.${v.field}` });
  }
  return { paths, violations };
}

