import http from "node:http";
import http2 from "node:http2";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { GetMeRequestSchema, GetMeResponseSchema } from "../gen/messaging/v1/account_pb.js";
import { ListTemplatesResponseSchema } from "../gen/messaging/v1/templates_pb.js";
import { createConnectUnary } from "../src/gateway/connect-unary.js";
import { createGrpcUnary } from "../src/gateway/grpc-unary.js";
import { registerService } from "../src/gateway/services.js";
import { DEFAULT_INPUT_RULES } from "../src/gateway/rpc-input.js";
import { AccountService } from "../gen/messaging/v1/account_pb.js";
import type { NodeRequest } from "../src/gateway/node-http.js";
import { createTemplate } from "./helpers/messaging.js";
import { createTestService, type TestService } from "./helpers/test-service.js";

/*
 * Plain unary gRPC and Connect calls are answered by the gateway itself (src/gateway/grpc-unary.ts,
 * connect-unary.ts); a call with a deadline goes through Connect's router. Both must answer alike, byte for byte.
 */

let t: TestService;
let workspaceId: string;
let key: { id: string; secret: string };

beforeAll(async () => {
  t = await createTestService();
  workspaceId = await t.createWorkspace("gRPC unary");
  key = await t.createKey(workspaceId, { scopes: ["templates:read"], rateLimitPerMin: 100 });
  // Enough templates that a page of them is over 1 KiB, the size from which answers are compressed.
  for (let i = 0; i < 12; i++) await createTemplate(t, workspaceId, { name: `template_${i}`, body: `Hello {{name}}, this is template number ${i} of the set, with a body long enough` });
});
afterAll(() => t.close());

/** What a gRPC answer carried: its headers (less the per-request ones), body bytes and trailers. */
interface Answer {
  headers: Record<string, unknown>;
  body: Buffer;
  trailers: Record<string, unknown>;
}

/** Calls `path` over HTTP/2 with gRPC framing; `body` is the request's bytes (envelope included). */
async function call(path: string, headers: Record<string, string>, body: Buffer): Promise<Answer> {
  const session = http2.connect(`http://127.0.0.1:${t.service.publicPort}`);
  try {
    return await new Promise<Answer>((resolve, reject) => {
      const req = session.request({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers", ...headers });
      const chunks: Buffer[] = [];
      let head: Record<string, unknown> = {};
      let trailers: Record<string, unknown> = {};
      req.on("response", (h) => (head = { ...h }));
      req.on("trailers", (h) => (trailers = { ...h }));
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        for (const name of ["date", "request-id", "ratelimit-remaining", "ratelimit-reset"]) delete head[name];
        resolve({ headers: head, body: Buffer.concat(chunks), trailers });
      });
      req.on("error", reject);
      req.end(body);
    });
  } finally {
    session.close();
  }
}

/** One message in a gRPC envelope (not compressed). */
function envelope(message: Uint8Array): Buffer {
  const out = Buffer.alloc(5 + message.length);
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
}

/** The same call answered by the gateway and, with a deadline, by Connect's router. */
async function bothWays(path: string, headers: Record<string, string>, body: Buffer): Promise<[Answer, Answer]> {
  return [await call(path, headers, body), await call(path, { ...headers, "grpc-timeout": "30S" }, body)];
}

