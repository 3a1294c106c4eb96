import { getExtension, getOption, hasExtension, hasOption, isFieldSet, ScalarType, type DescField, type DescFile, type DescMessage, type DescService, type JsonObject, type Message } from "@bufbuild/protobuf";
import {
  field as fieldRulesOption,
  file_buf_validate_validate,
  Ignore,
  message as messageRulesOption,
  predefined,
  type FieldRules,
  type RepeatedRules,
  type StringRules,
} from "../../gen/buf/validate/validate_pb.js";
import { CONSOLE_API_FILES, PUBLIC_API_FILES } from "./contract-files.js";
import { typeRange } from "../contract/integer-range.js";
import { id_prefix, phone_number, printable_ascii, numeric_id, not_blank, whatsapp_parameter, ip_or_cidr } from "../../gen/messaging/v1/field_rules_pb.js";

/*
 * The protovalidate rules of a field as people read them, for the README's
 * rule tables and the OpenAPI document: one source, the annotations in
 * proto/ (enforced by src/gateway/validation.ts).
 */

/**
 * A rule's value when it is set, else undefined (the rules are proto2: an
 * unset bound reads as 0).
 */
function setValue<T>(rules: Message, name: string): T | undefined {
  const desc = file_buf_validate_validate.messages.find((m) => m.typeName === rules.$typeName);
  const field = desc?.fields.find((f) => f.name === name);
  return field && isFieldSet(rules, field) ? ((rules as unknown as Record<string, T>)[field.localName] as T) : undefined;
}

/** A rule's wording without its "must be": "8 to 15 digits …", "not blank", "does not contain …". */
const phrase = (message: string) => message.replace(/^must be /, "").replace(/^must not be /, "not ").replace(/^must not /, "does not ");

const PREDEFINED = [phone_number, printable_ascii, numeric_id, not_blank, whatsapp_parameter, ip_or_cidr] as const;

/** The message of a predefined rule, from its `(buf.validate.predefined).cel`. */
function predefinedText(ext: (typeof PREDEFINED)[number]): string {
  return phrase(getOption(ext, predefined).cel[0]?.message ?? ext.name);
}

function stringTexts(rules: StringRules): string[] {
  const texts: string[] = [];
  const min = setValue<bigint>(rules, "min_len") ?? 0n;
  const max = setValue<bigint>(rules, "max_len");
  if (max !== undefined) texts.push(min > 0n ? `${min} to ${max} characters` : `at most ${max} characters`);
  else if (min > 0n) texts.push(min === 1n ? "not empty" : `at least ${min} characters`);
  if (rules.wellKnown.case === "email") texts.push("an email address");
  if (rules.in.length > 0) texts.push(`one of ${rules.in.map((v) => `\`${v}\``).join(", ")}`);
  if (hasExtension(rules, id_prefix)) texts.push(`an id such as \`${getExtension(rules, id_prefix)}_<uuid>\``);
  for (const ext of PREDEFINED) if (hasExtension(rules, ext) && getExtension(rules, ext)) texts.push(predefinedText(ext));
  return texts;
}

function repeatedTexts(rules: RepeatedRules): string[] {
  const texts: string[] = [];
  const min = setValue<bigint>(rules, "min_items") ?? 0n;
  const max = setValue<bigint>(rules, "max_items");
  if (max !== undefined) texts.push(`at most ${max} items`);
  if (min > 0n) texts.push(min === 1n ? "at least one item" : `at least ${min} items`);
  if (rules.unique) texts.push("no repeats");
  const items = rules.items ? ruleTexts(rules.items) : [];
  if (items.length > 0) texts.push(`each ${items.join(", ")}`);
  return texts;
}

/** The rules of `rules` as short phrases ("1 to 200 characters", "from 0 to 100"). */
function ruleTexts(rules: FieldRules): string[] {
  const texts: string[] = [];
  if (rules.required) texts.push("required");
  const type = rules.type;
  switch (type.case) {
    case "string":
      texts.push(...stringTexts(type.value));
      break;
    case "int32":
    case "int64": {
      // The whole range, as a refused value is told it (src/contract/integer-range.ts): "from 0 to 2147483647".
      const gte = type.value.greaterThan.case === "gte" ? type.value.greaterThan.value : undefined;
      const lte = type.value.lessThan.case === "lte" ? type.value.lessThan.value : undefined;
      const bounds = typeRange(type.case === "int32" ? ScalarType.INT32 : ScalarType.INT64);
      if (gte !== undefined || lte !== undefined) texts.push(`from ${gte ?? bounds.min} to ${lte ?? bounds.max}`);
      break;
    }
    case "repeated":
      texts.push(...repeatedTexts(type.value));
      break;
    case "map": {
      const values = type.value.values ? ruleTexts(type.value.values) : [];
      if (values.length > 0) texts.push(`each value ${values.join(", ")}`);
      break;
    }
  }
  for (const cel of rules.cel) if (cel.message) texts.push(phrase(cel.message));
  return texts;
}

/**
 * The rules of a field of a request, as one phrase ("1 to 200 characters;
 * not blank"), or undefined when it declares none. "Empty, or …" when the
 * rules hold only for a non-empty value (IGNORE_IF_ZERO_VALUE).
 */
