import zlib from "node:zlib";
import { fromBinary, fromJson, type DescMessage, type DescMethod, type JsonValue, type Registry } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextKey, type Interceptor } from "@connectrpc/connect";
import { violationsError, type FieldViolation } from "../shared/errors.js";

/*
 * One reading of RPC input for every protocol (Connect JSON and binary, gRPC,
 * gRPC-Web), before the Connect router parses it, in two layers:
 *
 * - The framing (envelopes, their flags and compression, the number of
 *   messages, a message's size) is answered as the Connect and gRPC
 *   protocols specify, with their codes and a message naming the rule and
 *   no error details, as Connect's own handlers answer and the Connect
 *   conformance suite checks (framingError).
 * - The message itself (its protobuf or JSON, UTF-8, unknown JSON fields,
 *   a map key "__proto__", nesting) is the service's input: connect-es
 *   answers a body it cannot parse with `internal`, reads unknown JSON
 *   fields leniently when asked and silently drops a map key "__proto__";
 *   here each is a precise `invalid_argument` naming the field and the rule,
 *   with its google.rpc.BadRequest.
 *
 * The problem is not answered at once: it travels in the context to
 * inputInterceptor, innermost of the chain, so that a caller without a valid
 * key still learns that first, exactly as on REST.
 */

/** Largest request message accepted, in bytes (after decompression): 1 MiB. */
export const MAX_MESSAGE_BYTES = 1024 * 1024;

/** How a port reads RPC input (createRpcServer's options). */
export interface InputRules {
  /** Largest request message accepted, in bytes (after decompression). */
  readonly maxMessageBytes: number;
  /** Message types a google.protobuf.Any in JSON may name; none when absent. */
  readonly registry?: Registry;
}

/** The public port's input rules: messages up to MAX_MESSAGE_BYTES, no Any in JSON. */
export const DEFAULT_INPUT_RULES: InputRules = { maxMessageBytes: MAX_MESSAGE_BYTES };

/** What readRpcInput found wrong with a request's input, per request. */
export interface RpcInput {
  /** The error to answer instead of calling the handler, if any. */
  problem?: ConnectError;
}

/** Context value under which inputInterceptor finds what readRpcInput found. */
export const rpcInputKey = createContextKey<RpcInput>({}, { description: "rpc input check" });

/** Innermost interceptor: answers the input problem found before routing, if any. */
export const inputInterceptor: Interceptor = (next) => async (req) => {
  const problem = req.contextValues.get(rpcInputKey).problem;
  if (problem) throw problem;
  return next(req);
};

type Format = { enveloped: boolean; json: boolean; encodingHeader: string };

/** Wire format of a request by its Content-Type, or undefined for one Connect does not serve (it answers 415). */
function formatOf(contentType: string): Format | undefined {
  const type = contentType.split(";", 1)[0]!.trim().toLowerCase();
  switch (type) {
    case "application/json":
      return { enveloped: false, json: true, encodingHeader: "content-encoding" };
    case "application/proto":
      return { enveloped: false, json: false, encodingHeader: "content-encoding" };
    case "application/connect+json":
      return { enveloped: true, json: true, encodingHeader: "connect-content-encoding" };
    case "application/connect+proto":
      return { enveloped: true, json: false, encodingHeader: "connect-content-encoding" };
    case "application/grpc":
    case "application/grpc+proto":
    case "application/grpc-web":
    case "application/grpc-web+proto":
      return { enveloped: true, json: false, encodingHeader: "grpc-encoding" };
    case "application/grpc+json":
    case "application/grpc-web+json":
      return { enveloped: true, json: true, encodingHeader: "grpc-encoding" };
    default:
      return undefined;
  }
}

/** The request body a checked-out request is given instead: one empty message in its format. */
function emptyMessage(format: Format): Uint8Array {
  const payload = format.json ? Buffer.from("{}") : Buffer.alloc(0);
  if (!format.enveloped) return payload;
  const envelope = Buffer.alloc(5 + payload.length);
  envelope.writeUInt32BE(payload.length, 1);
  payload.copy(envelope, 5);
  return envelope;
}

/**
 * An error of the RPC framing, in the form the Connect and gRPC protocols
 * give it: `code` and a message naming the rule, no error details (the
 * request log records the code as the error table names it: describeError).
 */
function framingError(code: Code, message: string): ConnectError {
  return new ConnectError(message, code);
}

/** A message over the limit: resource_exhausted (both protocols' code for it). */
function tooLarge(limit: number): ConnectError {
  return framingError(Code.ResourceExhausted, `The request message is larger than ${limit} bytes`);
}

