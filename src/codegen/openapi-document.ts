import { ScalarType, type DescEnum, type DescEnumValue, type DescField, type DescMessage, type DescMethod, type DescService, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import type { EventType } from "../events/event-bus.js";
import { requiredScope } from "../gateway/interceptors.js";
import { describeFieldRules, fieldRuleKeywords } from "./field-rules.js";
import { ruleOf } from "../gateway/rest-gateway.js";
import { enumValueToJson } from "../contract/rest-json.js";
import { IDEMPOTENCY_KEY_RULE, IDEMPOTENCY_TTL_MS } from "../messages/idempotency.js";
import { errorTable, type ErrorCode } from "../shared/errors.js";

/*
 * The OpenAPI 3.1 document of the REST surface, built from the same
 * descriptors and the same helpers the REST gateway uses (ruleOf for the
 * google.api.http rules, enumValueToJson for enum names, requiredScope for
 * scopes, the error table for statuses), so the document and the gateway
 * cannot disagree. It describes the REST JSON mapping of
 * src/contract/rest-json.ts rather than canonical proto3 JSON:
 * - snake_case field names; every field present in responses (`required`),
 *   `null` for unset messages, unset optional scalars, unselected oneof
 *   members and enum zero values;
 * - enums as lower-case names without their prefix;
 * - google.protobuf.Timestamp as an ISO 8601 date-time string with ms;
 * - 64-bit integers as JSON numbers (format int64);
 * - requests read strictly (additionalProperties: false; null leaves a field unset);
 * - the error body of src/shared/errors.ts, the bearer API key, and the
 *   Request-Id, RateLimit-* and Retry-After headers (README "Headers");
 * - headers a handler reads or writes itself (OPERATION_HEADERS: the
 *   Idempotency-Key of SendMessage);
 * - the webhook deliveries as 3.1 `webhooks`, one per event type, with the
 *   envelope messages of events.proto and the Service-* headers.
 * OpenAPI 3.1: https://spec.openapis.org/oas/v3.1.0
 */

/** Leading comment of a descriptor, or undefined (the plugin reads them from source info). */
export type DescribeFn = (desc: DescService | DescMethod | DescMessage | DescField | DescEnum | DescEnumValue) => string | undefined;

/** Options of buildOpenApiDocument. */
export interface OpenApiOptions {
  /** info.title */
  title: string;
  /** info.version */
  version: string;
  /** info.description (CommonMark) */
  description: string;
  /** Leading comments of descriptors, used as descriptions. */
  describe: DescribeFn;
  /** The envelope message POSTed for each event type; each becomes an entry of `webhooks`. */
  webhookEnvelopes?: Readonly<Record<EventType, DescMessage>>;
}

/** Headers an operation's handler reads or writes itself, beyond those of every operation. */
interface OperationHeaders {
  /** Header parameters of the request. */
  request: JsonObject[];
  /** Headers of the 200 answer, by name (references to components.headers). */
  response: JsonObject;
  /** Error statuses the operation answers beyond the common ones (402 insufficient_credits, 409 conflict, …). */
  errorStatuses: number[];
}

/** OperationHeaders by x-grpc-method (src/messages/message-service.ts, README "POST /v1/messages"). */
const OPERATION_HEADERS: Readonly<Record<string, OperationHeaders>> = {
  "/messaging.v1.MessageService/SendMessage": {
    request: [
      {
        name: "Idempotency-Key",
        in: "header",
        required: false,
        description: `Makes the send safe to retry: a later request of the same API key with the same key and the same body answers the message the first one created (header \`Idempotent-Replayed: true\`) without spending again; with another body it is a 409 \`conflict\`, as it is while the first request is still in progress. Keys are remembered for ${IDEMPOTENCY_TTL_MS / 3_600_000} hours. The key ${IDEMPOTENCY_KEY_RULE}.`,
        schema: { type: "string", minLength: 1, maxLength: 255, pattern: "^[!-~]+$" },
      },
    ],
    response: { "Idempotent-Replayed": { $ref: "#/components/headers/Idempotent-Replayed" } },
    errorStatuses: [402, 409],
  },
  "/messaging.v1.MessageService/BatchSendMessages": {
    request: [
      {
        name: "Idempotency-Key",
        in: "header",
        required: false,
        description: `Makes the whole batch safe to retry: a later request of the same API key with the same key and the same body answers the same results (header \`Idempotent-Replayed: true\`) without spending again; with another body it is a 409 \`conflict\`, as it is while the first request is still in progress. Keys are remembered for ${IDEMPOTENCY_TTL_MS / 3_600_000} hours. The key ${IDEMPOTENCY_KEY_RULE}.`,
        schema: { type: "string", minLength: 1, maxLength: 255, pattern: "^[!-~]+$" },
      },
    ],
    response: { "Idempotent-Replayed": { $ref: "#/components/headers/Idempotent-Replayed" } },
    errorStatuses: [409],
  },
};

/** When each event fires (spec §Events). */
const EVENT_DESCRIPTIONS: Readonly<Record<EventType, string>> = {
  "message.sent": "The messaging network accepted the message.",
  "message.delivered": "The message reached the handset.",
  "message.read": "The recipient opened it; only when the recipient has read receipts on.",
  "message.failed":
    "The message will not arrive; `data.error` carries the network's error code and title (code 0 and `reason` \"expired\" when it was not handed to the network before its `valid_until`); its credits are given back unless it was delivered.",
  "message.canceled": "Its key canceled the message before it was handed to the network (POST /v1/messages/{id}:cancel); its credits were given back.",
  "message.received": "Somebody replied; `data` describes the reply (`from`, `text`, `reply_to_message_id`).",
  "flow.completed": "A form was submitted; files are listed without contents (GET /v1/flow_responses/{id}/files/{index}).",
  "contact.opted_out":
    "A number was put on the workspace's opt-out list (`data.source`: a reply with an opt-out keyword, WhatsApp's 131050 on a marketing template, or the console); sends to it are refused with `recipient_opted_out` from now on.",
  "contact.opted_in": "A number was taken off the workspace's opt-out list (a reply with an opt-in keyword, or the console); sends to it are accepted again.",
};

/** What every webhook delivery has in common (spec §Outbound, §Webhook signature, §Delivery rules). */
const WEBHOOK_DELIVERY = `POSTed to the endpoint URL configured in the console, as JSON; only the event types selected for the endpoint are sent. Verify \`Service-Signature\` over the raw body before parsing it. Delivery is at least once and unordered: deduplicate on the event id (\`Service-Delivery\`) and order by \`data.occurred_at\`; ignore event types and fields you do not know.`;

const TIMESTAMP = "google.protobuf.Timestamp";
const STRUCT = "google.protobuf.Struct";
const VALUE = "google.protobuf.Value";
const LIST_VALUE = "google.protobuf.ListValue";
const EMPTY = "google.protobuf.Empty";
const HTTP_BODY = "google.api.HttpBody";

/** Codes answered only by the console API, left out of the public document. */
const CONSOLE_ONLY_CODES: ReadonlySet<ErrorCode> = new Set(["unauthenticated", "permission_denied"]);

/**
 * Where the API is served: `npm start` listens on port 8080 of this machine; a deployment
 * puts its own base URL here (generated clients take the base URL as a parameter).
 */
const SERVERS: JsonObject[] = [
  {
    url: "{scheme}://{host}",
    description: "The service: its public port (gRPC, Connect and REST on one port).",
    variables: {
      scheme: { default: "http", enum: ["http", "https"] },
      host: { default: "localhost:8080", description: "Host and port of the public port (PORT, 8080 by default)." },
    },
  },
];

/** Error statuses every operation may answer (others fall under `default`). */
const COMMON_ERROR_STATUSES = [400, 401, 403, 429, 500, 503];

const NULL: JsonObject = { type: "null" };
const ref = (name: string): JsonObject => ({ $ref: `#/components/schemas/${name}` });
const nullable = (schema: JsonObject): JsonObject => ({ anyOf: [schema, NULL] });

function withDescription(schema: JsonObject, description: string | undefined): JsonObject {
  return description ? { ...schema, description } : schema;
}

/** "GetMe" -> "getMe" */
function lowerFirst(name: string): string {
  return name.charAt(0).toLowerCase() + name.slice(1);
}

/** The OpenAPI path of a google.api.http template: "{id=messages/*}" becomes "{id}". */
function openApiPath(template: string): string {
  return template.replace(/\{([^}=]+)(=[^}]*)?\}/g, "{$1}");
}

