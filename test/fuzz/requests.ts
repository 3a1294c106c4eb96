import http2 from "node:http2";
import fc from "fast-check";
import { Client, type Dispatcher } from "undici";
import { create, toBinary } from "@bufbuild/protobuf";
import { AccountService } from "../../gen/messaging/v1/account_pb.js";
import { FlowResponseService } from "../../gen/messaging/v1/flow_responses_pb.js";
import { MessageService, SendMessageRequestSchema, ListMessagesRequestSchema } from "../../gen/messaging/v1/messages_pb.js";
import { SenderService } from "../../gen/messaging/v1/senders_pb.js";
import { TemplateService } from "../../gen/messaging/v1/templates_pb.js";
import { WebhookService } from "../../gen/messaging/v1/webhooks_pb.js";

/*
 * Property-based requests against a running service (fast-check): random
 * paths, methods, headers, query strings and bodies (random bytes, random
 * JSON, mutated valid messages, truncated and oversized payloads, wrong
 * content types, valid and invalid keys) over REST and Connect (HTTP/1.1),
 * gRPC-Web and gRPC (HTTP/2). The properties: never a 5xx, never `internal`
 * / `unknown` / `data_loss` over gRPC, never a connection closed without an
 * answer. test/fuzz.security.test.ts runs them with a fixed seed and a bounded
 * count; `npm run fuzz` runs them longer.
 */

/** Where to send, and a key that the service accepts. */
export interface FuzzTarget {
  /** http://host:port of the public port. */
  publicUrl: string;
  /** A valid API key (every scope). */
  key: string;
}

/** One generated request, printable as a counterexample. */
export interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  /**
   * The body; "oversized" stands for 1 MiB + 16 bytes, and a Shaped body for
   * a deep or wide one made from its description (both kept short in
   * counterexamples).
   */
  body: Uint8Array | "oversized" | Shaped | undefined;
}

/**
 * A body deep or wide beyond the limits, described rather than spelled out:
 * JSON objects nested `size` levels (inside a send's variables), arrays
 * nested `size` levels, an object with `size` variables, an array of `size`
 * numbers, or `size` nested protobuf groups; in a gRPC envelope when
 * `enveloped`.
 */
export interface Shaped {
  shape: "deep-object" | "deep-array" | "wide-object" | "wide-array" | "deep-groups";
  size: number;
  enveloped: boolean;
}

const rpcPaths = [AccountService, SenderService, TemplateService, MessageService, WebhookService, FlowResponseService].flatMap((s) =>
  s.methods.map((m) => `/${s.typeName}/${m.name}`),
);
const openRpcPaths = ["/grpc.health.v1.Health/Check", "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"];
const restPaths = [
  "/v1/me",
  "/v1/messages",
  "/v1/messages/msg_00000000-0000-4000-8000-000000000000",
  "/v1/senders",
  "/v1/senders/snd_x",
  "/v1/templates",
  "/v1/templates/tpl_x",
  "/v1/webhook_events",
  "/v1/webhook_events/evt_x",
  "/v1/flow_responses",
  "/v1/flow_responses/x/files/0",
  "/openapi.json",
  "/healthz",
  "/network/whatsapp/webhook",
];

/** Valid encodings of real requests, to mutate. */
const validMessages: Uint8Array[] = [
  toBinary(SendMessageRequestSchema, create(SendMessageRequestSchema, { to: "4915112345678", sender: "snd_x", template: { id: "tpl_x", variables: { name: "Ada", code: "1" } } })),
  toBinary(ListMessagesRequestSchema, create(ListMessagesRequestSchema, { pageSize: 10, status: 2 })),
];
const validJson = ['{"to":"4915112345678","sender":"snd_x","template":{"id":"tpl_x","variables":{"name":"Ada"}}}', '{"page_size":10}', "{}"];

const OVERSIZED = Buffer.alloc(1024 * 1024 + 16, 0x61);

