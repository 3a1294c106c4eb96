import { Code, ConnectError } from "@connectrpc/connect";
import { create, type DescMessage, type Message } from "@bufbuild/protobuf";
import {
  BadRequestSchema,
  BadRequest_FieldViolationSchema,
  ErrorInfoSchema,
} from "../../gen/google/rpc/error_details_pb.js";

/** Domain of every google.rpc.ErrorInfo the service sends. */
export const ERROR_DOMAIN = "messaging-service";

/**
 * The one error table (README "Design" §4): every error code the service answers,
 * with its HTTP status (REST) and gRPC code (gRPC, gRPC-Web, Connect).
 */
export const errorTable = {
  invalid_key: { httpStatus: 401, grpcCode: Code.Unauthenticated },
  key_revoked: { httpStatus: 401, grpcCode: Code.Unauthenticated },
  key_expired: { httpStatus: 401, grpcCode: Code.Unauthenticated },
  unauthenticated: { httpStatus: 401, grpcCode: Code.Unauthenticated },
  workspace_suspended: { httpStatus: 403, grpcCode: Code.PermissionDenied },
  ip_not_allowed: { httpStatus: 403, grpcCode: Code.PermissionDenied },
  insufficient_scope: { httpStatus: 403, grpcCode: Code.PermissionDenied },
  permission_denied: { httpStatus: 403, grpcCode: Code.PermissionDenied },
  rate_limited: { httpStatus: 429, grpcCode: Code.ResourceExhausted },
  invalid_argument: { httpStatus: 400, grpcCode: Code.InvalidArgument },
  payload_too_large: { httpStatus: 413, grpcCode: Code.ResourceExhausted },
  not_found: { httpStatus: 404, grpcCode: Code.NotFound },
  /** REST only: a known path with another method (RFC 9110 §15.5.6, with `Allow`); over RPC a method is its path. */
  method_not_allowed: { httpStatus: 405, grpcCode: Code.Unimplemented },
  insufficient_credits: { httpStatus: 402, grpcCode: Code.FailedPrecondition },
  recipient_opted_out: { httpStatus: 400, grpcCode: Code.FailedPrecondition },
  conflict: { httpStatus: 409, grpcCode: Code.AlreadyExists },
  failed_precondition: { httpStatus: 409, grpcCode: Code.FailedPrecondition },
  unimplemented: { httpStatus: 501, grpcCode: Code.Unimplemented },
  unavailable: { httpStatus: 503, grpcCode: Code.Unavailable },
  internal: { httpStatus: 500, grpcCode: Code.Internal },
} as const satisfies Record<string, { httpStatus: number; grpcCode: Code }>;

/** An error code of the table, for example "invalid_key". */
export type ErrorCode = keyof typeof errorTable;

/** String details of an error: sent as ErrorInfo metadata and as REST `details`. */
export type ErrorDetails = Record<string, string>;

/** One violated rule of a request: the field path and what the rule is. */
export interface FieldViolation {
  /** Path of the field in snake_case, for example "template.variables.code". */
  field: string;
  /** The rule, for example "is required" or "must be 8 to 15 digits". */
  description: string;
}

/**
 * Code for a gRPC code when an error carries no ErrorInfo: errors of the RPC
 * framing and of the framework, where resource_exhausted is a message over
 * the size limit (the rate limit's refusals always carry their ErrorInfo).
 */
const codeByGrpcCode = new Map<Code, ErrorCode>([
  [Code.InvalidArgument, "invalid_argument"],
  [Code.NotFound, "not_found"],
  [Code.Unauthenticated, "unauthenticated"],
  [Code.PermissionDenied, "permission_denied"],
  [Code.ResourceExhausted, "payload_too_large"],
  [Code.FailedPrecondition, "invalid_argument"],
  [Code.AlreadyExists, "conflict"],
  [Code.Aborted, "conflict"],
  [Code.Unimplemented, "unimplemented"],
  [Code.Unavailable, "unavailable"],
  [Code.DeadlineExceeded, "unavailable"],
  [Code.Canceled, "unavailable"],
]);

/** The error table's code for a gRPC status of an error without ErrorInfo (see codeByGrpcCode); `internal` for any other. */
export function errorCodeOfGrpcCode(code: Code): ErrorCode {
  return codeByGrpcCode.get(code) ?? "internal";
}