/** An encoding the service does not decode: unimplemented, as both protocols say (HTTP 501 over Connect). */
function unknownEncoding(format: Format, encoding: string): ConnectError {
  return framingError(Code.Unimplemented, `${format.encodingHeader}: must be gzip, br or identity, not ${JSON.stringify(encoding.slice(0, 40))}`);
}

/** A broken rule of the framing, naming the body: invalid_argument. */
function framingRule(rule: string, code = Code.InvalidArgument): ConnectError {
  return framingError(code, `(body): ${rule}`);
}

/** A broken rule of the message itself: invalid_argument with its violation. */
function bodyError(rule: string): ConnectError {
  return violationsError([{ field: "(body)", description: rule }]);
}

/**
 * Reads a request body (REST or RPC), keeping up to `limit` bytes; undefined
 * when it is longer. The rest of a longer body is read and dropped (a client
 * still sending gets its answer once it is done, as most clients expect),
 * within the request timeout of the listener.
 */
export async function readUpTo(body: AsyncIterable<Uint8Array>, limit: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size <= limit) chunks.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)); // a view, not a copy
  }
  return size <= limit ? Buffer.concat(chunks) : undefined;
}

/** Encodings of request messages the service decodes. */
const KNOWN_ENCODINGS: ReadonlySet<string> = new Set(["identity", "gzip", "br"]);

function decompress(encoding: string, data: Buffer, limit: number): Buffer {
  const options = { maxOutputLength: limit };
  return encoding === "gzip" ? zlib.gunzipSync(data, options) : zlib.brotliDecompressSync(data, options);
}

/**
 * The snake_case path from `root` to the message type `typeName` (for
 * example "template" for messaging.v1.SendMessageTemplate inside
 * SendMessageRequest), breadth first; "" for the root or when not found.
 */
function pathToType(root: DescMessage, typeName: string): string {
  const queue: [DescMessage, string][] = [[root, ""]];
  const seen = new Set<string>();
  while (queue.length > 0) {
    const [desc, path] = queue.shift()!;
    if (desc.typeName === typeName) return path;
    if (seen.has(desc.typeName)) continue;
    seen.add(desc.typeName);
    for (const field of desc.fields) {
      const child = field.fieldKind === "message" ? field.message : field.fieldKind === "list" || field.fieldKind === "map" ? (field.message ?? undefined) : undefined;
      if (child) queue.push([child, path ? `${path}.${field.name}` : field.name]);
    }
  }
  return "";
}

/** A protobuf-es JSON reading error as a violation naming the field path. */
function jsonViolation(root: DescMessage, message: string): FieldViolation {
  const join = (prefix: string, name: string) => (prefix ? `${prefix}.${name}` : name);
  let m = /^cannot decode field ([\w.]+)\.(\w+) from JSON: (.*)$/s.exec(message);
  if (m) return { field: join(pathToType(root, m[1]!), m[2]!), description: m[3]! };
  m = /^cannot decode message ([\w.]+) from JSON: key "(.*)" is unknown$/s.exec(message);
  if (m) return { field: join(pathToType(root, m[1]!), m[2]!), description: "is not a field of this message" };
  m = /^cannot decode message ([\w.]+) from JSON: (.*)$/s.exec(message);
  if (m) return { field: pathToType(root, m[1]!) || "(body)", description: m[2]! };
  return { field: "(body)", description: message };
}

/**
 * Deepest nesting of JSON objects and arrays accepted in a request body: 100
 * levels, protobuf's own recursion limit (protobuf-es's binary reader
 * refuses messages nested deeper than 100 the same way: "maximum recursion
 * depth of 100 reached"). Deeper JSON is `invalid_argument` on every
 * protocol (jsonNestsDeeperThan measures it without recursion).
 */
export const MAX_NESTING_DEPTH = 100;

/** The rule a too deeply nested JSON body breaks, as its violation says it. */
export const NESTING_RULE = `must nest objects and arrays at most ${MAX_NESTING_DEPTH} levels deep`;

/** Thrown by parseJsonBytes for JSON nested deeper than MAX_NESTING_DEPTH. */
export class JsonTooDeepError extends Error {
  constructor() {
    super(NESTING_RULE);
  }
}

/**
 * Whether JSON `text` nests objects and arrays deeper than `max`: one pass
 * over the text (brackets inside strings skipped), no recursion, so any
 * depth is measured without a stack to overflow.
 */
export function jsonNestsDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // a backslash escapes the next character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    }
  }
  return false;
}

/**
 * Every JSON object key "__proto__" in `value`, as field paths. JSON.parse
 * keeps such a key as an own property, but protobuf-es assigns map entries
 * to a plain object, where "__proto__" would set the prototype: the entry
 * would be lost, or worse. It is refused instead.
 */