function scalarSchema(type: ScalarType): JsonObject {
  switch (type) {
    case ScalarType.STRING:
      return { type: "string" };
    case ScalarType.BOOL:
      return { type: "boolean" };
    case ScalarType.BYTES:
      return { type: "string", contentEncoding: "base64" };
    case ScalarType.FLOAT:
    case ScalarType.DOUBLE:
      return { type: "number" };
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return { type: "integer", format: "int64" };
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return { type: "integer", format: "int64", minimum: 0 };
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return { type: "integer", format: "int32", minimum: 0 };
    default:
      return { type: "integer", format: "int32" };
  }
}

/** Adds "null" to a schema's type (scalars) or wraps it in anyOf (references). */
function orNull(schema: JsonObject): JsonObject {
  if (typeof schema.type === "string") {
    const out: JsonObject = { ...schema, type: [schema.type, "null"] };
    if (Array.isArray(schema.enum)) out.enum = [...schema.enum, null];
    return out;
  }
  return nullable(schema);
}

type Role = "input" | "output";

/**
 * Builds the OpenAPI 3.1 document of the REST routes of `services` (their
 * google.api.http rules), with a schema per message reached, as the REST
 * gateway reads and writes them.
 *
 * @throws Error when two operations would get the same operationId.
 */
export function buildOpenApiDocument(services: readonly DescService[], options: OpenApiOptions): JsonObject {
  const { describe } = options;
  const schemas: Record<string, JsonObject> = {};
  const outputTypes = new Set<string>();
  const pending: { desc: DescMessage | DescEnum; role: Role }[] = [];

  // Messages written in responses; a message also read in requests gets a separate "…Input" schema.
  const collectOutputs = (desc: DescMessage) => {
    if (outputTypes.has(desc.typeName)) return;
    outputTypes.add(desc.typeName);
    for (const field of desc.fields) if (field.message) collectOutputs(field.message);
  };
  for (const service of services) {
    for (const method of service.methods) {
      const binding = ruleOf(method)[0];
      if (binding) collectOutputs(responseMessage(method, binding.responseBody));
    }
  }
  for (const envelope of Object.values(options.webhookEnvelopes ?? {})) collectOutputs(envelope);

  function schemaName(desc: DescMessage | DescEnum, role: Role): string {
    const base = desc.typeName.startsWith("messaging.v1.") ? desc.typeName.slice("messaging.v1.".length) : desc.typeName;
    const name = role === "input" && desc.kind === "message" && outputTypes.has(desc.typeName) ? `${base}Input` : base;
    if (!(name in schemas)) {
      schemas[name] = {}; // reserved; filled below
      pending.push({ desc, role });
    }
    return name;
  }

  function messageRef(desc: DescMessage, role: Role): JsonObject {
    switch (desc.typeName) {
      case TIMESTAMP:
        return { type: "string", format: "date-time", description: "ISO 8601 UTC with milliseconds, for example 2026-01-31T12:00:00.000Z" };
      case STRUCT:
        return { type: "object", additionalProperties: true };
      case VALUE:
        return {};
      case LIST_VALUE:
        return { type: "array", items: {} };
      default:
        return ref(schemaName(desc, role));
    }
  }

  /** Schema of one value of a field (not the list or map around it). */
  function valueSchema(field: DescField, role: Role): JsonObject {
    if (field.message) return messageRef(field.message, role);
    if (field.enum) return ref(schemaName(field.enum, role));
    return scalarSchema(field.scalar as ScalarType);
  }

  function fieldSchema(field: DescField, role: Role): JsonObject {
    // Request fields carry the rules of the contract: keywords where JSON Schema has them, every rule in the description.
    const rules = role === "input" ? describeFieldRules(field) : undefined;
    const description = rules ? [describe(field), `Rules: ${rules}.`].filter(Boolean).join("\n\n") : describe(field);
    const keywords = role === "input" ? fieldRuleKeywords(field) : { value: {}, list: {} };
    const constrained = (schema: JsonObject) => ("$ref" in schema || Object.keys(keywords.value).length === 0 ? schema : { ...schema, ...keywords.value });
    if (field.fieldKind === "list") return withDescription({ type: "array", items: constrained(valueSchema(field, role)), ...keywords.list }, description);
    if (field.fieldKind === "map") {
      return withDescription({ type: "object", additionalProperties: constrained(valueSchema(field, role)) }, description);
    }
    const value = constrained(valueSchema(field, role));
    // Written as null when unset: messages, optional scalars, oneof members, enum zero values.
    // Read: null leaves any field unset.
    const canBeNull =
      role === "input" || field.fieldKind !== "scalar" || field.proto.proto3Optional || field.oneof !== undefined;
    return withDescription(canBeNull ? orNull(value) : value, description);
  }

  function buildMessageSchema(desc: DescMessage, role: Role): JsonObject {
    if (desc.typeName === EMPTY) return { type: "object", additionalProperties: false };
    const properties: JsonObject = {};
    for (const field of desc.fields) properties[field.name] = fieldSchema(field, role);
    const schema: JsonObject = { type: "object" };
    const description = describe(desc);
    if (description) schema.description = description;
    schema.properties = properties;
    if (role === "output") schema.required = desc.fields.map((f) => f.name);
    else schema.additionalProperties = false;
    return schema;
  }

  function buildEnumSchema(desc: DescEnum): JsonObject {
    const values = desc.values.filter((v) => v.number !== 0);
    const lines = values.map((v) => `- \`${enumValueToJson(desc, v.number)}\`: ${describe(v) ?? ""}`.trimEnd());
    const description = [describe(desc), "Values:", ...lines].filter(Boolean).join("\n");
    return { type: "string", enum: values.map((v) => enumValueToJson(desc, v.number)), description };
  }

  function queryParameters(desc: DescMessage, prefix: string, exclude: ReadonlySet<string>, seen: ReadonlySet<string>): JsonObject[] {
    const params: JsonObject[] = [];
    for (const field of desc.fields) {
      const name = prefix + field.name;
      if (exclude.has(name)) continue;
      const nested = field.fieldKind === "message" ? field.message : undefined;
      if (nested && ![TIMESTAMP, STRUCT, VALUE, LIST_VALUE].includes(nested.typeName) && !seen.has(nested.typeName)) {
        params.push(...queryParameters(nested, `${name}.`, exclude, new Set([...seen, nested.typeName])));
        continue;
      }
      const schema = field.fieldKind === "list" ? { type: "array", items: valueSchema(field, "input") } : valueSchema(field, "input");
      const param: JsonObject = { name, in: "query", required: false, schema };
      const description = describe(field);
      if (description) param.description = description;
      if (field.fieldKind === "list") Object.assign(param, { style: "form", explode: true });
      params.push(param);
    }
    return params;
  }

  const paths: Record<string, JsonObject> = {};
  const operationIds = new Set<string>();
  const tags: JsonObject[] = [];
  for (const service of services) {
    const bindings = service.methods.flatMap((method) => ruleOf(method).map((binding, index) => ({ method, binding, index })));
    if (bindings.length === 0) continue;
    tags.push(withDescription({ name: service.name }, describe(service)));
    for (const { method, binding, index } of bindings) {
      const path = openApiPath(binding.path);
      // Additional bindings of one method: getThing, getThing1, …
      const operationId = lowerFirst(method.name) + (index > 0 ? String(index) : "");
      if (operationIds.has(operationId)) throw new Error(`operationId ${operationId} is used twice; rename ${method.name}`);
      operationIds.add(operationId);
      const pathFields = [...binding.path.matchAll(/\{([^}=]+)/g)].map((m) => m[1] as string);
      const parameters: JsonObject[] = pathFields.map((fieldPath) => {
        const field = findField(method.input, fieldPath);
        return {
          name: fieldPath,
          in: "path",
          required: true,
          ...(field && describe(field) ? { description: describe(field) } : {}),
          schema: field ? valueSchema(field, "input") : { type: "string" },
        };
      });
      if (binding.body !== "*") {
        const exclude = new Set([...pathFields, ...(binding.body ? [binding.body] : [])]);
        parameters.push(...queryParameters(method.input, "", exclude, new Set([method.input.typeName])));
      }
      const grpcMethod = `/${service.typeName}/${method.name}`;
      const extra = OPERATION_HEADERS[grpcMethod];
      parameters.push(...(extra?.request ?? []));
      const scope = requiredScope(method);
      const description = [describe(method), scope ? `Scope: \`${scope}\`.` : "Any valid API key may call it."].filter(Boolean).join("\n\n");
      const operation: JsonObject = {
        operationId,
        summary: firstSentence(describe(method)) ?? method.name,
        description,
        tags: [service.name],
        "x-grpc-method": grpcMethod,
        security: [{ apiKey: scope ? [scope] : [] }],
      };
      if (parameters.length > 0) operation.parameters = parameters;
      if (binding.body !== "") {
        const bodyField = binding.body === "*" ? undefined : findField(method.input, binding.body);
        const schema = bodyField ? valueSchema(bodyField, "input") : ref(schemaName(method.input, "input"));
        operation.requestBody = { required: true, content: { "application/json": { schema } } };
      }
      const success = successResponse(method, binding.responseBody);
      if (extra) success.headers = { ...(success.headers as JsonObject), ...extra.response };
      const errorStatuses = [
        ...COMMON_ERROR_STATUSES,
        ...(pathFields.length > 0 ? [404] : []),
        ...(binding.body !== "" ? [413] : []), // a body over 1 MiB: payload_too_large
        ...(extra?.errorStatuses ?? []),
      ];
      operation.responses = {
        200: success,
        ...Object.fromEntries(errorStatuses.sort((a, b) => a - b).map((status) => [status, { $ref: `#/components/responses/Error${status}` }])),
        default: { $ref: "#/components/responses/Error" },
      };
      paths[path] = { ...paths[path], [binding.httpMethod.toLowerCase()]: operation };
    }
  }

  function successResponse(method: DescMethod, responseBody: string): JsonObject {
    const headers = {
      "Request-Id": { $ref: "#/components/headers/Request-Id" },
      "RateLimit-Limit": { $ref: "#/components/headers/RateLimit-Limit" },
      "RateLimit-Remaining": { $ref: "#/components/headers/RateLimit-Remaining" },
      "RateLimit-Reset": { $ref: "#/components/headers/RateLimit-Reset" },
    };
    const message = responseMessage(method, responseBody);
    if (message.typeName === HTTP_BODY) {
      return {
        description: "The raw bytes, with their own Content-Type (and Content-Length, Content-Disposition when known).",
        headers,
        content: { "*/*": { schema: { type: "string", contentMediaType: "application/octet-stream" } } },
      };
    }
    return {
      description: describe(message) ?? "OK",
      headers,
      content: { "application/json": { schema: ref(schemaName(message, "output")) } },
    };
  }

  const webhooks: Record<string, JsonObject> = {};
  for (const [type, envelope] of Object.entries(options.webhookEnvelopes ?? {}) as [EventType, DescMessage][]) {
    webhooks[type] = {
      post: {
        operationId: `on${type.split(/[._]/).map((part) => part.charAt(0).toUpperCase() + part.slice(1)).join("")}`,
        summary: EVENT_DESCRIPTIONS[type],
        description: `${EVENT_DESCRIPTIONS[type]}\n\n${WEBHOOK_DELIVERY}`,
        tags: ["Webhooks"],
        security: [],
        parameters: webhookHeaders(type),
        requestBody: { required: true, content: { "application/json": { schema: ref(schemaName(envelope, "output")) } } },
        responses: { "2XX": { $ref: "#/components/responses/WebhookReceived" }, default: { $ref: "#/components/responses/WebhookFailed" } },
      },
    };
  }

  // Fill the schemas reached (filling may reach more).
  for (let item = pending.shift(); item; item = pending.shift()) {
    const name = schemaName(item.desc, item.role);
    schemas[name] = item.desc.kind === "enum" ? buildEnumSchema(item.desc) : buildMessageSchema(item.desc, item.role);
  }

  const hooks = Object.keys(webhooks).length > 0 ? webhookComponents() : undefined;
  return {
    openapi: "3.1.0",
    info: { title: options.title, version: options.version, description: options.description },
    servers: SERVERS,
    security: [{ apiKey: [] }],
    tags: hooks ? [...tags, { name: "Webhooks", description: "Signed deliveries of events to the customer's endpoint." }] : tags,
    paths,
    ...(hooks ? { webhooks } : {}),
    components: {
      schemas: { ...sortKeys(schemas), ...errorSchemas() },
      ...(hooks ? { parameters: hooks.parameters } : {}),
      responses: { ...errorResponses(), ...hooks?.responses },
      headers: headerComponents(),
      securitySchemes: {
        apiKey: {
          type: "http",
          scheme: "bearer",
          description:
            "An API key, sent on every request as `Authorization: Bearer sk_…`. Keys are made in the console; each has scopes, an optional expiry, an optional IP allow-list and a per-minute budget.",
        },
      },
    },
  };
}

