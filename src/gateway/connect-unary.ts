import type { DescMessage, Message } from "@bufbuild/protobuf";
import { ConnectError, type Interceptor } from "@connectrpc/connect";
import { createMethodSerializationLookup, type MethodSerializationLookup } from "@connectrpc/connect/protocol";
import { codeToHttpStatus, errorToJsonBytes, trailerMux } from "@connectrpc/connect/protocol-connect";
import { COMPRESS_MIN_BYTES, RPC_JSON_OPTIONS, isPlainUnary, readCallInput, responseCompression, rpcCallContext, unaryTargets, type CallTarget } from "./call-context.js";
import type { RequestState } from "./request-state.js";
import type { InputRules } from "./rpc-input.js";
import type { NodeRequest, NodeResponse } from "./node-http.js";
import type { ServiceRegistration } from "./services.js";

/** Unary Connect-protocol calls answered by the gateway itself (see createConnectUnary). */
export interface ConnectUnary {
  /**
   * The method a request calls, when this path answers it: a unary method,
   * POST, `application/json` or `application/proto`, its body not compressed,
   * no deadline. Undefined otherwise: Connect's router answers it.
   */
  targetOf(req: NodeRequest, path: string): CallTarget | undefined;
  /** Answers the call: its message read and checked, the interceptors and handler, the answer or the error as Connect's JSON. */
  handle(req: NodeRequest, res: NodeResponse, state: RequestState, target: CallTarget): Promise<void>;
}

/**
 * Unary calls of the Connect protocol (connect-es, connect-go, curl with
 * JSON) answered as the gateway answers REST and plain gRPC: the lean
 * CallContext and the same interceptor chain, where Connect's router makes
 * three AbortControllers, four Headers and two DOMExceptions per call. The
 * answer is the router's, made with Connect's own helpers: the message
 * serialized with the router's JSON options (or binary), an error as
 * Connect's error JSON with its HTTP status (`errorToJsonBytes`,
 * `codeToHttpStatus`), the error's metadata and the handler's headers,
 * trailers as `trailer-` headers (`trailerMux`), the body compressed from
 * 1 KiB with the encoding negotiated as the router does. The input is read
 * and checked by readRpcInput as on every protocol. GET calls, calls with a
 * deadline (`connect-timeout-ms`) or a compressed body, and other content
 * types go through Connect's router.
 */
export function createConnectUnary(services: readonly ServiceRegistration[], interceptors: readonly Interceptor[], rules: InputRules): ConnectUnary {
  const jsonOptions = { ...RPC_JSON_OPTIONS, registry: rules.registry };
  const targets = unaryTargets(services, interceptors);
  const serializations = new Map<CallTarget, MethodSerializationLookup<DescMessage, DescMessage>>();
  const serializationOf = (target: CallTarget) => {
    let found = serializations.get(target);
    if (!found) {
      found = createMethodSerializationLookup(target.method, undefined, jsonOptions, { readMaxBytes: rules.maxMessageBytes, writeMaxBytes: 0xffffffff });
      serializations.set(target, found);
    }
    return found;
  };

  return {
    targetOf(req, path) {
      const plain = isPlainUnary(req, ["application/json", "application/proto"], "connect-timeout-ms", "content-encoding");
      return plain ? targets.get(path) : undefined;
    },

    async handle(req, res, state, target) {
      const binary = req.headers["content-type"] === "application/proto";
      const context = rpcCallContext(req, res, state, target, "connect");
      const serialization = serializationOf(target);
      const head = new Headers({ "content-type": binary ? "application/proto" : "application/json" });
      let status = 200;
      let body: Uint8Array;
      try {
        const input = await readCallInput(context, req, (body) => serialization.getI(binary).parse(body), rules);
        const response = await context.invoke(input);
        context.responseHeaderOf(response)?.forEach((value, name) => head.set(name, value));
        body = serialization.getO(binary).serialize(response.message as Message);
      } catch (err) {
        const error = ConnectError.from(err);
        status = codeToHttpStatus(error.code);
        context.responseHeaderIfSet?.forEach((value, name) => head.set(name, value));
        head.set("content-type", "application/json");
        error.metadata.forEach((value, name) => head.set(name, value));
        body = errorToJsonBytes(error, jsonOptions);
      }
      if (context.gone) return; // the connection is closed: nothing can be written to it
      const compression = responseCompression(req, "accept-encoding");
      if (compression && body.byteLength >= COMPRESS_MIN_BYTES) {
        body = await compression.compress(body);
        head.set("content-encoding", compression.name);
      }
      const trailers = context.responseTrailerIfSet;
      const headers = trailers ? trailerMux(head, trailers) : head;
      headers.set("content-length", String(body.byteLength));
      const record: Record<string, string> = {};
      headers.forEach((value, name) => (record[name] = value));
      res.writeHead(status, record);
      res.end(Buffer.from(body.buffer, body.byteOffset, body.byteLength));
    },
  };
}