export function protoKeyPaths(value: unknown, path = ""): string[] {
  if (value === null || typeof value !== "object") return [];
  const found: string[] = [];
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
  for (const [key, child] of entries) {
    const childPath = path ? `${path}.${key}` : key;
    if (key === "__proto__") found.push(childPath);
    found.push(...protoKeyPaths(child, childPath));
  }
  return found;
}

/** The violation of each "__proto__" key of a JSON value. */
export function protoKeyViolations(value: unknown): FieldViolation[] {
  return protoKeyPaths(value).map((field) => ({ field, description: 'may not be "__proto__"' }));
}

/** A map entry whose key is "__proto__" in protobuf binary: key field 1, length 9, the text. */
const BINARY_PROTO_KEY = Buffer.from([0x0a, 0x09, ...Buffer.from("__proto__")]);

const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Parses a JSON body strictly, for REST and Connect alike: its bytes must be
 * valid UTF-8 (nothing is replaced by U+FFFD), and it may nest objects and
 * arrays at most MAX_NESTING_DEPTH levels deep, so that no walk over the
 * value needs a deeper stack.
 *
 * @throws TypeError for invalid UTF-8; JsonTooDeepError for nesting beyond MAX_NESTING_DEPTH; SyntaxError for invalid JSON.
 */
export function parseJsonBytes(bytes: Uint8Array): JsonValue {
  const text = utf8.decode(bytes);
  if (jsonNestsDeeperThan(text, MAX_NESTING_DEPTH)) throw new JsonTooDeepError();
  return JSON.parse(text) as JsonValue;
}

/** The body rule a parseJsonBytes error breaks. */
export function jsonBodyRule(err: unknown): string {
  if (err instanceof TypeError) return "must be valid UTF-8";
  if (err instanceof JsonTooDeepError) return NESTING_RULE;
  return `must be valid JSON: ${(err as Error).message}`;
}

/** Checks one message's bytes against `desc`; the problem, or undefined when it reads cleanly. */
function checkMessage(desc: DescMessage, bytes: Buffer, json: boolean, registry: Registry | undefined): ConnectError | undefined {
  if (!json) {
    if (bytes.includes(BINARY_PROTO_KEY)) return bodyError('a map key may not be "__proto__"');
    try {
      fromBinary(desc, bytes);
      return undefined;
    } catch (err) {
      // Messages nested deeper than 100 included: the reader's recursion limit.
      return bodyError(`must be a valid protobuf encoding of ${desc.typeName}: ${(err as Error).message}`);
    }
  }
  let parsed: JsonValue;
  try {
    parsed = parseJsonBytes(bytes);
  } catch (err) {
    return bodyError(jsonBodyRule(err));
  }
  const protoKeys = protoKeyViolations(parsed);
  if (protoKeys.length > 0) return violationsError(protoKeys);
  try {
    fromJson(desc, parsed, { ignoreUnknownFields: false, registry });
    return undefined;
  } catch (err) {
    return violationsError([jsonViolation(desc, (err as Error).message)]);
  }
}

/**
 * Splits an enveloped body into its one message; a problem when it is not
 * exactly one well-formed envelope: no message or more than one is
 * `unimplemented` (the protocols' code for a call of the wrong
 * cardinality), a truncated one `invalid_argument`.
 */
function oneEnvelope(body: Buffer): { flags: number; payload: Buffer } | ConnectError {
  if (body.length === 0) return framingRule("must hold one message: this method takes exactly one", Code.Unimplemented);
  if (body.length < 5) return framingRule(`is truncated: ${body.length} bytes of a 5-byte envelope (flags and length)`);
  const length = body.readUInt32BE(1);
  if (body.length < 5 + length) return framingRule(`is truncated: the envelope announces ${length} bytes, ${body.length - 5} arrived`);
  if (body.length > 5 + length) return framingRule("must hold exactly one message: this method takes exactly one", Code.Unimplemented);
  return { flags: body[0]!, payload: body.subarray(5) };
}

/** The result of readRpcInput: the body to hand to the router, and its header changes. */
export interface CheckedBody {
  /** Bytes to give the Connect router as the request body. */
  body: Uint8Array;
  /** The problem found, if any (the body is then one empty message). */
  problem?: ConnectError;
  /** Header to remove from the request (the body no longer carries that encoding). */
  dropHeader?: string;
}

/**
 * Reads the body of a unary or server-streaming RPC request (at most
 * `rules.maxMessageBytes` of message, compressed or not) and checks it as `method`'s
 * input in its wire format: one well-formed envelope where the protocol
 * envelopes, a compressed flag only with an encoding, valid UTF-8 and JSON,
 * no unknown JSON field, a valid protobuf encoding, no "__proto__" map key.
 *
 * Returns undefined, the body unread, for a Content-Type Connect does not
 * serve (Connect answers 415 unsupported media type).
 */
