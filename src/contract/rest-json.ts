import {
  create,
  ScalarType,
  type DescEnum,
  type DescField,
  type DescMessage,
  type JsonObject,
  type JsonValue,
  type Message,
  type MessageShape,
} from "@bufbuild/protobuf";
import { timestampDate, timestampFromMs, type Timestamp } from "@bufbuild/protobuf/wkt";
import type { FieldViolation } from "../shared/errors.js";
import { integerRange, rangeText, typeRange } from "./integer-range.js";

/*
 * The REST JSON mapping (README "Design" §3). It differs from canonical proto3 JSON
 * on purpose, to read like the spec:
 * - field names are the proto (snake_case) names;
 * - every field is written: unset messages and unset optional scalars as null;
 * - google.protobuf.Timestamp is ISO 8601 UTC with milliseconds;
 * - google.protobuf.FieldMask is a comma-separated string of snake_case paths;
 * - enum values are lower case without their type prefix
 *   (MESSAGE_STATUS_DELIVERED is "delivered"); the zero value is null;
 * - 64-bit integers are JSON numbers (strings beyond 2^53);
 * - reading is strict: an unknown field or a wrong type is a violation that
 *   names the field path and the rule, all of them at once.
 */

const TIMESTAMP = "google.protobuf.Timestamp";
const STRUCT = "google.protobuf.Struct";
const VALUE = "google.protobuf.Value";
const LIST_VALUE = "google.protobuf.ListValue";
const EMPTY = "google.protobuf.Empty";
const FIELD_MASK = "google.protobuf.FieldMask";

/** JSON name of an enum value: lower case without the enum's shared prefix; null for 0. */
export function enumValueToJson(desc: DescEnum, value: number): string | null {
  if (value === 0) return null;
  const v = desc.value[value];
  if (!v) return String(value);
  const prefix = desc.sharedPrefix ?? "";
  return (v.name.toLowerCase().startsWith(prefix) ? v.name.slice(prefix.length) : v.name).toLowerCase();
}

/** Enum number of a JSON enum name (as written by enumValueToJson), or undefined. */
export function enumValueFromJson(desc: DescEnum, name: string): number | undefined {
  for (const v of desc.values) {
    if (v.number !== 0 && enumValueToJson(desc, v.number) === name) return v.number;
  }
  return undefined;
}

function enumNames(desc: DescEnum): string {
  return desc.values
    .filter((v) => v.number !== 0)
    .map((v) => enumValueToJson(desc, v.number))
    .join(", ");
}

/** Formats a Timestamp as ISO 8601 UTC with milliseconds: 2026-01-31T12:00:00.000Z. */
export function timestampToJson(ts: Timestamp): string {
  return timestampDate(ts).toISOString();
}

function scalarToJson(type: ScalarType, value: unknown): JsonValue {
  switch (type) {
    case ScalarType.INT64:
    case ScalarType.UINT64:
    case ScalarType.SINT64:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64: {
      const n = Number(value);
      return Number.isSafeInteger(n) ? n : String(value);
    }
    case ScalarType.BYTES:
      return Buffer.from(value as Uint8Array).toString("base64");
    case ScalarType.FLOAT:
    case ScalarType.DOUBLE:
      return Number.isFinite(value) ? (value as number) : String(value);
    default:
      return value as JsonValue;
  }
}

function messageValueToJson(desc: DescMessage, value: unknown): JsonValue {
  if (value === undefined) return null;
  switch (desc.typeName) {
    case TIMESTAMP:
      return timestampToJson(value as Timestamp);
    case STRUCT:
    case VALUE:
    case LIST_VALUE:
      return value as JsonValue;
    case FIELD_MASK:
      return (value as { paths: string[] }).paths.join(",");
    default:
      return toRestJson(desc, value as Message);
  }
}

function singleToJson(field: DescField, value: unknown): JsonValue {
  switch (field.fieldKind) {
    case "scalar":
      return value === undefined ? null : scalarToJson(field.scalar, value);
    case "enum":
      return value === undefined ? null : enumValueToJson(field.enum, value as number);
    case "message":
      return messageValueToJson(field.message, value);
    default:
      return null;
  }
}

