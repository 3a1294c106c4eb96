import { create, createRegistry, toBinary, type DescFile, type DescService, type MessageInitShape } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { Code, type ServiceImpl } from "@connectrpc/connect";
import {
  ServerReflection as ReflectionV1,
  ServerReflectionResponseSchema as ResponseV1,
  type ServerReflectionRequest,
} from "../../gen/grpc/reflection/v1/reflection_pb.js";
import { ServerReflection as ReflectionV1Alpha } from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { file_google_rpc_error_details } from "../../gen/google/rpc/error_details_pb.js";
import { registerService, type ServiceRegistration } from "./services.js";

/**
 * gRPC server reflection (grpc.reflection.v1 and the older v1alpha, which
 * grpcurl and Postman still try), so that `grpcurl -plaintext HOST:PORT list`
 * and `describe` work without the protos. It answers for `services` and the
 * reflection services themselves: list_services, file_by_filename and
 * file_containing_symbol (a service, method, message or enum; the answer
 * carries the file and every file it imports, as serialized
 * FileDescriptorProtos; google.rpc's error details are known too, so that a
 * client can decode an error's ErrorInfo); extensions: NOT_FOUND (this API
 * declares none).
 * Open on the public port like health: it tells the shape of the public API,
 * which the OpenAPI document tells too, and nothing of any workspace.
 */
export function createReflectionServices(services: readonly DescService[]): ServiceRegistration[] {
  const all = [...services, ReflectionV1, ReflectionV1Alpha];
  const names = all.map((s) => s.typeName);
  /** Every file of these services and every file they import, by file name ("messaging/v1/messages.proto"). */
  const files = new Map<string, DescFile>();
  const collect = (f: DescFile) => {
    if (files.has(f.proto.name)) return;
    files.set(f.proto.name, f);
    f.dependencies.forEach(collect);
  };
  all.forEach((s) => collect(s.file));
  // The error details every error carries (google.rpc.ErrorInfo, BadRequest), so that clients can decode them.
  collect(file_google_rpc_error_details);
  const registry = createRegistry(...files.values());

  /** The file of `symbol` ("pkg.Service", "pkg.Service.Method", "pkg.Message", "pkg.Enum"), if this registry knows it. */
  function fileOf(symbol: string): DescFile | undefined {
    const found = registry.get(symbol);
    if (found) return found.file;
    const parent = registry.get(symbol.slice(0, symbol.lastIndexOf(".")));
    return parent?.kind === "service" && parent.methods.some((m) => `${parent.typeName}.${m.name}` === symbol) ? parent.file : undefined;
  }

  /** `file` and its imports, each once, as serialized FileDescriptorProtos. */
  function withImports(file: DescFile): Uint8Array[] {
    const seen = new Map<string, DescFile>();
    const visit = (f: DescFile) => {
      if (seen.has(f.proto.name)) return;
      seen.set(f.proto.name, f);
      f.dependencies.forEach(visit);
    };
    visit(file);
    return [...seen.values()].map((f) => toBinary(FileDescriptorProtoSchema, f.proto));
  }

  function answer(req: ServerReflectionRequest): MessageInitShape<typeof ResponseV1> {
    const base = { validHost: req.host, originalRequest: req };
    const notFound = (message: string) => ({ ...base, messageResponse: { case: "errorResponse" as const, value: { errorCode: Code.NotFound, errorMessage: message } } });
    const fileAnswer = (file: DescFile | undefined, what: string) =>
      file ? { ...base, messageResponse: { case: "fileDescriptorResponse" as const, value: { fileDescriptorProto: withImports(file) } } } : notFound(`${what} is not known to this server`);
    const request = req.messageRequest;
    switch (request.case) {
      case "listServices":
        return { ...base, messageResponse: { case: "listServicesResponse", value: { service: names.map((name) => ({ name })) } } };
      case "fileByFilename":
        return fileAnswer(files.get(request.value), `file ${JSON.stringify(request.value)}`);
      case "fileContainingSymbol":
        return fileAnswer(fileOf(request.value), `symbol ${JSON.stringify(request.value)}`);
      case "fileContainingExtension":
        return notFound(`no extension ${request.value.extensionNumber} of ${request.value.containingType}: this API declares no extensions`);
      case "allExtensionNumbersOfType":
        return registry.getMessage(request.value)
          ? { ...base, messageResponse: { case: "allExtensionNumbersResponse", value: { baseTypeName: request.value, extensionNumber: [] } } }
          : notFound(`type ${JSON.stringify(request.value)} is not known to this server`);
      default:
        return { ...base, messageResponse: { case: "errorResponse", value: { errorCode: Code.InvalidArgument, errorMessage: "message_request must be set" } } };
    }
  }

  const v1: ServiceImpl<typeof ReflectionV1> = {
    async *serverReflectionInfo(requests) {
      for await (const req of requests) yield create(ResponseV1, answer(req));
    },
  };
  // v1alpha has the same messages under another package: the fields match one to one.
  const v1alpha: ServiceImpl<typeof ReflectionV1Alpha> = {
    async *serverReflectionInfo(requests) {
      for await (const req of requests) yield answer(req as unknown as ServerReflectionRequest) as never;
    },
  };
  return [registerService(ReflectionV1, v1), registerService(ReflectionV1Alpha, v1alpha)];
}
