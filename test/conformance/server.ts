import { readFile } from "node:fs/promises";
import { pino } from "pino";
import { create, createFileRegistry, fromBinary, toBinary, type DescMessage } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { loadConfig } from "../../src/config.js";
import { publicInterceptors } from "../../src/gateway/interceptors.js";
import { createRpcServer } from "../../src/gateway/rpc-server.js";
import { MAX_MESSAGE_BYTES } from "../../src/gateway/rpc-input.js";
import { createLogger } from "../../src/shared/logger.js";
import { createConformanceService } from "./conformance-service.js";

/*
 * The server under test of the Connect conformance suite (run by
 * test/conformance/run.ts through `connectconformance --mode server`): reads
 * a length-prefixed ServerCompatRequest from standard input, serves the
 * ConformanceService on a free loopback port with the public port's own
 * stack (createRpcServer: the listener, the REST gateway, the unary gRPC and
 * Connect paths, Connect's router, the public interceptors and the input
 * checks), writes a length-prefixed ServerCompatResponse to standard output
 * and runs until SIGTERM. The suite's descriptors are read from the file
 * CONFORMANCE_DESCRIPTORS (a FileDescriptorSet that run.ts builds); logs go
 * to standard error.
 */

const descriptorsFile = process.env.CONFORMANCE_DESCRIPTORS;
if (!descriptorsFile) throw new Error("CONFORMANCE_DESCRIPTORS must name the suite's FileDescriptorSet (run through npm run conformance)");
const registry = createFileRegistry(fromBinary(FileDescriptorSetSchema, await readFile(descriptorsFile)));
const messageType = (name: string) => registry.getMessage(`connectrpc.conformance.v1.${name}`) as DescMessage;

/** Reads one message prefixed with its 32-bit big-endian length from standard input. */
async function readSizeDelimited(): Promise<Buffer> {
  let buffered = Buffer.alloc(0);
  for await (const chunk of process.stdin) {
    buffered = Buffer.concat([buffered, chunk as Buffer]);
    if (buffered.length >= 4 && buffered.length >= 4 + buffered.readUInt32BE(0)) break;
  }
  if (buffered.length < 4 || buffered.length < 4 + buffered.readUInt32BE(0)) throw new Error("standard input ended before a whole ServerCompatRequest");
  return buffered.subarray(4, 4 + buffered.readUInt32BE(0));
}

const request = fromBinary(messageType("ServerCompatRequest"), await readSizeDelimited()) as unknown as { useTls: boolean; messageReceiveLimit: number };
if (request.useTls) throw new Error("this server serves cleartext only (supportsTls is false in test/conformance/config.yaml)");

const logger = createLogger("error", "conformance-server", pino.destination(2));
const config = loadConfig({});
const server = createRpcServer({
  // Not completed by mergeServices: `Unimplemented` has no handler, and the stack's own answer is what the suite checks.
  services: [createConformanceService(registry)],
  interceptors: publicInterceptors(logger),
  trustForwardedFor: false,
  limits: config,
  input: { maxMessageBytes: request.messageReceiveLimit > 0 ? request.messageReceiveLimit : MAX_MESSAGE_BYTES, registry },
  logger,
});
const port = await server.listen(0, "127.0.0.1");

const response = toBinary(messageType("ServerCompatResponse"), create(messageType("ServerCompatResponse"), { host: "127.0.0.1", port } as never));
const prefix = Buffer.alloc(4);
prefix.writeUInt32BE(response.length);
process.stdout.write(Buffer.concat([prefix, response]));

process.once("SIGTERM", () => {
  void server.close(1000).then(() => process.exit(0));
});
