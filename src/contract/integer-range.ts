import { getOption, hasOption, ScalarType, type DescField } from "@bufbuild/protobuf";
import { field as fieldRulesOption } from "../../gen/buf/validate/validate_pb.js";

/*
 * The values an integer field takes, said one way wherever a value is
 * refused: a number past its type (99999999999 for an int32, caught while the
 * JSON is read) and one past its rule (-1 where `gte: 0`, caught by
 * protovalidate) get the same "must be from 0 to 2147483647".
 */

/** Smallest and largest value of an integer type. */
export function typeRange(type: ScalarType): { min: bigint; max: bigint } {
  const unsigned = type === ScalarType.UINT32 || type === ScalarType.FIXED32 || type === ScalarType.UINT64 || type === ScalarType.FIXED64;
  const wide = type === ScalarType.INT64 || type === ScalarType.UINT64 || type === ScalarType.SINT64 || type === ScalarType.FIXED64 || type === ScalarType.SFIXED64;
  const bits = wide ? 64n : 32n;
  return { min: unsigned ? 0n : -(1n << (bits - 1n)), max: unsigned ? (1n << bits) - 1n : (1n << (bits - 1n)) - 1n };
}

/**
 * The values an integer `field` may take: its type's range narrowed by its
 * protovalidate bounds (`gte`/`gt`, `lte`/`lt` of its int32, int64, uint32 or
 * uint64 rules), or undefined when `field` is not a singular integer.
 */
export function integerRange(field: DescField): { min: bigint; max: bigint } | undefined {
  if (field.fieldKind !== "scalar" || [ScalarType.STRING, ScalarType.BYTES, ScalarType.BOOL, ScalarType.FLOAT, ScalarType.DOUBLE].includes(field.scalar)) return undefined;
  const range = typeRange(field.scalar);
  if (!hasOption(field, fieldRulesOption)) return range;
  const rules = getOption(field, fieldRulesOption).type;
  if (rules.case !== "int32" && rules.case !== "int64" && rules.case !== "uint32" && rules.case !== "uint64") return range;
  const { greaterThan, lessThan } = rules.value;
  const big = (v: number | bigint) => BigInt(v);
  if (greaterThan.case === "gte") range.min = big(greaterThan.value);
  if (greaterThan.case === "gt") range.min = big(greaterThan.value) + 1n;
  if (lessThan.case === "lte") range.max = big(lessThan.value);
  if (lessThan.case === "lt") range.max = big(lessThan.value) - 1n;
  return range;
}

/** How a refused integer is told: "must be from 0 to 2147483647". */
export const rangeText = (range: { min: bigint; max: bigint }) => `must be from ${range.min} to ${range.max}`;
