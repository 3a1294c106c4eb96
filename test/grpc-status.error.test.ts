import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestService, type TestService } from "./helpers/test-service.js";

/*
 * A gRPC call the service refuses before any handler (a method it does not
 * serve, a missing or unknown key) is answered with a gRPC status and the
 * error detail, over gRPC (@grpc/grpc-js and Connect's gRPC transport) and
 * gRPC-Web: never an HTTP error with a JSON body.
 */

let t: TestService;
let key: string;
beforeAll(async () => {
  t = await createTestService();
  key = (await t.createKey(await t.createWorkspace())).secret;
});
afterAll(() => t.close());

/** Calls `path` with @grpc/grpc-js and an empty message; resolves to the status it ends with. */
function grpcJsStatus(path: string, apiKey?: string): Promise<grpc.StatusObject> {
  const client = new grpc.Client(`127.0.0.1:${new URL(t.publicUrl).port}`, grpc.credentials.createInsecure());
  const md = new grpc.Metadata();
  if (apiKey) md.set("authorization", `Bearer ${apiKey}`);
  return new Promise((resolve) => {
    const call = client.makeUnaryRequest(path, (b: Buffer) => b, (b: Buffer) => b, Buffer.alloc(0), md, () => {});
    call.on("status", (status: grpc.StatusObject) => {
      client.close();
      resolve(status);
    });
  });
}

describe("gRPC calls refused before any handler", () => {
  it("an unknown method with a valid key: UNIMPLEMENTED naming the method, as the protocol has it: no details (grpc-js)", async () => {
    const status = await grpcJsStatus("/messaging.v1.NoSuchService/DoIt", key);
    expect(status.code).toBe(grpc.status.UNIMPLEMENTED);
    expect(status.details).toContain("/messaging.v1.NoSuchService/DoIt");
    expect(status.metadata.get("grpc-status-details-bin")).toHaveLength(0);
  });

  it("an unknown method without a key: UNAUTHENTICATED with the reason (grpc-js)", async () => {
    const status = await grpcJsStatus("/messaging.v1.NoSuchService/DoIt");
    expect(status.code).toBe(grpc.status.UNAUTHENTICATED);
    expect(status.details).toMatch(/Authorization/);
  });

  it("a served method with an unknown key: UNAUTHENTICATED (grpc-js)", async () => {
    const status = await grpcJsStatus("/messaging.v1.AccountService/GetMe", `sk_${"A".repeat(43)}`);
    expect(status.code).toBe(grpc.status.UNAUTHENTICATED);
  });

  it("over gRPC-Web the same statuses arrive in the headers of a trailers-only answer", async () => {
    const call = (apiKey?: string) =>
      fetch(`${t.publicUrl}/messaging.v1.NoSuchService/DoIt`, {
        method: "POST",
        headers: { "content-type": "application/grpc-web+proto", "x-grpc-web": "1", ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) },
        body: new Uint8Array([0, 0, 0, 0, 0]),
      });
    const unknown = await call(key);
    expect(unknown.status).toBe(200);
    expect(unknown.headers.get("content-type")).toBe("application/grpc-web+proto");
    expect(unknown.headers.get("grpc-status")).toBe(String(grpc.status.UNIMPLEMENTED));
    const anonymous = await call();
    expect(anonymous.headers.get("grpc-status")).toBe(String(grpc.status.UNAUTHENTICATED));
    expect(anonymous.headers.get("grpc-status-details-bin")).toBeTruthy();
    expect(await anonymous.text()).toBe("");
  });
});
