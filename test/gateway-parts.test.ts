import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { compilePathTemplate, PathTemplateError } from "../src/gateway/path-template.js";
import { fromRestJson, toRestJson } from "../src/contract/rest-json.js";
import { MessageSchema, MessageStatus, SendMessageRequestSchema } from "../gen/messaging/v1/messages_pb.js";
import { FlowResponseSchema } from "../gen/messaging/v1/flow_responses_pb.js";
import { minimalGrpcMessage } from "../src/gateway/rpc-server.js";
import { mergeServices, registerService } from "../src/gateway/services.js";
import { AccountService } from "../gen/messaging/v1/account_pb.js";
import { WebhookService } from "../gen/messaging/v1/webhooks_pb.js";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Code, ConnectError, createContextValues, type HandlerContext } from "@connectrpc/connect";
import { createRestGateway } from "../src/gateway/rest-gateway.js";
import type { RequestState } from "../src/gateway/request-state.js";
import { RE2JS } from "@bufbuild/re2";
import { matchRegex } from "../src/contract/field-rules.js";

describe("path templates (google/api/http.proto grammar)", () => {
  it("matches literals and single-segment variables", () => {
    const t = compilePathTemplate("/v1/flow_responses/{id}/files/{index}");
    expect(t.match("/v1/flow_responses/frs_1/files/2")).toEqual(new Map([["id", "frs_1"], ["index", "2"]]));
    expect(t.match("/v1/flow_responses/frs_1/files")).toBeUndefined();
    expect(t.match("/v1/flow_responses/frs_1/files/2/extra")).toBeUndefined();
    expect(t.fieldPaths).toEqual([["id"], ["index"]]);
  });

  it("binds nested field paths and multi-segment patterns", () => {
    const t = compilePathTemplate("/v1/{message.name=workspaces/*/messages/*}");
    expect(t.match("/v1/workspaces/w1/messages/m%2F2")).toEqual(new Map([["message.name", "workspaces/w1/messages/m/2"]]));
    expect(t.match("/v1/workspaces/w1/senders/s1")).toBeUndefined();
    const rest = compilePathTemplate("/files/{path=**}");
    expect(rest.match("/files/a/b/c.txt")).toEqual(new Map([["path", "a/b/c.txt"]]));
  });

  it("handles custom verbs", () => {
    const t = compilePathTemplate("/console/v1/workspaces/{id}:suspend");
    expect(t.match("/console/v1/workspaces/abc:suspend")).toEqual(new Map([["id", "abc"]]));
    expect(t.match("/console/v1/workspaces/abc:resume")).toBeUndefined();
    expect(compilePathTemplate("/console/v1/workspaces/{id}").match("/console/v1/workspaces/abc:suspend")).toBeUndefined();
  });

  it("decodes percent-encoding and refuses malformed encoding", () => {
    const t = compilePathTemplate("/v1/messages/{id}");
    expect(t.match("/v1/messages/msg%5F1")?.get("id")).toBe("msg_1");
    expect(t.match("/v1/messages/%E0%A4%A")).toBeUndefined();
  });

  it("prefers more literal templates", () => {
    const general = compilePathTemplate("/v1/messages/{id}");
    const literal = compilePathTemplate("/v1/messages/search");
    expect(literal.specificity).toBeGreaterThan(general.specificity);
  });

  it("rejects templates that break the grammar", () => {
    expect(() => compilePathTemplate("v1/me")).toThrow(PathTemplateError);
    expect(() => compilePathTemplate("/v1/{id")).toThrow(PathTemplateError);
    expect(() => compilePathTemplate("/v1/{a=**}/x")).toThrow(PathTemplateError);
    expect(() => compilePathTemplate("/v1/{1bad}")).toThrow(PathTemplateError);
  });
});