export async function readRpcInput(
  method: DescMethod,
  header: Pick<Headers, "get">,
  body: AsyncIterable<Uint8Array>,
  rules = DEFAULT_INPUT_RULES,
): Promise<CheckedBody | undefined> {
  const limit = rules.maxMessageBytes;
  const format = formatOf(header.get("content-type") ?? "");
  if (!format) return undefined;
  const encoding = (header.get(format.encodingHeader) ?? "identity").toLowerCase();
  const raw = await readUpTo(body, limit + (format.enveloped ? 5 : 0));
  // The empty message replacing a refused body is not compressed: Connect must not read an encoding for it.
  const refuse = (problem: ConnectError): CheckedBody => ({ body: emptyMessage(format), problem, dropHeader: format.encodingHeader });
  if (!raw) return refuse(tooLarge(limit));
  if (!KNOWN_ENCODINGS.has(encoding)) return refuse(unknownEncoding(format, encoding));

  let problem: ConnectError | undefined;
  if (format.enveloped) {
    const envelope = oneEnvelope(raw);
    problem = "payload" in envelope ? checkEnvelope(method, format, encoding, envelope.flags, envelope.payload, rules) : envelope;
  } else {
    // Connect unary: no envelope; Content-Encoding compresses the whole body.
    problem = checkEnvelope(method, format, encoding, encoding === "identity" ? 0 : 1, raw, rules);
  }
  return problem ? refuse(problem) : { body: raw };
}

/** Checks one message with its envelope flags (bit 0: compressed with `encoding`); the problem, or undefined. */
function checkEnvelope(method: DescMethod, format: Format, encoding: string, flags: number, payload: Buffer, rules: InputRules): ConnectError | undefined {
  const limit = rules.maxMessageBytes;
  if ((flags & ~1) !== 0) return framingRule(`envelope flags must be 0 or 1, got ${flags}`);
  if ((flags & 1) === 1) {
    // gRPC's spec: a compressed flag without an encoding is INTERNAL.
    if (encoding === "identity") return framingRule(`a compressed message needs a ${format.encodingHeader} header naming its encoding`, Code.Internal);
    try {
      payload = decompress(encoding, payload, limit);
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE" ? tooLarge(limit) : framingRule(`must be valid ${encoding} data: ${(err as Error).message}`);
    }
  }
  return checkMessage(method.input, payload, format.json, rules.registry);
}

/**
 * The body of a client- or bidirectional-streaming call, checked message by
 * message as it arrives (the same rules as readRpcInput, each message at
 * most `rules.maxMessageBytes`). A problem is thrown from the stream as soon
 * as it is found, which the handler answers. A Content-Type Connect does not
 * serve passes unchecked (Connect answers it).
 */
export async function* checkedStream(
  method: DescMethod,
  header: Headers,
  body: AsyncIterable<Uint8Array>,
  rules = DEFAULT_INPUT_RULES,
): AsyncGenerator<Uint8Array> {
  const limit = rules.maxMessageBytes;
  const format = formatOf(header.get("content-type") ?? "");
  const encoding = (header.get(format?.encodingHeader ?? "") ?? "identity").toLowerCase();
  if (!format?.enveloped) {
    yield* body; // Connect answers these itself (415)
    return;
  }
  const chunks = body[Symbol.asyncIterator]();
  /** The problem, answered at once (a streaming client may wait for it before it sends more); the rest of the body is read and dropped meanwhile. */
  const refuse = (problem: ConnectError) => {
    void (async () => {
      while (!(await chunks.next()).done);
    })().catch(() => undefined);
    return problem;
  };
  if (!KNOWN_ENCODINGS.has(encoding)) throw refuse(unknownEncoding(format, encoding));
  let pending: Buffer = Buffer.alloc(0);
  for (let next = await chunks.next(); !next.done; next = await chunks.next()) {
    pending = Buffer.concat([pending, next.value]);
    while (pending.length >= 5) {
      const length = pending.readUInt32BE(1);
      if (length > limit) throw refuse(tooLarge(limit));
      if (pending.length < 5 + length) break;
      const problem = checkEnvelope(method, format, encoding, pending[0]!, pending.subarray(5, 5 + length), rules);
      if (problem) throw refuse(problem);
      yield pending.subarray(0, 5 + length);
      pending = pending.subarray(5 + length);
    }
  }
  if (pending.length > 0) throw framingRule(`is truncated: ${pending.length} bytes after the last whole message`);
}