function fieldToJson(field: DescField, value: unknown): JsonValue {
  switch (field.fieldKind) {
    case "list": {
      const items = value as unknown[];
      if (field.listKind === "scalar") return items.map((v) => scalarToJson(field.scalar, v));
      if (field.listKind === "enum") return items.map((v) => enumValueToJson(field.enum, v as number));
      return items.map((v) => messageValueToJson(field.message, v));
    }
    case "map": {
      // Own properties by Object.fromEntries: no key can reach the prototype.
      return Object.fromEntries(
        Object.entries(value as Record<string, unknown>).map(([k, v]) => [
          k,
          field.mapKind === "scalar" ? scalarToJson(field.scalar, v) : field.mapKind === "enum" ? enumValueToJson(field.enum, v as number) : messageValueToJson(field.message, v),
        ]),
      ) as JsonObject;
    }
    default:
      return singleToJson(field, value);
  }
}

/**
 * Writes a message as REST JSON (see the mapping above). Oneof members that
 * are not set are written as null.
 */
export function toRestJson(desc: DescMessage, message: Message): JsonObject {
  if (desc.typeName === EMPTY) return {};
  const out: JsonObject = {};
  const record = message as unknown as Record<string, unknown>;
  for (const field of desc.fields) {
    if (field.oneof) {
      const selected = record[field.oneof.localName] as { case?: string; value?: unknown };
      out[field.name] = selected.case === field.localName ? singleToJson(field, selected.value) : null;
      continue;
    }
    out[field.name] = fieldToJson(field, record[field.localName]);
  }
  return out;
}

/* ------------------------------------------------------------------ reading */

/** Options of fromRestJson. */
export interface ReadOptions {
  /**
   * Accept "true"/"false" for booleans and numeric strings for floats, as
   * path and query parameters arrive as text.
   */
  textValues?: boolean;
}

class Reader {
  readonly violations: FieldViolation[] = [];
  constructor(readonly options: ReadOptions) {}

  fail(path: string, description: string): undefined {
    this.violations.push({ field: path || "(body)", description });
    return undefined;
  }

  message(desc: DescMessage, json: JsonValue, path: string): Record<string, unknown> | undefined {
    if (json === null || typeof json !== "object" || Array.isArray(json)) {
      return this.fail(path, "must be a JSON object");
    }
    const init: Record<string, unknown> = {};
    const byName = new Map(desc.fields.map((f) => [f.name, f]));
    for (const [key, value] of Object.entries(json)) {
      const fieldPath = path ? `${path}.${key}` : key;
      const field = byName.get(key);
      if (!field) {
        const hint = desc.fields.find((f) => f.jsonName === key);
        this.fail(fieldPath, hint ? `is not a known field; did you mean ${hint.name}?` : "is not a known field");
        continue;
      }
      if (value === null) continue;
      const parsed = this.field(field, value, fieldPath);
      if (parsed === undefined) continue;
      if (field.oneof) {
        if (init[field.oneof.localName] !== undefined) {
          this.fail(fieldPath, `only one of ${field.oneof.fields.map((f) => f.name).join(", ")} may be set`);
          continue;
        }
        init[field.oneof.localName] = { case: field.localName, value: parsed };
      } else {
        init[field.localName] = parsed;
      }
    }
    return init;
  }

  field(field: DescField, json: JsonValue, path: string): unknown {
    switch (field.fieldKind) {
      case "list": {
        const items = Array.isArray(json) ? json : this.options.textValues ? [json] : undefined;
        if (!items) return this.fail(path, "must be an array");
        const out = items.map((item, i) => {
          const itemPath = `${path}[${i}]`;
          if (field.listKind === "scalar") return this.scalar(field.scalar, item, itemPath);
          if (field.listKind === "enum") return this.enum(field.enum, item, itemPath);
          return this.messageValue(field.message, item, itemPath);
        });
        return out.some((v) => v === undefined) ? undefined : out;
      }
      case "map": {
        if (json === null || typeof json !== "object" || Array.isArray(json)) return this.fail(path, "must be a JSON object");
        const out: Record<string, unknown> = {};
        for (const [k, v] of Object.entries(json)) {
          const entryPath = `${path}.${k}`;
          if (v === null) {
            this.fail(entryPath, "must not be null");
            continue;
          }
          if (field.mapKind === "scalar") out[k] = this.scalar(field.scalar, v, entryPath);
          else if (field.mapKind === "enum") out[k] = this.enum(field.enum, v, entryPath);
          else out[k] = this.messageValue(field.message, v, entryPath);
        }
        return out;
      }
      case "scalar":
        return this.scalar(field.scalar, json, path, field);
      case "enum":
        return this.enum(field.enum, json, path);
      case "message":
        return this.messageValue(field.message, json, path);
    }
  }

