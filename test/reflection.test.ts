import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as v1 from "../gen/grpc/reflection/v1/reflection_pb.js";
import * as v1alpha from "../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { createTestService, type TestService } from "./helpers/test-service.js";

/*
 * gRPC server reflection on the public port, as grpcurl uses it (`list`,
 * `describe`): a real @grpc/grpc-js client streams reflection requests
 * without an API key and reads the FileDescriptorProtos back.
 */

let t: TestService;
beforeAll(async () => {
  t = await createTestService();
});
afterAll(() => t.close());

/** Sends `requests` on one ServerReflectionInfo stream of `version`; resolves to the answers in order. */
function reflect<Req extends DescMessage, Res extends DescMessage>(
  path: string,
  requestSchema: Req,
  responseSchema: Res,
  requests: MessageShape<Req>[],
): Promise<MessageShape<Res>[]> {
  const client = new grpc.Client(`127.0.0.1:${new URL(t.publicUrl).port}`, grpc.credentials.createInsecure());
  const call = client.makeBidiStreamRequest(
    path,
    (m: MessageShape<Req>) => Buffer.from(toBinary(requestSchema, m)),
    (b: Buffer) => fromBinary(responseSchema, b),
  );
  const answers: MessageShape<Res>[] = [];
  return new Promise((resolve, reject) => {
    call.on("data", (m: MessageShape<Res>) => {
      answers.push(m);
      if (answers.length === requests.length) call.end();
    });
    call.on("error", reject);
    call.on("end", () => {
      client.close();
      resolve(answers);
    });
    for (const r of requests) call.write(r);
  });
}

const V1 = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo";
const request = (messageRequest: v1.ServerReflectionRequest["messageRequest"]) => create(v1.ServerReflectionRequestSchema, { messageRequest });

describe("gRPC server reflection", () => {
  it("lists the public services, health and reflection, without an API key", async () => {
    const [list] = await reflect(V1, v1.ServerReflectionRequestSchema, v1.ServerReflectionResponseSchema, [request({ case: "listServices", value: "" })]);
    expect(list!.messageResponse.case).toBe("listServicesResponse");
    const names = (list!.messageResponse.value as v1.ListServiceResponse).service.map((s) => s.name);
    expect(names).toEqual(expect.arrayContaining(["messaging.v1.MessageService", "messaging.v1.AccountService", "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection"]));
    expect(names.some((n) => n.startsWith("messaging.console"))).toBe(false);
  });

  it("describes a service and a method with their file and its imports; an unknown symbol is NOT_FOUND", async () => {
    const answers = await reflect(V1, v1.ServerReflectionRequestSchema, v1.ServerReflectionResponseSchema, [
      request({ case: "fileContainingSymbol", value: "messaging.v1.MessageService" }),
      request({ case: "fileContainingSymbol", value: "messaging.v1.MessageService.SendMessage" }),
      request({ case: "fileContainingSymbol", value: "messaging.v1.NoSuchThing" }),
      request({ case: "fileByFilename", value: "messaging/v1/messages.proto" }),
      request({ case: "fileContainingSymbol", value: "google.rpc.ErrorInfo" }),
    ]);
    for (const answer of answers.slice(0, 2)) {
      expect(answer.messageResponse.case).toBe("fileDescriptorResponse");
      const files = (answer.messageResponse.value as v1.FileDescriptorResponse).fileDescriptorProto.map((b) => fromBinary(FileDescriptorProtoSchema, b));
      const own = files.find((f) => f.service.some((s) => s.name === "MessageService"));
      expect(own?.package).toBe("messaging.v1");
      expect(own?.service.find((s) => s.name === "MessageService")?.method.map((m) => m.name)).toContain("SendMessage");
      // Everything it imports comes along, so that a client can resolve every type.
      for (const dependency of own!.dependency) expect(files.map((f) => f.name)).toContain(dependency);
    }
    expect(answers[2]!.messageResponse).toMatchObject({ case: "errorResponse", value: { errorCode: grpc.status.NOT_FOUND } });
    expect(answers[3]!.messageResponse.case).toBe("fileDescriptorResponse");
    const byName = (answers[3]!.messageResponse.value as v1.FileDescriptorResponse).fileDescriptorProto.map((b) => fromBinary(FileDescriptorProtoSchema, b));
    expect(byName[0]?.name).toBe("messaging/v1/messages.proto");
    // The error detail every error carries can be decoded by a reflecting client (grpcurl prints it).
    expect(answers[4]!.messageResponse.case).toBe("fileDescriptorResponse");
  });

  it("answers the older v1alpha protocol too", async () => {
    const [list] = await reflect(
      "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
      v1alpha.ServerReflectionRequestSchema,
      v1alpha.ServerReflectionResponseSchema,
      [create(v1alpha.ServerReflectionRequestSchema, { messageRequest: { case: "listServices", value: "" } })],
    );
    expect((list!.messageResponse.value as v1alpha.ListServiceResponse).service.map((s) => s.name)).toContain("messaging.v1.SenderService");
  });
});
