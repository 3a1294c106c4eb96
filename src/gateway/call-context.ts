import type { DescMethod, DescService, Message } from "@bufbuild/protobuf";
import { create, isMessage } from "@bufbuild/protobuf";
import {
  createContextKey,
  type ContextValues,
  type HandlerContext,
  type Interceptor,
  type StreamResponse,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";
import { compressionNegotiate, type Compression } from "@connectrpc/connect/protocol";
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";
import type { RequestState } from "./request-state.js";
import { headerOf, headersOf, type NodeRequest, type NodeResponse } from "./node-http.js";
import { readRpcInput, rpcInputKey, type CheckedBody, type InputRules } from "./rpc-input.js";
import type { ServiceRegistration } from "./services.js";

/*
 * The calls the service answers itself rather than through Connect's router
 * (REST, and plain unary gRPC and Connect calls: grpc-unary.ts,
 * connect-unary.ts): their handler context, and the interceptor chain they
 * run, the same interceptors as the router's.
 */

/** A method as the gateway calls it: its handler and the chain of interceptors around it. */
export interface CallTarget {
  service: DescService;
  method: DescMethod;
  handler: (input: Message, context: HandlerContext) => unknown;
  /** The interceptors, then the handler (built once: see chainInterceptors). */
  invoke: (req: UnaryRequest) => Promise<UnaryResponse | StreamResponse>;
}

/**
 * The HandlerContext of one call the gateway answers. Connect's
 * createHandlerContext makes three AbortControllers and four Headers per call
 * (a tenth of the CPU of a GET /v1/me, and aborting them at the end of each
 * call makes DOMExceptions, whose stack traces cost as much again), which few
 * handlers read; here the signal and the header sets are made when first
 * read. The signal aborts when the client goes away before the answer is
 * written (clientGone); these calls have no deadline (an RPC with one goes
 * through Connect's router).
 */
export class CallContext implements HandlerContext {
  readonly timeoutMs = () => undefined;
  /** The response callHandler made of the handler's output. */
  response: UnaryResponse | StreamResponse | undefined;
  #controller: AbortController | undefined;
  #gone = false;
  #requestHeader: Headers | undefined;
  #responseHeader: Headers | undefined;
  #responseTrailer: Headers | undefined;

  /**
   * @param target the method called
   * @param protocolName "rest" or "grpc"
   * @param requestMethod HTTP method of the request
   * @param url the request's URL
   * @param values the call's context values (the RequestState among them); the context adds itself
   * @param req the request, whose headers requestHeader reads
   */
  constructor(
    readonly target: CallTarget,
    readonly protocolName: string,
    readonly requestMethod: string,
    readonly url: string,
    readonly values: ContextValues,
    private readonly req: NodeRequest,
  ) {
    values.set(callKey, this);
  }

  get service(): DescService {
    return this.target.service;
  }

  get method(): DescMethod {
    return this.target.method;
  }

  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#gone) this.#controller.abort();
    }
    return this.#controller.signal;
  }

  get requestHeader(): Headers {
    return (this.#requestHeader ??= headersOf(this.req));
  }

  get responseHeader(): Headers {
    return (this.#responseHeader ??= new Headers());
  }

  get responseTrailer(): Headers {
    return (this.#responseTrailer ??= new Headers());
  }

  /** Response headers the handler or an interceptor set, if any were. */
  get responseHeaderIfSet(): Headers | undefined {
    return this.#responseHeader;
  }

  /** Response trailers the handler or an interceptor set, if any were. */
  get responseTrailerIfSet(): Headers | undefined {
    return this.#responseTrailer;
  }

  /**
   * Response headers of `response` (what invoke answered): made only if set
   * when it is the handler's; a response an interceptor made instead carries
   * its own.
   */
  responseHeaderOf(response: UnaryResponse | StreamResponse): Headers | undefined {
    return response === this.response ? this.#responseHeader : response.header;
  }

  /** True once the client has gone away (clientGone): there is no one left to answer. */
  get gone(): boolean {
    return this.#gone;
  }

  /** The client closed the connection before the answer was written: aborts the signal. */
  clientGone(): void {
    this.#gone = true;
    this.#controller?.abort();
  }

  /**
   * Runs the call: the target's interceptors and handler with `input`.
   *
   * @throws whatever the interceptors or the handler throw (ConnectErrors, or anything the outcome interceptor turns into one)
   */
  invoke(input: Message): Promise<UnaryResponse | StreamResponse> {
    const context = this;
    return this.target.invoke({
      stream: false,
      service: this.target.service,
      method: this.target.method as never,
      requestMethod: this.requestMethod,
      url: this.url,
      get signal() {
        return context.signal;
      },
      get header() {
        return context.requestHeader;
      },
      contextValues: this.values,
      message: input,
    });
  }
}

/** Context value holding the CallContext of a call, for the chain's terminal handler. */
const callKey = createContextKey<CallContext | undefined>(undefined, { description: "gateway call" });

/**
 * The innermost step of every chain: calls the target's handler with the
 * call's CallContext and wraps its output as Connect's unary (or, for a
 * server stream, streaming) response.
 */
async function callHandler(req: UnaryRequest): Promise<UnaryResponse | StreamResponse> {
  const context = req.contextValues.get(callKey) as CallContext;
  const { target } = context;
  const output = await target.handler(req.message as Message, context);
  const stream = target.method.methodKind === "server_streaming";
  context.response = {
    stream,
    service: target.service,
    method: target.method as never,
    message: stream || isMessage(output, target.method.output) ? output : create(target.method.output, output as never),
    // Getters, not values: the header sets are made only when an interceptor reads them.
    get header() {
      return context.responseHeader;
    },
    get trailer() {
      return context.responseTrailer;
    },
  } as UnaryResponse | StreamResponse;
  return context.response;
}

/** The chain of `interceptors` (outermost first) around the call's handler, built once and shared by every target. */
export function chainInterceptors(interceptors: readonly Interceptor[]): CallTarget["invoke"] {
  let next = callHandler as Parameters<Interceptor>[0];
  for (let i = interceptors.length - 1; i >= 0; i--) next = (interceptors[i] as Interceptor)(next);
  return next as CallTarget["invoke"];
}

/**
 * The unary methods of `services` that have a handler, by RPC path
 * ("/package.Service/Method"), each with the chain of `interceptors` around it.
 */
export function unaryTargets(services: readonly ServiceRegistration[], interceptors: readonly Interceptor[]): Map<string, CallTarget> {
  const invoke = chainInterceptors(interceptors);
  const targets = new Map<string, CallTarget>();
  for (const { service, impl } of services) {
    for (const method of service.methods) {
      const handler = (impl as unknown as Record<string, CallTarget["handler"] | undefined>)[method.localName];
      if (method.methodKind === "unary" && handler) targets.set(`/${service.typeName}/${method.name}`, { service, method, handler: handler.bind(impl), invoke });
    }
  }
  return targets;
}

/**
 * The CallContext of an RPC the gateway answers itself (`protocolName`
 * "grpc" or "connect"), its signal aborted when the client goes away before
 * the answer is written.
 */
export function rpcCallContext(req: NodeRequest, res: NodeResponse, state: RequestState, target: CallTarget, protocolName: string): CallContext {
  const authority = headerOf(req, ":authority") ?? headerOf(req, "host") ?? "localhost";
  const context = new CallContext(target, protocolName, "POST", `http://${authority}${req.url ?? state.path}`, state.values, req);
  res.once("close", () => {
    if (!res.writableFinished) context.clientGone();
  });
  return context;
}

/**
 * The input of an RPC the gateway answers: the body read and checked by
 * readRpcInput (the request's content type must be one it reads) by the
 * port's input `rules`, then `parse`d. A problem found is put where inputInterceptor answers it, after
 * admission and scope (as on every protocol), and the input is then the
 * empty message.
 */
export async function readCallInput(context: CallContext, req: NodeRequest, parse: (body: Uint8Array) => Message, rules: InputRules): Promise<Message> {
  const checked = (await readRpcInput(context.method, { get: (name) => headerOf(req, name) }, req as AsyncIterable<Uint8Array>, rules)) as CheckedBody;
  if (!checked.problem) return parse(checked.body);
  context.values.set(rpcInputKey, { problem: checked.problem });
  return create(context.method.input);
}

/** Encodings of answers the service offers, in its order of preference (the router's `acceptCompression` too). */
export const RESPONSE_COMPRESSIONS: readonly Compression[] = [compressionGzip, compressionBrotli];

/** JSON options of RPC messages (Connect's router and the gateway's Connect calls): snake_case names out, unknown fields refused in. */
export const RPC_JSON_OPTIONS = { useProtoFieldName: true, ignoreUnknownFields: false } as const;

/** Smallest answer message compressed, in bytes (the router's default `compressMinBytes`). */
export const COMPRESS_MIN_BYTES = 1024;

/**
 * The encoding of an answer, as the router negotiates it: the first of those
 * the client accepts (its `acceptHeader`, "grpc-accept-encoding" or
 * "accept-encoding") that the service offers; null for none.
 */
export function responseCompression(req: NodeRequest, acceptHeader: string): Compression | null {
  return compressionNegotiate([...RESPONSE_COMPRESSIONS], null, headerOf(req, acceptHeader), acceptHeader).response;
}

/**
 * True for a request the gateway's unary paths take: POST, one of
 * `contentTypes` exactly, no deadline (`deadlineHeader`) and its body not
 * compressed (`encodingHeader` absent or "identity"). Everything else is
 * left to Connect's router, which implements it.
 */
export function isPlainUnary(req: NodeRequest, contentTypes: readonly string[], deadlineHeader: string, encodingHeader: string): boolean {
  const encoding = req.headers[encodingHeader];
  return (
    req.method === "POST" &&
    contentTypes.includes(req.headers["content-type"] ?? "") &&
    req.headers[deadlineHeader] === undefined &&
    (encoding === undefined || encoding === "identity")
  );
}