describe("unary gRPC answered by the gateway", () => {
  it("answers a call as Connect's router does: headers, message and trailers", async () => {
    const [lean, router] = await bothWays("/messaging.v1.AccountService/GetMe", { authorization: `Bearer ${key.secret}` }, envelope(toBinary(GetMeRequestSchema, create(GetMeRequestSchema))));
    expect(lean).toEqual(router);
    expect(lean.headers).toMatchObject({ ":status": 200, "content-type": "application/grpc+proto", "ratelimit-limit": "100" });
    expect(lean.trailers).toMatchObject({ "grpc-status": "0" });
    expect(lean.body[0]).toBe(0);
    expect(fromBinary(GetMeResponseSchema, lean.body.subarray(5)).accountId).toBe(workspaceId);
  });

  it("compresses an answer from 1 KiB with the encoding the client accepts, as the router does", async () => {
    const [lean, router] = await bothWays(
      "/messaging.v1.TemplateService/ListTemplates",
      { authorization: `Bearer ${key.secret}`, "grpc-accept-encoding": "identity,deflate,gzip" },
      envelope(new Uint8Array()),
    );
    expect(lean.headers).toEqual(router.headers);
    expect(lean.headers["grpc-encoding"]).toBe("gzip");
    expect(lean.trailers).toEqual(router.trailers);
    expect(lean.body[0]).toBe(1); // compressed
    const list = fromBinary(ListTemplatesResponseSchema, gunzipSync(lean.body.subarray(5)));
    expect(list.data).toHaveLength(12);
    expect(gunzipSync(lean.body.subarray(5))).toEqual(gunzipSync(router.body.subarray(5)));
  });

  it("answers refusals and bad input with the same status, message and details", async () => {
    const empty = envelope(new Uint8Array());
    // The status, and whether details travel: the service's refusals carry ErrorInfo, the framing's errors none (as the protocol has them).
    const cases: [Record<string, string>, Buffer, string, boolean][] = [
      [{ authorization: "Bearer sk_nope" }, empty, "16", true], // invalid key
      [{ authorization: `Bearer ${key.secret}` }, Buffer.from([0, 0, 0, 0, 3, 0xff, 0xff, 0xff]), "3", true], // not a protobuf message
      [{ authorization: `Bearer ${key.secret}` }, Buffer.from([0, 0, 0, 0, 9]), "3", false], // truncated envelope
    ];
    for (const [headers, body, status, details] of cases) {
      const [lean, router] = await bothWays("/messaging.v1.AccountService/GetMe", headers, body);
      expect(lean).toEqual(router);
      expect(lean.trailers["grpc-status"]).toBe(status);
      expect(Boolean(lean.trailers["grpc-status-details-bin"])).toBe(details);
    }
    // A method the key's scopes do not cover.
    const [lean, router] = await bothWays("/messaging.v1.MessageService/ListMessages", { authorization: `Bearer ${key.secret}` }, empty);
    expect(lean).toEqual(router);
    expect(lean.trailers["grpc-status"]).toBe("7");
  });

  it("takes only plain unary calls; deadlines, compressed messages, other framings and HTTP/1.1 go to the router", () => {
    const unary = createGrpcUnary([registerService(AccountService, { getMe: () => ({}) })], [], DEFAULT_INPUT_RULES);
    const request = (headers: Record<string, string>, httpVersionMajor = 2, method = "POST") =>
      ({ headers: { "content-type": "application/grpc", ...headers }, httpVersionMajor, method }) as unknown as NodeRequest;
    const path = "/messaging.v1.AccountService/GetMe";
    expect(unary.targetOf(request({}), path)?.method.name).toBe("GetMe");
    expect(unary.targetOf(request({ "content-type": "application/grpc+proto", "grpc-encoding": "identity" }), path)).toBeDefined();
    expect(unary.targetOf(request({ "grpc-timeout": "1S" }), path)).toBeUndefined();
    expect(unary.targetOf(request({ "grpc-encoding": "gzip" }), path)).toBeUndefined();
    expect(unary.targetOf(request({ "content-type": "application/grpc+json" }), path)).toBeUndefined();
    expect(unary.targetOf(request({ "content-type": "application/grpc-web" }), path)).toBeUndefined();
    expect(unary.targetOf(request({}, 1), path)).toBeUndefined();
    expect(unary.targetOf(request({}, 2, "GET"), path)).toBeUndefined();
    expect(unary.targetOf(request({}), "/messaging.v1.AccountService/Nothing")).toBeUndefined();
  });
});

/** A Connect answer: status, headers (less the per-request ones) and body bytes as sent. */
interface ConnectAnswer {
  status: number;
  headers: Record<string, unknown>;
  body: Buffer;
}