/**
 * Bounds of an error's parts. Errors may echo input (a path, a field name, a
 * value), and over gRPC they travel in HTTP/2 trailers, which a client
 * refuses beyond its header list size (often 8 to 16 KiB): clamped, an
 * error always arrives. Message: 1,000 characters; each detail value and
 * violation text: 300; violations: the first 50.
 */
export const ERROR_LIMITS = { messageChars: 1000, textChars: 300, violations: 50 } as const;

function clamp(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/**
 * Builds the error every layer throws: a ConnectError with the table's gRPC
 * code and a google.rpc.ErrorInfo whose reason is `code` and whose metadata is
 * `details`. Field violations travel as a google.rpc.BadRequest as well.
 * Every part is clamped to ERROR_LIMITS.
 */
export function apiError(
  code: ErrorCode,
  message: string,
  details: ErrorDetails = {},
  violations: FieldViolation[] = [],
): ConnectError {
  const metadata = Object.fromEntries(Object.entries(details).map(([k, v]) => [k, clamp(v, ERROR_LIMITS.textChars)]));
  const outgoing: { desc: DescMessage; value: Message }[] = [
    { desc: ErrorInfoSchema, value: create(ErrorInfoSchema, { reason: code, domain: ERROR_DOMAIN, metadata }) },
  ];
  message = clamp(message, ERROR_LIMITS.messageChars);
  if (violations.length > 0) {
    const fieldViolations = violations
      .slice(0, ERROR_LIMITS.violations)
      .map((v) => create(BadRequest_FieldViolationSchema, { field: clamp(v.field, ERROR_LIMITS.textChars), description: clamp(v.description, ERROR_LIMITS.textChars) }));
    outgoing.push({ desc: BadRequestSchema, value: create(BadRequestSchema, { fieldViolations }) });
  }
  return new ConnectError(message, errorTable[code].grpcCode, undefined, outgoing);
}

/**
 * invalid_argument listing broken rules: message "field: rule; field: rule",
 * details `field` and `rule` of the first, and a google.rpc.BadRequest with
 * every violation. `violations` must not be empty.
 */
export function violationsError(violations: readonly FieldViolation[]): ConnectError {
  const first = violations[0] as FieldViolation;
  return apiError(
    "invalid_argument",
    violations.map((v) => `${v.field}: ${v.description}`).join("; "),
    { field: first.field, rule: first.description },
    [...violations],
  );
}

/** invalid_argument naming one field and its rule: "<field>: <rule>". */
export function invalidArgument(field: string, rule: string): ConnectError {
  return violationsError([{ field, description: rule }]);
}

/** A resource of another workspace is simply not found (README "Design" §16). */
export function notFound(kind: string, id: string): ConnectError {
  return apiError("not_found", `No ${kind} with id ${JSON.stringify(id)}`, { resource: kind, id });
}

/**
 * The parts of an error needed to answer it over any protocol. Admission
 * keeps refusals in this form (cheap: no exception, no protobuf) and turns
 * them into a ConnectError only for the Connect router (toConnectError).
 */
export interface DescribedError {
  code: ErrorCode;
  message: string;
  details: ErrorDetails;
  violations: FieldViolation[];
}

/** Describes an error without building a ConnectError (see DescribedError). */
export function refusal(code: ErrorCode, message: string, details: ErrorDetails = {}): DescribedError {
  return { code, message, details, violations: [] };
}

/** The ConnectError of a described error. */
export function toConnectError(error: DescribedError): ConnectError {
  return apiError(error.code, error.message, error.details, error.violations);
}

/**
 * Reads the code, message, details and violations back out of a ConnectError,
 * whether built by apiError or raised by the framework (then the code is
 * derived from the gRPC code).
 */
export function describeError(err: ConnectError): DescribedError {
  const [info] = err.findDetails(ErrorInfoSchema);
  const [badRequest] = err.findDetails(BadRequestSchema);
  const fromInfo = info?.domain === ERROR_DOMAIN && info.reason in errorTable ? (info.reason as ErrorCode) : undefined;
  return {
    code: fromInfo ?? errorCodeOfGrpcCode(err.code),
    message: err.rawMessage,
    details: info ? { ...info.metadata } : {},
    violations: badRequest ? badRequest.fieldViolations.map((v) => ({ field: v.field, description: v.description })) : [],
  };
}

/** True when `err` is a MongoDB duplicate-key error (E11000). */
export function isDuplicateKeyError(err: unknown): boolean {
  return typeof err === "object" && err !== null && (err as { code?: unknown }).code === 11000;
}
