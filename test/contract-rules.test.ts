import { readFile } from "node:fs/promises";
import path from "node:path";
import { create, getOption, hasOption, type DescMessage } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { field as fieldRules } from "../gen/buf/validate/validate_pb.js";
import { field_behavior, FieldBehavior } from "../gen/google/api/field_behavior_pb.js";
import { ApiKeyService } from "../gen/messaging/console/v1/api_keys_pb.js";
import { WorkspaceService } from "../gen/messaging/console/v1/workspaces_pb.js";
import { ApiKeySchema, CreateApiKeyRequestSchema } from "../gen/messaging/console/v1/api_keys_pb.js";
import { CreateWebhookEndpointRequestSchema } from "../gen/messaging/console/v1/webhook_endpoints_pb.js";
import { parseIpRange } from "../src/auth/ip-allow-list.js";
import { SCOPES } from "../src/auth/scopes.js";
import { CONSOLE_API_FILES, PUBLIC_API_FILES } from "../src/codegen/contract-files.js";
import { readmeWithRules } from "../src/codegen/field-rules.js";
import { EVENT_TYPES } from "../src/events/event-bus.js";
import { contractViolations } from "../src/contract/field-rules.js";
import { projectRoot } from "../src/shared/project-root.js";
import { clientFor, grpcJsCall, rest } from "./helpers/clients.js";
import { createTestService, TEST_CONSOLE_TOKEN, type TestService } from "./helpers/test-service.js";

/*
 * The input rules live in the protos (protovalidate) and are enforced by one
 * interceptor for every protocol; the README's tables and the OpenAPI
 * document are written from them.
 */

let t: TestService;
beforeAll(async () => {
  t = await createTestService();
});
afterAll(() => t.close());

const methods = [...PUBLIC_API_FILES, ...CONSOLE_API_FILES].flatMap((f) => f.services.flatMap((s) => s.methods));

describe("the rules in the protos", () => {
  it("every page_size of every list declares page_size >= 0", () => {
    const lists = methods.filter((m) => m.input.fields.some((f) => f.name === "page_size"));
    expect(lists.length).toBeGreaterThan(15);
    for (const method of lists) {
      const pageSize = method.input.fields.find((f) => f.name === "page_size")!;
      expect(hasOption(pageSize, fieldRules), method.name).toBe(true);
      const rules = getOption(pageSize, fieldRules);
      expect(rules.type.case === "int32" && rules.type.value.greaterThan, method.name).toEqual({ case: "gte", value: 0 });
    }
  });

  it("every field of every request and resource declares its google.api.field_behavior (AIP-203)", () => {
    const messages = [...PUBLIC_API_FILES, ...CONSOLE_API_FILES].flatMap((f) => f.messages).filter((m) => !m.name.endsWith("Response"));
    expect(messages.length).toBeGreaterThan(80);
    const missing = messages.flatMap((m) => m.fields.filter((f) => getOption(f, field_behavior).length === 0).map((f) => `${m.typeName}.${f.name}`));
    expect(missing).toEqual([]);
    const behaviorOf = (m: DescMessage, name: string) => getOption(m.fields.find((f) => f.name === name)!, field_behavior);
    expect(behaviorOf(CreateApiKeyRequestSchema, "name")).toEqual([FieldBehavior.REQUIRED]);
    expect(behaviorOf(ApiKeySchema, "id")).toEqual([FieldBehavior.IDENTIFIER]);
    expect(behaviorOf(ApiKeySchema, "name")).toEqual([FieldBehavior.OPTIONAL]);
    expect(behaviorOf(ApiKeySchema, "workspace_id")).toEqual([FieldBehavior.IMMUTABLE]);
    expect(behaviorOf(ApiKeySchema, "created_at")).toEqual([FieldBehavior.OUTPUT_ONLY]);
  });

  it("the allowed scopes and event types are the service's own lists", () => {
    const inList = (desc: typeof CreateApiKeyRequestSchema | typeof CreateWebhookEndpointRequestSchema, name: string) => {
      const rules = getOption(desc.fields.find((f) => f.name === name)!, fieldRules);
      return rules.type.case === "repeated" && rules.type.value.items?.type.case === "string" ? rules.type.value.items.type.value.in : [];
    };
    expect(inList(CreateApiKeyRequestSchema, "scopes")).toEqual([...SCOPES]);
    expect(inList(CreateWebhookEndpointRequestSchema, "events")).toEqual([...EVENT_TYPES]);
  });

  it("an allow-list entry the rules accept is one the matcher can read, and the other way round", () => {
    const entries = ["203.0.113.7", "203.0.113.0/24", "203.0.113.7/24", "10.0.0.0/33", "2001:db8::/32", "::1", "2001:db8::/129", "1.2.3", "not-an-ip", "01.2.3.4", "203.0.113.0/-1", ""];
    for (const entry of entries) {
      const accepted = contractViolations(CreateApiKeyRequestSchema, create(CreateApiKeyRequestSchema, { name: "k", ipAllowList: [entry] })).length === 0;
      expect(accepted, entry).toBe(parseIpRange(entry) !== undefined);
    }
  });

  it("the README's rule tables are those the protos declare (npm run generate writes them)", async () => {
    const readme = await readFile(path.join(projectRoot, "README.md"), "utf8");
    expect(readmeWithRules(readme)).toBe(readme);
    expect(readme).toContain("| SendMessage | `to` | required; 8 to 15 digits with country code");
  });

  it("the OpenAPI document carries them: keywords and a Rules line", async () => {
    const doc = JSON.parse(await readFile(path.join(projectRoot, "gen", "openapi", "messaging.v1.openapi.json"), "utf8"));
    const { SendMessageRequest, SendMessageTemplate, SendMessageTemplateFlow } = doc.components.schemas;
    expect(SendMessageRequest.properties.to.description).toMatch(/Rules: required; 8 to 15 digits with country code, without '\+', spaces or a leading 0\.$/);
    expect(SendMessageTemplate.properties.variables.additionalProperties).toEqual({ type: "string", maxLength: 1024 });
    expect(SendMessageTemplateFlow.properties.token).toMatchObject({ maxLength: 200 });
    expect(SendMessageTemplateFlow.properties.token.description).toMatch(/Rules: at most 200 characters; printable ASCII\.$/);
  });
});