describe("REST JSON mapping (README, Design §3)", () => {
  it("writes snake_case, explicit nulls, ISO millisecond times, bare enum names and int64 as numbers", () => {
    const message = create(MessageSchema, {
      messageId: "msg_1",
      object: "message",
      to: "4915112345678",
      status: MessageStatus.DELIVERED,
      credits: 3n,
      createdAt: timestampFromDate(new Date("2026-01-31T12:00:00Z")),
    });
    expect(toRestJson(MessageSchema, message)).toEqual({
      message_id: "msg_1",
      object: "message",
      to: "4915112345678",
      sender: "",
      template_id: "",
      flow_token: null,
      status: "delivered",
      wa_message_id: null,
      error: null,
      credits: 3,
      created_at: "2026-01-31T12:00:00.000Z",
      sent_at: null,
      delivered_at: null,
      read_at: null,
      failed_at: null,
      send_at: null,
      valid_until: null,
      canceled_at: null,
      queued_reason: null,
      estimated_send_at: null,
    });
  });

  it("writes google.protobuf.Struct as a plain object", () => {
    const json = toRestJson(FlowResponseSchema, create(FlowResponseSchema, { response: { name: "Ada", age: 36, tags: ["a"] } }));
    expect(json.response).toEqual({ name: "Ada", age: 36, tags: ["a"] });
    expect(json.source_message_id).toBeNull();
    expect(json.files).toEqual([]);
  });

  it("reads what it writes", () => {
    const read = fromRestJson(SendMessageRequestSchema, {
      to: "4915112345678",
      sender: "snd_1",
      template: { id: "tpl_1", variables: { name: "Ada" }, flow: { token: "t-1" } },
    });
    expect(read.ok).toBe(true);
    if (read.ok) {
      expect(read.message.template?.variables).toEqual({ name: "Ada" });
      expect(read.message.template?.flow?.token).toBe("t-1");
    }
  });

  it("reports every violation with its path", () => {
    const read = fromRestJson(MessageSchema, {
      status: "posted",
      credits: 1.5,
      created_at: "yesterday",
      messageId: "x",
      error: { code: "E1" },
    });
    expect(read.ok).toBe(false);
    if (!read.ok) {
      expect(read.violations).toEqual([
        { field: "status", description: "must be one of: accepted, sent, delivered, read, failed, scheduled, canceled" },
        { field: "credits", description: "must be a whole number" },
        { field: "created_at", description: "must be an ISO 8601 timestamp such as 2026-01-31T12:00:00.000Z" },
        { field: "messageId", description: "is not a known field; did you mean message_id?" },
        { field: "error.code", description: "must be a whole number" },
      ]);
    }
  });

  it("checks integer ranges and accepts text values only where asked (query parameters)", () => {
    const big = fromRestJson(MessageSchema, { error: { code: 2 ** 31 } });
    expect(big.ok ? [] : big.violations[0]?.description).toBe("must be from -2147483648 to 2147483647");
    const text = fromRestJson(MessageSchema, { credits: "12", status: "read" }, { textValues: true });
    expect(text.ok && text.message.credits).toBe(12n);
  });
});

describe("grpc-message encoding", () => {
  it("uses the gRPC spec's minimal percent-encoding", () => {
    expect(minimalGrpcMessage(encodeURIComponent("needs scope: a; b, c%"))).toBe("needs scope: a; b, c%25");
    expect(minimalGrpcMessage(encodeURIComponent("café\n"))).toBe("caf%C3%A9%0A");
  });
});