/** Header parameters of a webhook delivery of `type`: the shared ones of webhookComponents() and the type. */
function webhookHeaders(type: EventType): JsonObject[] {
  return [
    { $ref: "#/components/parameters/Service-Signature" },
    { name: "Service-Event", in: "header", required: true, description: "The event type.", schema: { type: "string", const: type } },
    { $ref: "#/components/parameters/Service-Delivery" },
    { $ref: "#/components/parameters/webhook-id" },
    { $ref: "#/components/parameters/webhook-timestamp" },
    { $ref: "#/components/parameters/webhook-signature" },
  ];
}

/** Parameters and responses every webhook delivery shares (spec §Outbound, §Webhook signature, §Delivery rules). */
function webhookComponents(): { parameters: JsonObject; responses: JsonObject } {
  return {
    parameters: {
      "Service-Signature": {
        name: "Service-Signature",
        in: "header",
        required: true,
        description:
          "`t=<unix seconds>,v1=<hex>`: v1 is the lowercase hex HMAC-SHA256, keyed with the endpoint's signing secret (`whsec_…`), of `<t>.<raw body>`. Refuse a delivery whose t is not a number or is more than 300 seconds from your clock, and compare in constant time.",
        schema: { type: "string", pattern: "^t=\\d+,v1=[0-9a-f]{64}$" },
      },
      "Service-Delivery": {
        name: "Service-Delivery",
        in: "header",
        required: true,
        description: "The event id: equals the envelope's id and is the same on every retry of the event.",
        schema: { type: "string", format: "uuid" },
      },
      // Standard Webhooks (https://www.standardwebhooks.com), sent beside the spec's headers.
      "webhook-id": {
        name: "webhook-id",
        in: "header",
        required: true,
        description: "Standard Webhooks: the event id (the same as Service-Delivery).",
        schema: { type: "string", format: "uuid" },
      },
      "webhook-timestamp": {
        name: "webhook-timestamp",
        in: "header",
        required: true,
        description: "Standard Webhooks: when the attempt was signed, in unix seconds (the same as Service-Signature's t).",
        schema: { type: "string", pattern: "^\\d+$" },
      },
      "webhook-signature": {
        name: "webhook-signature",
        in: "header",
        required: true,
        description:
          "Standard Webhooks: `v1,<base64>`, the HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<raw body>` keyed with the bytes of the signing secret (the base64 after `whsec_`). Verify it with any Standard Webhooks library.",
        schema: { type: "string", pattern: "^v1,[A-Za-z0-9+/]{43}=$" },
      },
    },
    responses: {
      WebhookReceived: { description: "Received: any 2xx within ten seconds. The body is ignored." },
      WebhookFailed: {
        description:
          "Any other answer, or none within ten seconds, is a failure. A failed delivery is retried seven times (immediately, then after 10 s, 1 min, 5 min, 30 min, 2 h and 6 h); after twenty consecutive failures the endpoint is disabled.",
      },
    },
  };
}