/** The bytes of a Shaped body. */
function shapedBytes({ shape, size, enveloped }: Shaped): Buffer {
  let text: string;
  switch (shape) {
    case "deep-object":
      text = `{"to":"4915112345678","template":{"variables":${'{"a":'.repeat(size)}"x"${"}".repeat(size)}}}`;
      break;
    case "deep-array":
      text = "[".repeat(size) + "]".repeat(size);
      break;
    case "wide-object":
      text = `{"to":"4915112345678","template":{"id":"tpl_x","variables":{${Array.from({ length: size }, (_, i) => `"v${i}":"x"`).join(",")}}}}`;
      break;
    case "wide-array":
      text = `{"to":[${Array(size).fill(1).join(",")}]}`;
      break;
    case "deep-groups":
      text = "";
      break;
  }
  // A start-group tag of field 1 (0x0b), `size` times: groups nested as deep.
  const payload = shape === "deep-groups" ? Buffer.alloc(size, 0x0b) : Buffer.from(text);
  if (!enveloped) return payload;
  const head = Buffer.alloc(5);
  head.writeUInt32BE(payload.length, 1);
  return Buffer.concat([head, payload]);
}

function bodyBytes(body: FuzzRequest["body"]): Buffer | undefined {
  if (body === "oversized") return OVERSIZED;
  if (body === undefined) return undefined;
  return body instanceof Uint8Array ? Buffer.from(body) : shapedBytes(body);
}

/** Deep and wide bodies, around and far beyond the nesting limit (100) and wide up to the size limit. */
function shaped(enveloped: fc.Arbitrary<boolean>): fc.Arbitrary<Shaped> {
  return fc.oneof(
    fc.record({ shape: fc.constantFrom("deep-object" as const, "deep-array" as const, "deep-groups" as const), size: fc.oneof(fc.integer({ min: 95, max: 105 }), fc.integer({ min: 106, max: 100_000 })), enveloped }),
    fc.record({ shape: fc.constantFrom("wide-object" as const, "wide-array" as const), size: fc.integer({ min: 1000, max: 60_000 }), enveloped }),
  );
}

/** Printable ASCII text (header values must be). */
const ascii = (maxLength: number) => fc.string({ unit: "grapheme-ascii", maxLength });

/** A byte string changed at random: flipped bytes, cut short, bytes inserted. */
function mutated(base: readonly Uint8Array[]): fc.Arbitrary<Uint8Array> {
  return fc
    .tuple(fc.constantFrom(...base), fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 4 }), fc.option(fc.nat()), fc.uint8Array({ maxLength: 8 }))
    .map(([bytes, flips, cut, inserted]) => {
      const out = Buffer.from(bytes);
      for (const [at, value] of flips) out[at % out.length] = value;
      const kept = cut === null ? out : out.subarray(0, cut % (out.length + 1));
      return Buffer.concat([kept, Buffer.from(inserted)]);
    });
}

/** Bytes framed as one gRPC / Connect envelope, sometimes with a wrong length or flags. */
function enveloped(payload: fc.Arbitrary<Uint8Array>): fc.Arbitrary<Uint8Array> {
  return fc.tuple(payload, fc.constantFrom(0, 0, 0, 1, 2, 0x80), fc.integer({ min: -3, max: 3 })).map(([bytes, flags, skew]) => {
    const head = Buffer.alloc(5);
    head[0] = flags;
    head.writeUInt32BE(Math.max(0, bytes.length + skew), 1);
    return Buffer.concat([head, bytes]);
  });
}

const anyBody = fc.oneof(
  { weight: 2, arbitrary: fc.constant(undefined) },
  { weight: 3, arbitrary: fc.uint8Array({ maxLength: 600 }) },
  { weight: 3, arbitrary: fc.json({ maxDepth: 4 }).map((text) => Buffer.from(text)) },
  { weight: 3, arbitrary: fc.constantFrom(...validJson).map((text) => Buffer.from(text) as Uint8Array) },
  { weight: 4, arbitrary: mutated(validMessages) },
  { weight: 4, arbitrary: enveloped(fc.oneof(mutated(validMessages), fc.uint8Array({ maxLength: 200 }), fc.constantFrom(...validMessages))) },
  { weight: 1, arbitrary: fc.constant("oversized" as const) },
  { weight: 2, arbitrary: shaped(fc.boolean()) },
);

function authorization(target: FuzzTarget): fc.Arbitrary<string | undefined> {
  return fc.oneof(
    fc.constant(`Bearer ${target.key}`),
    fc.constant(`Bearer ${target.key}`),
    fc.constant(undefined),
    fc.constant("Bearer sk_0000000000000000000000000000000000000000000000"),
    fc.constant(`Bearer ${target.key.slice(0, -1)}x`),
    ascii(60),
  );
}