  messageValue(desc: DescMessage, json: JsonValue, path: string): unknown {
    switch (desc.typeName) {
      case TIMESTAMP: {
        const ms = typeof json === "string" && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/.test(json)
          ? Date.parse(json)
          : NaN;
        if (Number.isNaN(ms)) {
          return this.fail(path, "must be an ISO 8601 timestamp such as 2026-01-31T12:00:00.000Z");
        }
        return timestampFromMs(ms);
      }
      case STRUCT:
        if (json === null || typeof json !== "object" || Array.isArray(json)) return this.fail(path, "must be a JSON object");
        return json;
      case FIELD_MASK:
        if (typeof json !== "string") return this.fail(path, "must be a comma-separated list of field names");
        return { paths: json.split(",").map((p) => p.trim()).filter((p) => p !== "") };
      case VALUE:
        return json;
      case LIST_VALUE:
        return Array.isArray(json) ? json : this.fail(path, "must be an array");
      default:
        return this.message(desc, json, path);
    }
  }

  enum(desc: DescEnum, json: JsonValue, path: string): number | undefined {
    const n = typeof json === "string" ? enumValueFromJson(desc, json) : undefined;
    return n ?? this.fail(path, `must be one of: ${enumNames(desc)}`);
  }

  /** `json` read as a value of `type`; `field` (a singular field) names the range a refused integer is told. */
  scalar(type: ScalarType, json: JsonValue, path: string, field?: DescField): unknown {
    switch (type) {
      case ScalarType.STRING:
        return typeof json === "string" ? json : this.fail(path, "must be a string");
      case ScalarType.BOOL:
        if (typeof json === "boolean") return json;
        if (this.options.textValues && (json === "true" || json === "false")) return json === "true";
        return this.fail(path, "must be true or false");
      case ScalarType.BYTES:
        return typeof json === "string" && /^[A-Za-z0-9+/_-]*={0,2}$/.test(json)
          ? new Uint8Array(Buffer.from(json, "base64"))
          : this.fail(path, "must be a base64 string");
      case ScalarType.FLOAT:
      case ScalarType.DOUBLE: {
        const n = typeof json === "number" ? json : this.options.textValues && typeof json === "string" ? Number(json) : NaN;
        return Number.isFinite(n) ? n : this.fail(path, "must be a number");
      }
      default:
        return this.integer(type, json, path, field);
    }
  }

  /**
   * `json` read as a whole number of `type`. One past the type is refused
   * with the range of `field` (its rules' bounds within the type), as a value
   * past the rules is refused by the contract's check: -1 and 99999999999 for
   * a page_size are both told "must be from 0 to 2147483647".
   */
  integer(type: ScalarType, json: JsonValue, path: string, field?: DescField): number | bigint | undefined {
    const text = typeof json === "number" ? (Number.isInteger(json) ? String(json) : "") : typeof json === "string" ? json : "";
    if (!/^-?\d+$/.test(text)) return this.fail(path, "must be a whole number");
    const value = BigInt(text);
    const range = typeRange(type);
    if (value < range.min || value > range.max) return this.fail(path, rangeText((field && integerRange(field)) ?? range));
    const wide = range.max > 1n << 32n;
    return wide ? value : Number(value);
  }
}

/** Result of reading REST JSON: the message, or every violation found. */
export type ReadResult<Desc extends DescMessage> =
  | { ok: true; message: MessageShape<Desc> }
  | { ok: false; violations: FieldViolation[] };

/**
 * Reads REST JSON into a message of `desc`. null leaves a field unset.
 * Returns every violation (unknown field, wrong type, value out of range)
 * with its field path, rather than stopping at the first.
 */
export function fromRestJson<Desc extends DescMessage>(desc: Desc, json: JsonValue, options: ReadOptions = {}): ReadResult<Desc> {
  const reader = new Reader(options);
  const init = reader.message(desc, json, "");
  if (reader.violations.length > 0 || init === undefined) return { ok: false, violations: reader.violations };
  return { ok: true, message: create(desc, init as never) };
}
