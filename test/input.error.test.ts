import http2 from "node:http2";
import net from "node:net";
import zlib from "node:zlib";
import * as grpc from "@grpc/grpc-js";
import { create, toBinary, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorInfoSchema } from "../gen/google/rpc/error_details_pb.js";
import { SimulateFlowResponseRequestSchema } from "../gen/messaging/console/v1/simulator_pb.js";
import { MessageService, SendMessageRequestSchema } from "../gen/messaging/v1/messages_pb.js";
import { clientFor, grpcJsCall, rest } from "./helpers/clients.js";
import { createTestService, TEST_CONSOLE_TOKEN, type TestService } from "./helpers/test-service.js";

/*
 * One reading of input for every protocol (issue "a gateway that no input can
 * break"): malformed protobuf, unknown JSON fields, "__proto__" map keys and
 * oversized messages are precise 4xx / INVALID_ARGUMENT / RESOURCE_EXHAUSTED
 * answers over REST, Connect, gRPC and gRPC-Web, never `internal`; slow,
 * half-closing and CONNECT clients get an answer.
 */

let t: TestService;
let key: string;
let port: number;
beforeAll(async () => {
  t = await createTestService({ config: { headersTimeoutMs: 600 } });
  key = (await t.createKey(await t.createWorkspace("Input", 10), { scopes: ["messages:send", "messages:read"] })).secret;
  port = Number(new URL(t.publicUrl).port);
});
afterAll(() => t.close());

const SEND = "/messaging.v1.MessageService/SendMessage";

/** One enveloped message: flags, big-endian length, payload. */
function envelope(payload: Uint8Array, flags = 0): Buffer {
  const head = Buffer.alloc(5);
  head[0] = flags;
  head.writeUInt32BE(payload.length, 1);
  return Buffer.concat([head, payload]);
}

/** A gRPC call over a raw HTTP/2 stream: any body bytes, any headers; resolves to its status trailers. */
function h2Grpc(path: string, body: Buffer, headers: Record<string, string> = {}): Promise<{ status: number; message: string; details: Buffer | undefined }> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(t.publicUrl);
    session.on("error", reject);
    const stream = session.request({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers", authorization: `Bearer ${key}`, ...headers });
    let head: http2.IncomingHttpHeaders = {};
    stream.on("response", (h) => (head = h));
    stream.on("trailers", (trailers) => {
      const all = { ...head, ...trailers };
      const details = all["grpc-status-details-bin"];
      resolve({
        status: Number(all["grpc-status"]),
        message: decodeURIComponent(String(all["grpc-message"] ?? "")),
        details: typeof details === "string" ? Buffer.from(details, "base64") : undefined,
      });
      session.close();
    });
    stream.on("end", () => {
      if (head["grpc-status"] !== undefined) {
        resolve({ status: Number(head["grpc-status"]), message: decodeURIComponent(String(head["grpc-message"] ?? "")), details: undefined });
        session.close();
      }
    });
    stream.on("error", reject);
    stream.resume();
    stream.end(body);
  });
}