const contentTypes = fc.oneof(
  fc.constantFrom(
    "application/json",
    "application/json; charset=utf-8",
    "application/proto",
    "application/connect+json",
    "application/connect+proto",
    "application/grpc-web+proto",
    "application/grpc-web",
    "application/grpc-web+json",
    "application/grpc-web-text",
    "text/plain",
    "multipart/form-data; boundary=x",
    "application/x-www-form-urlencoded",
  ),
  ascii(30),
);

/** Optional headers that steer the protocols: encodings, timeouts, versions, idempotency. */
const extraHeaders = fc.record(
  {
    "content-encoding": fc.constantFrom("gzip", "br", "identity", "zstd", "x"),
    "connect-content-encoding": fc.constantFrom("gzip", "identity", "x"),
    "grpc-encoding": fc.constantFrom("gzip", "identity", "deflate", "x"),
    "connect-protocol-version": fc.constantFrom("1", "2", ""),
    "connect-timeout-ms": fc.oneof(fc.nat().map(String), ascii(12)),
    "grpc-timeout": fc.oneof(fc.constantFrom("1S", "10m", "1n", "99999999H"), ascii(10)),
    "idempotency-key": ascii(300),
    "x-forwarded-for": ascii(40),
    accept: ascii(30),
  },
  { requiredKeys: [] },
);