/** The message written as the JSON body: the output, or its `response_body` field's message. */
function responseMessage(method: DescMethod, responseBody: string): DescMessage {
  if (responseBody === "") return method.output;
  const field = findField(method.output, responseBody);
  if (field?.fieldKind !== "message") throw new Error(`response_body ${responseBody} of ${method.name} is not a message field`);
  return field.message;
}

function findField(desc: DescMessage, fieldPath: string): DescField | undefined {
  let message: DescMessage | undefined = desc;
  let field: DescField | undefined;
  for (const name of fieldPath.split(".")) {
    field = message?.fields.find((f) => f.name === name);
    message = field?.fieldKind === "message" ? field.message : undefined;
  }
  return field;
}

function firstSentence(text: string | undefined): string | undefined {
  if (!text) return undefined;
  const flat = text.replace(/\s+/g, " ").trim();
  const end = flat.search(/\.(\s|$)/);
  return end < 0 ? flat : flat.slice(0, end + 1);
}

function sortKeys(record: Record<string, JsonObject>): Record<string, JsonObject> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => a.localeCompare(b)));
}

/** Error codes of the public API by HTTP status, from the one error table. */
function codesByStatus(): Map<number, ErrorCode[]> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const [code, { httpStatus }] of Object.entries(errorTable) as [ErrorCode, { httpStatus: number }][]) {
    if (CONSOLE_ONLY_CODES.has(code)) continue;
    byStatus.set(httpStatus, [...(byStatus.get(httpStatus) ?? []), code]);
  }
  return byStatus;
}