describe("mergeServices", () => {
  const getMe = () => ({}) as never;

  it("fills the methods no capability provides with unimplemented errors naming the operation", () => {
    const merged = mergeServices([registerService(AccountService, { getMe })], [AccountService, WebhookService]);
    expect(merged.map((r) => r.service.typeName)).toEqual(["messaging.v1.AccountService", "messaging.v1.WebhookService"]);
    expect(merged[0]?.impl.getMe).toBe(getMe);
    const missing = (merged[1]?.impl as unknown as Record<string, () => unknown>).listWebhooks;
    let thrown: unknown;
    try {
      missing?.();
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(ConnectError);
    expect((thrown as ConnectError).code).toBe(Code.Unimplemented);
    expect((thrown as ConnectError).rawMessage).toBe("messaging.v1.WebhookService/ListWebhooks is not available yet");
  });

  it("refuses a method registered by two capabilities", () => {
    expect(() => mergeServices([registerService(AccountService, { getMe }), registerService(AccountService, { getMe })])).toThrow(
      "messaging.v1.AccountService.getMe is registered twice",
    );
  });
});

describe("the rules' regex matcher (RE2 syntax, matched by RegExp where both read it alike)", () => {
  // The schema's patterns (proto/**: CEL matches()), and RE2 syntax that RegExp reads otherwise or not at all.
  const patterns = [
    "^[1-9][0-9]{7,14}$",
    "^snd_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
    "[^ \t\r\n\f\v]",
    "^[ -~]*$",
    "^[0-9]{1,30}$",
    "[\n\r\t]|     ",
    "[/\\\\\\x00-\\x1f\\x7f]",
    "^[a-z0-9][a-z0-9!#$&^_.+-]*/[a-z0-9][a-z0-9!#$&^_.+-]*$",
    "^[a-z]{2,3}(_[A-Z]{2})?$",
    "a.b",
    "(?i)^abc$",
    "^\\pL+$",
    "^\\s$",
    "^a\\z",
  ];
  const texts = ["", "4915123456789", "0123", "snd_0b6f2c1e-8d1c-4c8e-9a55-3f1d2b7c9e10", " \t ", "x", "a\rb", "a\u2028b", "a\nb", "ABC", "abc", "😀", "é", "text/plain", "a/b\u0001", "en_US", "tab\there", "five     spaces", "\u00a0", "a"];

  it("answers as RE2 does, for every pattern and text", () => {
    for (const pattern of patterns) {
      const re2 = RE2JS.compile(pattern);
      for (const text of texts) expect([pattern, text, matchRegex(pattern, text)]).toEqual([pattern, text, re2.test(text)]);
    }
  });

  it("refuses a pattern that is not RE2 syntax, though RegExp reads it", () => {
    expect(() => matchRegex("a(?=b)", "ab")).toThrow();
    expect(() => matchRegex("(a)\\1", "aa")).toThrow();
  });
});

describe("the REST gateway's call context", () => {
  /** A gateway of AccountService whose GetMe is `getMe`, served by node:http on a random port. */
  async function serve(getMe: (context: HandlerContext) => Promise<object>) {
    const gateway = createRestGateway({
      services: [registerService(AccountService, { getMe: (_req: unknown, context: HandlerContext) => getMe(context) })],
      interceptors: [],
    });
    const server = http.createServer((req, res) => {
      const state = { requestId: "req_test", values: createContextValues(), setHeader: (name: string, value: string) => res.setHeader(name, value) } as unknown as RequestState;
      void gateway.handle(req, res, state);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/me` };
  }

  it("gives the handler the request headers and writes the response headers it sets", async () => {
    const { server, url } = await serve(async (context) => {
      context.responseHeader.set("x-seen", context.requestHeader.get("x-probe") ?? "none");
      return { accountId: "acc" };
    });
    try {
      const res = await fetch(url, { headers: { "x-probe": "hello" } });
      expect(res.status).toBe(200);
      expect(res.headers.get("x-seen")).toBe("hello");
      expect(await res.json()).toMatchObject({ account_id: "acc" });
    } finally {
      server.close();
    }
  });

  it("aborts the handler's signal when the client goes away, read before or after", async () => {
    const aborted: boolean[] = [];
    let calls = 0;
    const { server, url } = await serve(async (context) => {
      const early = calls++ === 0;
      const signal = early ? context.signal : undefined; // the first call reads the signal at once, the second once the client left
      await new Promise((resolve) => setTimeout(resolve, 300));
      aborted.push((signal ?? context.signal).aborted);
      return {};
    });
    try {
      for (let i = 0; i < 2; i++) {
        const gone = new AbortController();
        const answer = fetch(url, { signal: gone.signal }).catch((err: Error) => err.name);
        setTimeout(() => gone.abort(), 100);
        expect(await answer).toBe("AbortError");
        await new Promise((resolve) => setTimeout(resolve, 400));
      }
      expect(aborted).toEqual([true, true]);
    } finally {
      server.close();
    }
  });
});