describe("one answer on every protocol", () => {
  const bad = { name: " ", credits: -1n };
  const expected = [
    { field: "name", description: "must not be blank" },
    { field: "credits", description: "must be from 0 to 9007199254740991" },
  ];

  it("REST", async () => {
    const res = await rest(t.consoleUrl, "POST", "/console/v1/workspaces", { key: TEST_CONSOLE_TOKEN, body: { name: " ", credits: -1 } });
    expect(res.status).toBe(400);
    expect(res.json.error.details.field_violations).toEqual(expected);
  });

  it.each(["connect-json", "connect-binary", "grpc-web", "grpc"] as const)("%s", async (protocol) => {
    const err = await clientFor(WorkspaceService, protocol, t.consoleUrl, TEST_CONSOLE_TOKEN)
      .createWorkspace(bad)
      .catch((e: unknown) => ConnectError.from(e));
    expect((err as ConnectError).code).toBe(Code.InvalidArgument);
    expect((err as ConnectError).rawMessage).toBe("name: must not be blank; credits: must be from 0 to 9007199254740991");
  });

  it("@grpc/grpc-js", async () => {
    const answer = await grpcJsCall(`127.0.0.1:${t.service.consolePort}`, ApiKeyService.method.createApiKey, { workspaceId: "w", name: "k", rateLimitPerMin: 101 }, {
      authorization: `Bearer ${TEST_CONSOLE_TOKEN}`,
    });
    expect(answer.error?.code).toBe(3); // INVALID_ARGUMENT
    expect(answer.error?.details).toBe("rate_limit_per_min: must be from 0 to 100");
  });

  it("the rules run before the handler: nothing is created and no database rule is reached", async () => {
    const before = await t.service.db.collection("workspaces").countDocuments();
    await rest(t.consoleUrl, "POST", "/console/v1/workspaces", { key: TEST_CONSOLE_TOKEN, body: { name: "", credits: 5 } });
    expect(await t.service.db.collection("workspaces").countDocuments()).toBe(before);
  });
});