function errorSchemas(): Record<string, JsonValue> {
  const codes = [...codesByStatus()].flatMap(([status, list]) => list.map((code) => `\`${code}\` (${status})`));
  return {
    Error: {
      type: "object",
      description: "Every error answer of the REST API.",
      required: ["error"],
      properties: {
        error: {
          type: "object",
          required: ["code", "message", "details", "request_id"],
          properties: {
            code: {
              type: "string",
              description: `Machine-readable error code; new codes may be added. Known codes (HTTP status): ${codes.join(", ")}.`,
            },
            message: { type: "string", description: "What went wrong, for people." },
            details: {
              type: "object",
              description:
                "Facts about the error as strings, by code: insufficient_scope has required_scope and held_scopes (comma-separated); invalid_argument has field, rule and field_violations; recipient_opted_out has phone_number; insufficient_credits has price_credits; key refusals name api_key_id where the key was recognised.",
              properties: {
                field_violations: {
                  type: "array",
                  description: "invalid_argument: every broken rule of the request.",
                  items: { $ref: "#/components/schemas/FieldViolation" },
                },
              },
              additionalProperties: { type: "string" },
            },
            request_id: { type: "string", pattern: "^req_", description: "The Request-Id of the answer, for support and the request log." },
          },
        },
      },
    },
    FieldViolation: {
      type: "object",
      required: ["field", "description"],
      properties: {
        field: { type: "string", description: "Path of the field in snake_case, for example template.variables.code." },
        description: { type: "string", description: "The rule the value breaks." },
      },
    },
  };
}