/** Requests sent over HTTP/1.1: REST, Connect and gRPC-Web. */
export function http1Requests(target: FuzzTarget): fc.Arbitrary<FuzzRequest> {
  const path = fc.oneof(
    fc.constantFrom(...restPaths, ...rpcPaths, ...openRpcPaths),
    fc.webPath().map((p) => (p.startsWith("/") ? p : `/${p}`)),
    fc.tuple(fc.constantFrom(...restPaths), fc.constantFrom("/", "//", "/..", "%", "%zz", "/%00", "/" + "a".repeat(3000))).map(([a, b]) => a + b),
  );
  const query = fc.oneof(fc.constant(""), fc.webQueryParameters().map((q) => `?${q}`), ascii(40).map((q) => `?${encodeURI(q)}`));
  const method = fc.oneof(fc.constantFrom("GET", "POST", "POST", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"), fc.stringMatching(/^[A-Z]{1,8}$/).filter((m) => m !== "CONNECT"));
  return fc
    .record({ method, path, query, contentType: fc.option(contentTypes), auth: authorization(target), extra: extraHeaders, body: anyBody })
    .map(({ method, path, query, contentType, auth, extra, body }) => {
      const headers: Record<string, string> = { ...extra };
      if (contentType !== null) headers["content-type"] = contentType;
      if (auth !== undefined) headers.authorization = auth;
      const bodyless = method === "GET" || method === "HEAD";
      return { method, path: path + query, headers, body: bodyless ? undefined : body };
    });
}

/** Requests sent over HTTP/2 as gRPC. */
export function grpcRequests(target: FuzzTarget): fc.Arbitrary<FuzzRequest> {
  const path = fc.oneof(fc.constantFrom(...rpcPaths, ...rpcPaths, ...openRpcPaths), fc.webPath().filter((p) => p.startsWith("/")));
  const contentType = fc.constantFrom("application/grpc", "application/grpc+proto", "application/grpc+json", "application/grpc+json", "application/grpc+xml");
  const body = fc.oneof(
    enveloped(fc.oneof(mutated(validMessages), fc.uint8Array({ maxLength: 300 }), fc.constantFrom(...validMessages))),
    fc.uint8Array({ maxLength: 50 }),
    fc.constant("oversized" as const),
    shaped(fc.constant(true)),
  );
  return fc
    .record({ path, contentType, auth: authorization(target), extra: extraHeaders, body })
    .map(({ path, contentType, auth, extra, body }) => {
      const headers: Record<string, string> = { "content-type": contentType, te: "trailers" };
      if (extra["grpc-encoding"]) headers["grpc-encoding"] = extra["grpc-encoding"];
      if (extra["grpc-timeout"] && /^\d{1,8}[HMSmun]$/.test(extra["grpc-timeout"])) headers["grpc-timeout"] = extra["grpc-timeout"];
      if (auth !== undefined) headers.authorization = auth;
      return { method: "POST", path, headers, body };
    });
}

/** gRPC codes that mean the server broke, not the input: UNKNOWN, INTERNAL, DATA_LOSS. */
const BROKEN_GRPC_CODES = new Set(["2", "13", "15"]);

/** The grpc-status of a gRPC-Web body's trailer frame, if any. */
function grpcWebStatus(body: Buffer): string | undefined {
  return /grpc-status: ?(\d+)/.exec(body.toString("latin1"))?.[1];
}

/** Sends one request over HTTP/1.1; throws when the answer breaks a property. */
export async function checkHttp1(client: Client, request: FuzzRequest): Promise<void> {
  const answer = await client.request({ method: request.method as Dispatcher.HttpMethod, path: request.path, headers: request.headers, body: bodyBytes(request.body) });
  const body = Buffer.from(await answer.body.arrayBuffer());
  if (answer.statusCode >= 500) throw new Error(`answered ${answer.statusCode}: ${body.toString("utf8").slice(0, 300)}`);
  const status = (answer.headers["grpc-status"] as string | undefined) ?? grpcWebStatus(body);
  if (status !== undefined && BROKEN_GRPC_CODES.has(status)) throw new Error(`answered grpc-status ${status}: ${body.toString("latin1").slice(0, 300)}`);
}

/** Sends one gRPC request on an HTTP/2 session; throws when the answer breaks a property. */
export function checkGrpc(session: http2.ClientHttp2Session, request: FuzzRequest): Promise<void> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ":method": "POST", ":path": request.path, ...request.headers });
    const timer = setTimeout(() => {
      stream.close();
      reject(new Error("no answer within 10 s"));
    }, 10_000);
    stream.once("close", () => clearTimeout(timer));
    let head: http2.IncomingHttpHeaders | undefined;
    let status: string | undefined;
    stream.on("response", (h) => {
      head = h;
      if (h["grpc-status"] !== undefined) status = String(h["grpc-status"]);
    });
    stream.on("trailers", (t) => (status = t["grpc-status"] !== undefined ? String(t["grpc-status"]) : status));
    stream.on("error", (err) => reject(new Error(`stream failed without an answer: ${err.message}`)));
    stream.on("close", () => {
      if (!head) return reject(new Error(`stream closed without an answer (code ${stream.rstCode})`));
      const httpStatus = Number(head[":status"]);
      if (httpStatus >= 500) return reject(new Error(`answered HTTP ${httpStatus}`));
      if (status === undefined && String(head["content-type"] ?? "").startsWith("application/grpc")) return reject(new Error("gRPC answer without grpc-status"));
      if (status !== undefined && BROKEN_GRPC_CODES.has(status)) return reject(new Error(`answered grpc-status ${status}`));
      resolve();
    });
    stream.resume();
    stream.end(bodyBytes(request.body));
  });
}

/** Options of runFuzz. */
export interface FuzzOptions {
  seed: number;
  /** Requests of each kind (HTTP/1.1 and gRPC). */
  runs: number;
}

/**
 * Runs both properties against `target`.
 *
 * @throws Error (fast-check's report, with the shrunk counterexample and the seed) when a property breaks.
 */
export async function runFuzz(target: FuzzTarget, options: FuzzOptions): Promise<void> {
  const client = new Client(target.publicUrl, { pipelining: 0, headersTimeout: 20_000, bodyTimeout: 20_000 });
  let session = http2.connect(target.publicUrl);
  session.on("error", () => {});
  try {
    await fc.assert(
      fc.asyncProperty(http1Requests(target), (request) => checkHttp1(client, request)),
      { seed: options.seed, numRuns: options.runs, endOnFailure: true },
    );
    await fc.assert(
      fc.asyncProperty(grpcRequests(target), async (request) => {
        if (session.closed || session.destroyed) {
          session = http2.connect(target.publicUrl);
          session.on("error", () => {});
        }
        await checkGrpc(session, request);
      }),
      { seed: options.seed, numRuns: options.runs, endOnFailure: true },
    );
  } finally {
    session.close();
    await client.close();
  }
}
