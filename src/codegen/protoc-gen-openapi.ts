import { create, createFileRegistry, type DescMessage } from "@bufbuild/protobuf";
import { CodeGeneratorResponse_Feature, CodeGeneratorResponseSchema, FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { getComments, runNodeJs, type Plugin } from "@bufbuild/protoplugin";
import { EVENT_TYPES, type EventType } from "../events/event-bus.js";
import { buildOpenApiDocument, type DescribeFn } from "./openapi-document.js";

/*
 * A protoc plugin (run by buf, see src/codegen/buf.gen.clients.yaml, with
 * strategy "all") that writes the OpenAPI 3.1 document of the REST surface
 * of the services in the files to generate, as messaging.v1.openapi.json
 * (served at GET /openapi.json by src/openapi/openapi-capability.ts).
 * Descriptions are the leading comments of the protos. The webhook envelopes
 * are the messages of events.proto: MessageEvent for message.* events,
 * FlowCompletedEvent for flow.completed, ContactEvent for contact.* events.
 */

const DESCRIPTION = `A workspace-scoped API to send template messages, read back their status, and read the configuration of the signed webhooks the service delivers.

The same operations are served over gRPC, gRPC-Web and Connect on the same port; the \`x-grpc-method\` of each operation names its RPC.

JSON conventions: field names are snake_case; every field of a response is present, \`null\` where a value is absent; times are ISO 8601 UTC with milliseconds; enum values are lower-case names without their type prefix; 64-bit integers are JSON numbers; lists are \`{"object": "list", "data": [...], "total": n, "next_page_token": "..." | null}\`. Request bodies are read strictly: an unknown field or a wrong type is a 400 \`invalid_argument\` naming every such field. Clients ignore fields and enum values they do not know.

Every response carries \`Request-Id\` and the rate-limit headers \`RateLimit-Limit\`, \`RateLimit-Remaining\`, \`RateLimit-Reset\` (a one-minute window per key); over budget the answer is 429 with \`Retry-After\`.

\`webhooks\` describes the signed event deliveries the service POSTs to the customer's endpoint: one entry per event type, the envelope as body, the \`Service-Signature\`, \`Service-Event\` and \`Service-Delivery\` headers.`;

/** Comment text without the comment markers' space and without buf lint directives. */
function clean(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  const lines = text
    .split("\n")
    .map((line) => (line.startsWith(" ") ? line.slice(1) : line).trimEnd())
    .filter((line) => !line.startsWith("buf:lint:"));
  const joined = lines.join("\n").trim();
  return joined === "" ? undefined : joined;
}

const plugin: Plugin = {
  name: "protoc-gen-openapi",
  version: "v1",
  run(request) {
    const registry = createFileRegistry(create(FileDescriptorSetSchema, { file: request.protoFile }));
    const services = request.fileToGenerate.flatMap((name) => registry.getFile(name)?.services ?? []);
    // The template's other input (protovalidate's buf/validate, for gen/go) has no services: nothing to write.
    if (services.length === 0) return create(CodeGeneratorResponseSchema, { supportedFeatures: BigInt(CodeGeneratorResponse_Feature.PROTO3_OPTIONAL) });
    const describe: DescribeFn = (desc) => clean(getComments(desc).leading);
    const envelope = (typeName: string): DescMessage => {
      const desc = registry.getMessage(typeName);
      if (!desc) throw new Error(`${typeName} is not among the files to generate`);
      return desc;
    };
    const webhookEnvelopes = Object.fromEntries(
      EVENT_TYPES.map((type) => [
        type,
        envelope(type.startsWith("message.") ? "messaging.v1.MessageEvent" : type.startsWith("contact.") ? "messaging.v1.ContactEvent" : "messaging.v1.FlowCompletedEvent"),
      ]),
    ) as Record<EventType, DescMessage>;
    const document = buildOpenApiDocument(services, {
      title: "Messaging service API",
      version: "v1",
      description: DESCRIPTION,
      describe,
      webhookEnvelopes,
    });
    return create(CodeGeneratorResponseSchema, {
      supportedFeatures: BigInt(CodeGeneratorResponse_Feature.PROTO3_OPTIONAL),
      file: [{ name: "messaging.v1.openapi.json", content: `${JSON.stringify(document, null, 2)}\n` }],
    });
  },
};

runNodeJs(plugin);