function errorResponses(): Record<string, JsonValue> {
  const errorHeaders: JsonObject = {
    "Request-Id": { $ref: "#/components/headers/Request-Id" },
    "RateLimit-Limit": { $ref: "#/components/headers/RateLimit-Limit" },
    "RateLimit-Remaining": { $ref: "#/components/headers/RateLimit-Remaining" },
    "RateLimit-Reset": { $ref: "#/components/headers/RateLimit-Reset" },
  };
  const content = { "application/json": { schema: { $ref: "#/components/schemas/Error" } } };
  const responses: Record<string, JsonValue> = {};
  for (const [status, codes] of [...codesByStatus()].sort(([a], [b]) => a - b)) {
    responses[`Error${status}`] = {
      description: `Error codes: ${codes.join(", ")}.`,
      headers: status === 429 ? { ...errorHeaders, "Retry-After": { $ref: "#/components/headers/Retry-After" } } : errorHeaders,
      content,
    };
  }
  responses.Error = { description: "Any other error (see Error.code).", headers: errorHeaders, content };
  return responses;
}

function headerComponents(): Record<string, JsonValue> {
  const seconds = { type: "integer", minimum: 0 };
  return {
    "Request-Id": {
      description: "Identifier of the request (req_…), also in error bodies and the request log.",
      required: true,
      schema: { type: "string", pattern: "^req_" },
    },
    "RateLimit-Limit": { description: "The key's budget of requests per minute.", required: true, schema: { type: "integer", minimum: 0 } },
    "RateLimit-Remaining": { description: "Requests left in the current one-minute window.", required: true, schema: { type: "integer", minimum: 0 } },
    "RateLimit-Reset": { description: "Seconds until the window rolls over.", required: true, schema: seconds },
    "Retry-After": { description: "On 429: seconds to wait before retrying, equal to RateLimit-Reset.", required: true, schema: seconds },
    "Idempotent-Replayed": {
      description: "`true` when the answer is what an earlier request with the same Idempotency-Key made (the message, or a batch's results); absent otherwise.",
      schema: { type: "string", enum: ["true"] },
    },
  };
}