/** Writes `send` on a raw TCP connection and collects everything until the server closes it. */
function rawExchange(send: (socket: net.Socket) => void, waitMs = 8000): Promise<{ text: string; closedAfterMs: number }> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = net.connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no close within ${waitMs} ms; received: ${Buffer.concat(chunks).toString()}`));
    }, waitMs);
    socket.on("data", (c) => chunks.push(c));
    socket.on("error", () => {});
    socket.on("close", () => {
      clearTimeout(timer);
      resolve({ text: Buffer.concat(chunks).toString(), closedAfterMs: Date.now() - started });
    });
    socket.on("connect", () => send(socket));
  });
}

const validSend = toBinary(SendMessageRequestSchema, create(SendMessageRequestSchema, { to: "4915112345678", template: { id: "tpl_x" } }));

/** Malformed protobuf bodies of SendMessageRequest, each a broken rule of the encoding. */
const malformed: Record<string, Buffer> = {
  "invalid UTF-8 in a string": Buffer.from([0x0a, 0x02, 0xc3, 0x28]),
  "a truncated message": Buffer.from(validSend).subarray(0, validSend.length - 3),
  "a bad varint": Buffer.from([0x10, ...Array(11).fill(0xff)]),
  "10,000 nested groups": Buffer.alloc(10_000, 0x5b),
  "a wrong wire type": Buffer.from([0x0d, 1, 2, 3, 4]),
};

describe("malformed protobuf is INVALID_ARGUMENT on every protocol, never internal", () => {
  for (const [name, payload] of Object.entries(malformed)) {
    it(`${name}: gRPC, gRPC-Web and Connect binary`, async () => {
      const overGrpc = await h2Grpc(SEND, envelope(payload));
      expect(overGrpc.status, overGrpc.message).toBe(grpc.status.INVALID_ARGUMENT);
      expect(overGrpc.message).toMatch(/^\(body\): must be a valid protobuf encoding of messaging\.v1\.SendMessageRequest/);

      const overWeb = await fetch(t.publicUrl + SEND, {
        method: "POST",
        headers: { "content-type": "application/grpc-web+proto", authorization: `Bearer ${key}` },
        body: envelope(payload),
      });
      // gRPC-Web: the status travels in the trailer frame at the end of the body.
      expect(Buffer.from(await overWeb.arrayBuffer()).toString("latin1")).toContain(`grpc-status: ${grpc.status.INVALID_ARGUMENT}`);

      const overConnect = await fetch(t.publicUrl + SEND, {
        method: "POST",
        headers: { "content-type": "application/proto", authorization: `Bearer ${key}` },
        body: payload,
      });
      expect(overConnect.status).toBe(400);
      expect(((await overConnect.json()) as { code: string }).code).toBe("invalid_argument");
    });
  }

  it("framing errors get the protocols' codes (as the conformance suite checks): a compressed flag without an encoding, a truncated envelope, no or two messages in a unary call, an unknown encoding", async () => {
    const noEncoding = await h2Grpc(SEND, envelope(validSend, 1));
    expect(noEncoding.status).toBe(grpc.status.INTERNAL); // gRPC's spec for a compressed flag without grpc-encoding
    expect(noEncoding.message).toContain("grpc-encoding");
    const truncated = await h2Grpc(SEND, envelope(validSend).subarray(0, 8));
    expect(truncated.status).toBe(grpc.status.INVALID_ARGUMENT);
    expect(truncated.message).toMatch(/truncated/);
    const two = await h2Grpc(SEND, Buffer.concat([envelope(validSend), envelope(validSend)]));
    expect(two.status).toBe(grpc.status.UNIMPLEMENTED);
    expect(two.message).toMatch(/exactly one/);
    const none = await h2Grpc(SEND, Buffer.alloc(0));
    expect(none.status).toBe(grpc.status.UNIMPLEMENTED);
    const badGzip = await h2Grpc(SEND, envelope(Buffer.from("not gzip"), 1), { "grpc-encoding": "gzip" });
    expect(badGzip.status).toBe(grpc.status.INVALID_ARGUMENT);
    expect(badGzip.message).toMatch(/valid gzip/);
    const zstd = await h2Grpc(SEND, envelope(validSend, 1), { "grpc-encoding": "zstd" });
    expect(zstd.status).toBe(grpc.status.UNIMPLEMENTED);
    expect(zstd.message).toBe('grpc-encoding: must be gzip, br or identity, not "zstd"');
    const overConnect = await fetch(t.publicUrl + SEND, {
      method: "POST",
      headers: { "content-type": "application/proto", "content-encoding": "zstd", authorization: `Bearer ${key}` },
      body: validSend,
    });
    expect(overConnect.status).toBe(501);
    expect(await overConnect.json()).toEqual({ code: "unimplemented", message: 'content-encoding: must be gzip, br or identity, not "zstd"' });
  });

  it("a well-compressed message is read as before", async () => {
    const answer = await h2Grpc(SEND, envelope(zlib.gzipSync(validSend), 1), { "grpc-encoding": "gzip" });
    // The body reads; the send is refused for its unknown template, by the service's own rule.
    expect(answer.status).toBe(grpc.status.INVALID_ARGUMENT);
    expect(answer.message).not.toMatch(/\(body\)/);
  });

  it("the health service's Check too, without any key", async () => {
    const answer = await h2Grpc("/grpc.health.v1.Health/Check", envelope(Buffer.from([0x0a, 0x02, 0xc3, 0x28])), { authorization: "" });
    expect(answer.status).toBe(grpc.status.INVALID_ARGUMENT);
  });

  it("a caller without a valid key learns that first, as on REST", async () => {
    const answer = await h2Grpc(SEND, envelope(Buffer.from([0x0a, 0x02, 0xc3, 0x28])), { authorization: "Bearer nope" });
    expect(answer.status).toBe(grpc.status.UNAUTHENTICATED);
  });
});

describe('a "__proto__" key never reaches an object prototype', () => {
  const body = '{"to":"4915112345678","template":{"id":"tpl_x","variables":{"__proto__":"a","code":"1"}}}';

  it("REST and Connect JSON: invalid_argument naming template.variables.__proto__", async () => {
    const overRest = await rest(t.publicUrl, "POST", "/v1/messages", { key, rawBody: body });
    expect(overRest.status).toBe(400);
    expect(overRest.json.error.details.field_violations).toEqual([{ field: "template.variables.__proto__", description: 'may not be "__proto__"' }]);
    const overConnect = await fetch(t.publicUrl + SEND, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${key}` }, body });
    expect(overConnect.status).toBe(400);
    expect(((await overConnect.json()) as { message: string }).message).toBe('template.variables.__proto__: may not be "__proto__"');
  });

  it("gRPC binary map entry: INVALID_ARGUMENT", async () => {
    const bytes = Buffer.from(toBinary(SendMessageRequestSchema, create(SendMessageRequestSchema, { to: "4915112345678", template: { id: "tpl_x", variables: { __proto_X: "a" } } })));
    const at = bytes.indexOf("__proto_X");
    bytes.write("__proto__", at);
    const answer = await h2Grpc(SEND, envelope(bytes));
    expect(answer.status).toBe(grpc.status.INVALID_ARGUMENT);
    expect(answer.message).toMatch(/__proto__/);
  });
});