/** POSTs `body` to `path` over HTTP/1.1 and reads the answer as sent (no decompression). */
function post(path: string, headers: Record<string, string>, body: Buffer | string): Promise<ConnectAnswer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port: t.service.publicPort, method: "POST", path, headers: { "content-type": "application/json", ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const head: Record<string, unknown> = { ...res.headers };
        for (const name of ["date", "request-id", "ratelimit-remaining", "ratelimit-reset", "connection", "keep-alive"]) delete head[name];
        resolve({ status: res.statusCode ?? 0, headers: head, body: Buffer.concat(chunks) });
      });
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** The same Connect call answered by the gateway and, with a deadline, by Connect's router. */
async function connectBothWays(path: string, headers: Record<string, string>, body: Buffer | string): Promise<[ConnectAnswer, ConnectAnswer]> {
  return [await post(path, headers, body), await post(path, { ...headers, "connect-timeout-ms": "30000" }, body)];
}

describe("unary Connect calls answered by the gateway", () => {
  it("answers JSON and binary calls as Connect's router does", async () => {
    const auth = { authorization: `Bearer ${key.secret}` };
    const [json, jsonRouter] = await connectBothWays("/messaging.v1.AccountService/GetMe", auth, "{}");
    expect(json).toEqual(jsonRouter);
    expect(json.status).toBe(200);
    expect(json.headers["content-type"]).toBe("application/json");
    expect(JSON.parse(json.body.toString())).toMatchObject({ account_id: workspaceId });
    const proto = Buffer.from(toBinary(GetMeRequestSchema, create(GetMeRequestSchema)));
    const [binary, binaryRouter] = await connectBothWays("/messaging.v1.AccountService/GetMe", { ...auth, "content-type": "application/proto" }, proto);
    expect(binary).toEqual(binaryRouter);
    expect(fromBinary(GetMeResponseSchema, binary.body).accountId).toBe(workspaceId);
  });

  it("compresses an answer from 1 KiB with the encoding the client accepts, as the router does", async () => {
    const [lean, router] = await connectBothWays("/messaging.v1.TemplateService/ListTemplates", { authorization: `Bearer ${key.secret}`, "accept-encoding": "gzip" }, "{}");
    expect(lean.headers).toEqual(router.headers);
    expect(lean.headers["content-encoding"]).toBe("gzip");
    expect(gunzipSync(lean.body)).toEqual(gunzipSync(router.body));
    expect(JSON.parse(gunzipSync(lean.body).toString()).data).toHaveLength(12);
  });

  it("answers refusals and bad input with the same status, error JSON and headers", async () => {
    const cases: [Record<string, string>, string, number][] = [
      [{ authorization: "Bearer sk_nope" }, "{}", 401],
      [{ authorization: `Bearer ${key.secret}` }, "{not json", 400],
      [{ authorization: `Bearer ${key.secret}` }, '{"no_such_field":1}', 400],
    ];
    for (const [headers, body, status] of cases) {
      const [lean, router] = await connectBothWays("/messaging.v1.AccountService/GetMe", headers, body);
      expect(lean).toEqual(router);
      expect(lean.status).toBe(status);
      expect(JSON.parse(lean.body.toString())).toMatchObject({ code: expect.any(String), message: expect.any(String) });
    }
    const [lean, router] = await connectBothWays("/messaging.v1.MessageService/ListMessages", { authorization: `Bearer ${key.secret}` }, "{}");
    expect(lean).toEqual(router);
    expect(lean.status).toBe(403);
  });

  it("takes only plain unary POSTs; GET, deadlines, compressed bodies and other content types go to the router", () => {
    const unary = createConnectUnary([registerService(AccountService, { getMe: () => ({}) })], [], DEFAULT_INPUT_RULES);
    const request = (headers: Record<string, string>, method = "POST") => ({ headers: { "content-type": "application/json", ...headers }, method }) as unknown as NodeRequest;
    const path = "/messaging.v1.AccountService/GetMe";
    expect(unary.targetOf(request({}), path)?.method.name).toBe("GetMe");
    expect(unary.targetOf(request({ "content-type": "application/proto", "content-encoding": "identity" }), path)).toBeDefined();
    expect(unary.targetOf(request({ "connect-timeout-ms": "1000" }), path)).toBeUndefined();
    expect(unary.targetOf(request({ "content-encoding": "gzip" }), path)).toBeUndefined();
    expect(unary.targetOf(request({ "content-type": "application/connect+json" }), path)).toBeUndefined();
    expect(unary.targetOf(request({}, "GET"), path)).toBeUndefined();
  });
});