export function describeFieldRules(field: DescField): string | undefined {
  if (!hasOption(field, fieldRulesOption)) return undefined;
  const rules = getOption(field, fieldRulesOption);
  if (rules.ignore === Ignore.ALWAYS) return undefined;
  const texts = ruleTexts(rules);
  if (texts.length === 0) return undefined;
  const text = texts.join("; ");
  return rules.ignore === Ignore.IF_ZERO_VALUE ? `empty, or ${text}` : text;
}

/** The rules of a whole message (its `(buf.validate.message).cel` messages, field named by the rule id). */
export function describeMessageRules(desc: DescMessage): { field: string; rule: string }[] {
  if (!hasOption(desc, messageRulesOption)) return [];
  return getOption(desc, messageRulesOption).cel.map((c) => ({ field: c.id.split(".", 1)[0] ?? "", rule: phrase(c.message) }));
}

/**
 * JSON Schema keywords the rules of a field imply for its value (lengths,
 * bounds, item counts, allowed values), for the OpenAPI document's request
 * schemas. Rules without a keyword are in the description (describeFieldRules).
 */
export function fieldRuleKeywords(field: DescField): { value: JsonObject; list: JsonObject } {
  const value: JsonObject = {};
  const list: JsonObject = {};
  if (!hasOption(field, fieldRulesOption)) return { value, list };
  const rules = getOption(field, fieldRulesOption);
  if (rules.ignore !== Ignore.UNSPECIFIED) return { value, list };
  const scalar = (r: FieldRules, into: JsonObject) => {
    if (r.type.case === "string") {
      const min = setValue<bigint>(r.type.value, "min_len");
      const max = setValue<bigint>(r.type.value, "max_len");
      if (min !== undefined) into.minLength = Number(min);
      if (max !== undefined) into.maxLength = Number(max);
      if (r.type.value.in.length > 0) into.enum = [...r.type.value.in];
    } else if (r.type.case === "int32" || r.type.case === "int64") {
      const { greaterThan, lessThan } = r.type.value;
      if (greaterThan.case === "gte") into.minimum = Number(greaterThan.value);
      if (lessThan.case === "lte") into.maximum = Number(lessThan.value);
    }
  };
  if (rules.type.case === "repeated") {
    const r = rules.type.value;
    const min = setValue<bigint>(r, "min_items");
    const max = setValue<bigint>(r, "max_items");
    if (min !== undefined) list.minItems = Number(min);
    if (max !== undefined) list.maxItems = Number(max);
    if (r.unique) list.uniqueItems = true;
    if (r.items) scalar(r.items, value);
  } else if (rules.type.case === "map") {
    if (rules.type.value.values) scalar(rules.type.value.values, value);
  } else {
    scalar(rules, value);
  }
  return { value, list };
}

/**
 * The README's table of the input rules of `services` (between the markers
 * `<!-- rules:NAME -->` and `<!-- /rules:NAME -->`): one row per request
 * field that declares rules, and one per rule of a whole request, in the
 * order of the services and their methods.
 */
export function rulesTable(services: readonly DescService[]): string {
  const rows = ["| Operation | Field | Rule |", "|---|---|---|"];
  const seen = new Set<string>();
  for (const service of services) {
    for (const method of service.methods) {
      const input = method.input;
      if (seen.has(input.typeName)) continue;
      seen.add(input.typeName);
      const walk = (desc: DescMessage, prefix: string, depth: number) => {
        for (const field of desc.fields) {
          const rule = describeFieldRules(field);
          if (rule) rows.push(`| ${method.name} | \`${prefix}${field.name}\` | ${rule.replaceAll("|", "\\|")} |`);
          if (field.message && field.fieldKind !== "map" && depth < 3 && !field.message.typeName.startsWith("google.")) {
            walk(field.message, `${prefix}${field.name}${field.fieldKind === "list" ? "[]" : ""}.`, depth + 1);
          }
        }
        for (const { field, rule } of describeMessageRules(desc)) rows.push(`| ${method.name} | \`${prefix}${field}\` | ${rule} |`);
      };
      walk(input, "", 0);
    }
  }
  return rows.join("\n");
}

/**
 * `readme` with the table between `<!-- rules:NAME -->` and
 * `<!-- /rules:NAME -->` replaced by `table`.
 *
 * @throws Error when the markers are missing.
 */
export function withRulesTable(readme: string, name: string, table: string): string {
  const begin = `<!-- rules:${name} -->\n`;
  const end = `<!-- /rules:${name} -->`;
  const from = readme.indexOf(begin);
  const to = readme.indexOf(end, from);
  if (from < 0 || to < 0) throw new Error(`README.md lacks the markers ${begin.trim()} … ${end}`);
  return `${readme.slice(0, from + begin.length)}${table}\n${readme.slice(to)}`;
}

/** README.md with both rule tables (public and console API) brought up to date with the protos. */
export function readmeWithRules(readme: string): string {
  const table = (files: readonly DescFile[]) => rulesTable(files.flatMap((f) => f.services));
  return withRulesTable(withRulesTable(readme, "public", table(PUBLIC_API_FILES)), "console", table(CONSOLE_API_FILES));
}