describe("unknown fields are refused on REST and Connect alike", () => {
  it("naming the field", async () => {
    const body = { to: "4915112345678", template: { id: "tpl_x", colour: "red" } };
    const overRest = await rest(t.publicUrl, "POST", "/v1/messages", { key, body });
    expect(overRest.status).toBe(400);
    expect(overRest.json.error.details.field_violations[0].field).toBe("template.colour");
    const overConnect = await fetch(t.publicUrl + SEND, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${key}` }, body: JSON.stringify(body) });
    expect(overConnect.status).toBe(400);
    expect(((await overConnect.json()) as { message: string }).message).toBe("template.colour: is not a field of this message");
  });

  it("a wrong type and an out-of-range number name their field over Connect JSON", async () => {
    const wrongType = await fetch(t.publicUrl + SEND, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${key}` }, body: '{"to":5}' });
    expect(wrongType.status).toBe(400);
    expect(((await wrongType.json()) as { message: string }).message).toMatch(/^to: /);
    const invalidUtf8 = await fetch(t.publicUrl + SEND, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
      body: Buffer.concat([Buffer.from('{"to":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]),
    });
    expect(invalidUtf8.status).toBe(400);
    expect(((await invalidUtf8.json()) as { message: string }).message).toBe("(body): must be valid UTF-8");
    const overRest = await rest(t.publicUrl, "POST", "/v1/messages", {
      key,
      rawBody: Buffer.concat([Buffer.from('{"to":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]).toString("latin1"),
      headers: { "content-type": "application/json; charset=latin1" },
    });
    expect(overRest.status).toBe(400);
  });
});

describe("nesting beyond 100 levels is invalid_argument naming the limit on every protocol and encoding, never a crash", () => {
  const RULE = "(body): must nest objects and arrays at most 100 levels deep";
  /** `{"to":"…","template":{"variables":{"a":{"a":…}}}}` nested `depth` levels in all. */
  const deep = (depth: number) => `{"to":"4915112345678","template":{"variables":${'{"a":'.repeat(depth - 2)}"x"${"}".repeat(depth - 2)}}}`;
  /** `[[[…]]]` `depth` levels deep: not even an object. */
  const deepArray = (depth: number) => "[".repeat(depth) + "]".repeat(depth);

  for (const [name, body] of [
    ["10,000 levels of objects", deep(10_000)],
    ["101 levels of objects", deep(101)],
    ["100,000 levels of arrays", deepArray(100_000)],
  ] as const) {
    it(`${name}: REST, Connect JSON, gRPC and gRPC-Web with JSON`, async () => {
      const overRest = await rest(t.publicUrl, "POST", "/v1/messages", { key, rawBody: body });
      expect(overRest.status).toBe(400);
      expect(overRest.json.error).toMatchObject({ code: "invalid_argument", message: RULE });

      const overConnect = await fetch(t.publicUrl + SEND, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${key}` }, body });
      expect(overConnect.status).toBe(400);
      expect(await overConnect.json()).toMatchObject({ code: "invalid_argument", message: RULE });

      const json = envelope(Buffer.from(body));
      const overGrpc = await h2Grpc(SEND, json, { "content-type": "application/grpc+json" });
      expect(overGrpc).toMatchObject({ status: grpc.status.INVALID_ARGUMENT, message: RULE });

      const overWeb = await fetch(t.publicUrl + SEND, { method: "POST", headers: { "content-type": "application/grpc-web+json", authorization: `Bearer ${key}` }, body: json });
      const trailer = Buffer.from(await overWeb.arrayBuffer()).toString("latin1");
      expect(trailer).toContain(`grpc-status: ${grpc.status.INVALID_ARGUMENT}`);
      expect(decodeURIComponent(trailer)).toContain("at most 100 levels deep");
    });
  }

  it("100 levels are read as usual (the rule of the field answers, not the limit)", async () => {
    const overRest = await rest(t.publicUrl, "POST", "/v1/messages", { key, rawBody: deep(100) });
    expect(overRest.status).toBe(400);
    expect(overRest.json.error.message).not.toContain("levels deep");
    expect(overRest.json.error.message).toMatch(/template\.variables\.a/);
  });

  it("protobuf binary nested beyond 100 messages (a google.protobuf.Struct of the console's simulator): gRPC", async () => {
    // 60 levels of JSON objects in a Struct are 122 levels of messages (Struct, Value, Struct …) in binary.
    let value: JsonValue = "x";
    for (let i = 0; i < 60; i++) value = { a: value };
    const request = create(SimulateFlowResponseRequestSchema, { messageId: "msg_x", response: value as JsonObject });
    const session = http2.connect(t.consoleUrl);
    try {
      const status = await new Promise<{ status: string; message: string }>((resolve, reject) => {
        const stream = session.request({
          ":method": "POST",
          ":path": "/messaging.console.v1.SimulatorService/SimulateFlowResponse",
          "content-type": "application/grpc",
          te: "trailers",
          authorization: `Bearer ${TEST_CONSOLE_TOKEN}`,
        });
        let head: http2.IncomingHttpHeaders = {};
        stream.on("response", (h) => (head = h));
        stream.on("trailers", (trailers) => resolve({ status: String(trailers["grpc-status"] ?? head["grpc-status"]), message: decodeURIComponent(String(trailers["grpc-message"] ?? head["grpc-message"])) }));
        stream.on("error", reject);
        stream.resume();
        stream.end(envelope(toBinary(SimulateFlowResponseRequestSchema, request)));
      });
      expect(status.status).toBe(String(grpc.status.INVALID_ARGUMENT));
      expect(status.message).toMatch(/^\(body\): must be a valid protobuf encoding of messaging\.console\.v1\.SimulateFlowResponseRequest: .*maximum recursion depth of 100/);
    } finally {
      session.close();
    }
  });
});

describe("messages over 1 MiB: 413 payload_too_large over REST, RESOURCE_EXHAUSTED as the RPC protocols have it", () => {
  const big = "1".repeat(2 * 1024 * 1024);

  it("REST", async () => {
    const answer = await rest(t.publicUrl, "POST", "/v1/messages", { key, body: { to: big } });
    expect(answer.status).toBe(413);
    expect(answer.json.error).toMatchObject({ code: "payload_too_large", details: { limit_bytes: "1048576" } });
  });

  for (const protocol of ["connect-json", "connect-binary", "grpc-web", "grpc"] as const) {
    it(`${protocol}`, async () => {
      const error = await clientFor(MessageService, protocol, t.publicUrl, key)
        .sendMessage({ to: big })
        .then(() => undefined, (e: unknown) => ConnectError.from(e));
      expect(error?.code).toBe(Code.ResourceExhausted);
      expect(error?.rawMessage).toMatch(/larger than 1048576 bytes/);
      expect(error?.findDetails(ErrorInfoSchema)).toEqual([]);
    });
  }

  it("grpc-js", async () => {
    const answer = await grpcJsCall(`127.0.0.1:${port}`, MessageService.method.sendMessage, { to: big }, { authorization: `Bearer ${key}` });
    expect(answer.error?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
  });
});

describe("errors that echo long input still arrive over gRPC", () => {
  it("a 12,000-character template id: a status with a clamped message, not a reset stream", async () => {
    const answer = await grpcJsCall(`127.0.0.1:${port}`, MessageService.method.sendMessage, { to: "4915112345678", template: { id: "x".repeat(12_000) } }, { authorization: `Bearer ${key}` });
    expect(answer.error?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(answer.error!.details.length).toBeLessThanOrEqual(1000);
    expect(answer.trailers.get("grpc-status-details-bin")).toHaveLength(1);
  });
});

describe("slow, silent, half-closing and CONNECT clients get an answer", () => {
  it("headers sent a byte at a time: 408 after HEADERS_TIMEOUT_MS, then the connection closes", async () => {
    const { text, closedAfterMs } = await rawExchange((socket) => {
      socket.write("GET /v1/me HTTP/1.1\r\nHost: x\r\n");
      const drip = setInterval(() => (socket.writable ? socket.write("X") : clearInterval(drip)), 100);
      socket.once("close", () => clearInterval(drip));
    });
    expect(text).toMatch(/^HTTP\/1\.1 408 /);
    expect(closedAfterMs).toBeLessThan(5000);
  });

  it("a connection that sends nothing is closed after HEADERS_TIMEOUT_MS", async () => {
    const { text, closedAfterMs } = await rawExchange(() => {});
    expect(text).toBe("");
    expect(closedAfterMs).toBeGreaterThanOrEqual(500);
  });

  it("a request whose client half-closes the socket is answered", async () => {
    const { text } = await rawExchange((socket) => socket.end("GET /v1/me HTTP/1.1\r\nHost: x\r\n\r\n"));
    expect(text).toMatch(/^HTTP\/1\.1 401 /);
    expect(text).toContain('"code":"invalid_key"');
  });

  it("CONNECT: 404 not_found as a REST error", async () => {
    const { text } = await rawExchange((socket) => socket.write("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"));
    expect(text).toMatch(/^HTTP\/1\.1 404 /);
    expect(text).toContain('"code":"not_found"');
  });

  it("an HTTP/1.0 RPC without a Host header is answered, not failed", async () => {
    const { text } = await rawExchange((socket) =>
      socket.write(`POST ${SEND} HTTP/1.0\r\ncontent-type: application/json\r\nauthorization: Bearer ${key}\r\ncontent-length: 2\r\n\r\n{}`),
    );
    expect(text).toMatch(/^HTTP\/1\.[01] 400 /);
    expect(text).toContain('"code":"invalid_argument"');
  });

  it("a request head over 16 KiB: 431", async () => {
    const { text } = await rawExchange((socket) => socket.write(`GET /v1/me HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(17 * 1024)}\r\n\r\n`));
    expect(text).toMatch(/^HTTP\/1\.1 431 /);
  });

  it("HTTP/2: the server announces 100 concurrent streams and a 16 KiB header list", async () => {
    const session = http2.connect(t.publicUrl);
    const settings = await new Promise<http2.Settings>((resolve) => session.once("remoteSettings", resolve));
    session.close();
    expect(settings).toMatchObject({ maxConcurrentStreams: 100, maxHeaderListSize: 16 * 1024 });
  });

  it("the service still answers a valid request afterwards", async () => {
    const me = await rest(t.publicUrl, "GET", "/v1/me", { key });
    expect(me.status).toBe(200);
  });
});
