import type net from "node:net";
import ipaddr from "ipaddr.js";
import { LRUCache } from "lru-cache";
import { Code, ConnectError, createConnectRouter, createContextValues, type ContextValues, type Interceptor, type ServiceImpl } from "@connectrpc/connect";
import type { DescService } from "@bufbuild/protobuf";
import {
  universalRequestFromNodeRequest,
  universalResponseToNodeResponse,
} from "@connectrpc/connect-node";
import { setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { apiError, describeError, errorCodeOfGrpcCode, toConnectError, type ErrorCode } from "../shared/errors.js";
import { newRequestId } from "../shared/ids.js";
import type { Logger } from "../shared/logger.js";
import { RESPONSE_COMPRESSIONS, RPC_JSON_OPTIONS } from "./call-context.js";
import { createConnectUnary } from "./connect-unary.js";
import { createGrpcUnary } from "./grpc-unary.js";
import { createPolyglotServer, type ListenerLimits } from "./listener.js";
import { writeRestError, type HttpRoute, type NodeRequest, type NodeResponse } from "./node-http.js";
import { createRestGateway, type RestGateway } from "./rest-gateway.js";
import { requestStateKey, type Protocol, type RequestState } from "./request-state.js";
import { validationInterceptor } from "./validation.js";
import { checkedStream, DEFAULT_INPUT_RULES, inputInterceptor, readRpcInput, rpcInputKey, type InputRules, type RpcInput } from "./rpc-input.js";
import type { ServiceRegistration } from "./services.js";

/** How a finished request ended, for the request log. */
export interface RequestOutcome {
  /** HTTP status of the response (200 for gRPC, whose status travels in trailers). */
  httpStatus: number;
  /** Error code answered, or undefined on success. */
  errorCode: ErrorCode | undefined;
}

/** Options of createRpcServer. */
export interface RpcServerOptions {
  /** Services answered on this port over every protocol. */
  services: readonly ServiceRegistration[];
  /** Services answered without admission and not logged (health checks). */
  openServices?: readonly ServiceRegistration[];
  /** Plain HTTP endpoints, outside admission. */
  httpRoutes?: readonly HttpRoute[];
  /**
   * Interceptors run for every RPC, REST included, outermost first; the
   * server adds the input checks and validationInterceptor (the rules of
   * the contract) after them.
   */
  interceptors: readonly Interceptor[];
  /**
   * Admission, run for every request before routing, whatever the protocol:
   * sets `state.principal` or `state.refusal` and response headers (rate
   * limits). It must not throw; a refusal is recorded on the state.
   */
  admit?: (state: RequestState, req: NodeRequest) => Promise<void>;
  /** Called once per request (not for open services) when its response has ended. */
  onFinished?: (state: RequestState, outcome: RequestOutcome) => void;
  /** Answers GET /healthz: true when the service can serve. */
  healthy?: () => Promise<boolean>;
  /** Take the client address from the last X-Forwarded-For entry. */
  trustForwardedFor: boolean;
  /** Timeouts against slow clients. */
  limits: ListenerLimits;
  /** How input is read on every protocol; DEFAULT_INPUT_RULES (messages up to MAX_MESSAGE_BYTES) unless set. */
  input?: InputRules;
  logger: Logger;
}

/** A listening RPC server. */
export interface RpcServer {
  /** The REST gateway (its routes are useful to documentation and tests). */
  readonly gateway: RestGateway;
  /** Starts listening; resolves to the bound port (useful with port 0). */
  listen(port: number, host: string): Promise<number>;
  /**
   * Stops accepting connections, waits up to `timeoutMs` for requests in
   * flight to finish, then closes every connection.
   */
  close(timeoutMs: number): Promise<void>;
}

const httpStatusToError = new Map<number, ErrorCode>([
  [400, "invalid_argument"],
  [401, "unauthenticated"],
  [403, "permission_denied"],
  [404, "not_found"],
  [405, "not_found"],
  [408, "unavailable"],
  [409, "conflict"],
  [413, "payload_too_large"],
  [415, "invalid_argument"],
  [429, "rate_limited"],
  [501, "unimplemented"],
  [503, "unavailable"],
]);

/**
 * The address a request came from: the socket's peer, or with
 * `trustForwardedFor` the last X-Forwarded-For entry (the one the trusted
 * proxy in front of the service appended). IPv4-mapped IPv6 addresses are
 * unwrapped ("::ffff:10.0.0.1" is "10.0.0.1").
 */
export function clientAddressOf(req: NodeRequest, trustForwardedFor: boolean): string {
  // On cleartext HTTP/2, httpolyglot hands Node's http2 server a socket that Node wraps in
  // a JS stream socket without an address; the wrapper's `stream` is the original socket.
  const socket = req.socket as (net.Socket & { stream?: net.Socket }) | undefined;
  let address = socket?.remoteAddress ?? socket?.stream?.remoteAddress ?? "";
  if (trustForwardedFor) {
    const header = req.headers["x-forwarded-for"];
    const last = (Array.isArray(header) ? header.join(",") : header ?? "").split(",").pop()?.trim();
    if (last && normalAddress(last) !== undefined) address = last;
  }
  return normalAddress(address) ?? address;
}

/** Addresses read lately, as written → normal form ("" for text that is no address). */
const normalAddresses = new LRUCache<string, string>({ max: 10_000 });

/**
 * The normal form of an IP address (IPv4-mapped IPv6 unwrapped), or
 * undefined when `text` is none. A client's address repeats on each of its
 * requests, so the parse (ipaddr.js) is kept for the next.
 */
function normalAddress(text: string): string | undefined {
  let normal = normalAddresses.get(text);
  if (normal === undefined) {
    normal = ipaddr.isValid(text) ? ipaddr.process(text).toString() : "";
    normalAddresses.set(text, normal);
  }
  return normal === "" ? undefined : normal;
}

/**
 * Re-encodes a grpc-message value with the gRPC spec's minimal
 * percent-encoding (only bytes outside 0x20-0x7E, and "%"). Connect encodes
 * with encodeURIComponent, which @grpc/grpc-js (decoding with decodeURI)
 * would show as "%3B" for ";"; the minimal form reads right in both.
 */
export function minimalGrpcMessage(value: string): string {
  let text: string;
  try {
    text = decodeURIComponent(value);
  } catch {
    return value;
  }
  let out = "";
  for (const ch of text) {
    const code = ch.codePointAt(0) as number;
    out += code >= 0x20 && code <= 0x7e && ch !== "%" ? ch : encodeURIComponent(ch).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  }
  return out;
}

/**
 * Watches a gRPC response's status (in the head of a trailers-only answer,
 * or in the trailers) and rewrites grpc-message with minimalGrpcMessage.
 */
function watchGrpcStatus(res: NodeResponse, onStatus: (status: string) => void): void {
  const fix = (headers: Record<string, unknown> | undefined) => {
    if (!headers) return;
    for (const name of Object.keys(headers)) {
      const lower = name.toLowerCase();
      if (lower === "grpc-status") onStatus(String(headers[name]));
      if (lower === "grpc-message" && typeof headers[name] === "string") headers[name] = minimalGrpcMessage(headers[name] as string);
    }
  };
  const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => NodeResponse;
  (res as { writeHead: unknown }).writeHead = (status: number, ...rest: unknown[]) => {
    fix(rest.find((r) => typeof r === "object" && r !== null) as Record<string, unknown> | undefined);
    return writeHead(status, ...rest);
  };
  const addTrailers = res.addTrailers.bind(res);
  res.addTrailers = (trailers: Record<string, string>) => {
    fix(trailers);
    addTrailers(trailers);
  };
}

/**
 * Answers a gRPC or gRPC-Web request with `error` as a trailers-only
 * response (HTTP 200, grpc-status, grpc-message and the google.rpc.Status
 * details in grpc-status-details-bin), as a gRPC server does for a call it
 * refuses before any handler: never an HTTP error with a JSON body, which a
 * gRPC client cannot read.
 */
function writeGrpcError(req: NodeRequest, res: NodeResponse, state: RequestState, error: ConnectError): void {
  state.errorCode = describeError(error).code;
  // The body is not wanted: read and drop it, so that a client still sending (over HTTP/2,
  // into a closed stream) is not reset before it reads the status.
  req.resume();
  const status: Record<string, string> = {};
  setTrailerStatus(new Headers(), error).forEach((value, name) => (status[name] = name === "grpc-message" ? minimalGrpcMessage(value) : value));
  if (state.protocol === "grpc-web") {
    // gRPC-Web: a trailers-only answer carries the status in its headers.
    res.writeHead(200, { "content-type": "application/grpc-web+proto", ...status });
    res.end();
    return;
  }
  // gRPC (HTTP/2): headers, then the status as trailers, which every gRPC client reads.
  res.writeHead(200, { "content-type": "application/grpc" });
  res.addTrailers(status);
  res.end();
}

/** True for the content types of gRPC and gRPC-Web (application/grpc…). */
function isGrpcType(contentType: string | undefined): boolean {
  return contentType?.startsWith("application/grpc") ?? false;
}

function protocolOf(contentType: string | undefined): Protocol {
  const type = contentType ?? "";
  if (type.startsWith("application/grpc-web")) return "grpc-web";
  if (type.startsWith("application/grpc")) return "grpc";
  return "connect";
}

/** Longest deadline a timer can hold, in ms (2^31 - 1, about 24.8 days). */
const MAX_DEADLINE_MS = 2 ** 31 - 1;
const GRPC_TIMEOUT_UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 0.001, n: 0.000001 };

/**
 * Removes a deadline longer than a timer can hold (a `grpc-timeout` of
 * 99999999H, a huge `connect-timeout-ms`): Node would fire it after 1 ms and
 * the call would fail at once with deadline_exceeded. Such a deadline means
 * "no deadline", and is served so.
 */
function dropUnboundedDeadlines(header: Headers): void {
  const grpcTimeout = /^(\d{1,8})([HMSmun])$/.exec(header.get("grpc-timeout") ?? "");
  if (grpcTimeout && Number(grpcTimeout[1]) * (GRPC_TIMEOUT_UNIT_MS[grpcTimeout[2]!] as number) > MAX_DEADLINE_MS) header.delete("grpc-timeout");
  const connectTimeout = header.get("connect-timeout-ms");
  if (connectTimeout !== null && /^\d+$/.test(connectTimeout) && Number(connectTimeout) > MAX_DEADLINE_MS) header.delete("connect-timeout-ms");
}

/**
 * Innermost interceptors of every RPC, REST included: the input problem found
 * while reading (inputInterceptor), then the rules of the contract
 * (validationInterceptor), so that admission and scope refusals come first.
 */
const INPUT_CHECKS: readonly Interceptor[] = [inputInterceptor, validationInterceptor];

/** A Node request handler of Connect RPCs; `contextValues` seeds each call's context. */
type ConnectHandler = (req: NodeRequest, res: NodeResponse, contextValues: ContextValues) => Promise<void>;

/**
 * The Connect router of `services` as a Node request handler, in the place of
 * connect-node's adapter: the same universal request and response, with the
 * body of unary and server-streaming calls read and checked first by
 * readRpcInput (a problem reaches the handler's caller through
 * inputInterceptor, which `interceptors` must end with, followed by
 * validationInterceptor: see INPUT_CHECKS). Messages are limited to
 * `rules.maxMessageBytes`; unknown JSON fields are refused, as on REST.
 */
function createConnectHandler(services: readonly ServiceRegistration[], interceptors: readonly Interceptor[], logger: Logger, rules: InputRules): ConnectHandler {
  const router = createConnectRouter({
    interceptors: [...interceptors],
    jsonOptions: { ...RPC_JSON_OPTIONS, registry: rules.registry },
    readMaxBytes: rules.maxMessageBytes,
    acceptCompression: [...RESPONSE_COMPRESSIONS],
  });
  for (const { service, impl } of services) router.service(service, impl as ServiceImpl<DescService>);
  const handlers = new Map(router.handlers.map((h) => [h.requestPath, h]));
  return async (req, res, contextValues) => {
    const path = (req.url ?? "").split("?", 1)[0] as string;
    const handler = handlers.get(path);
    if (!handler) {
      res.writeHead(404);
      res.end();
      return;
    }
    // HTTP/1.0 may omit Host; Connect builds the request URL from it (and throws without one).
    if (req.headers.host === undefined && !("authority" in req)) req.headers.host = "localhost";
    const input: RpcInput = {};
    const uReq = universalRequestFromNodeRequest(req, res, undefined, contextValues.set(rpcInputKey, input));
    dropUnboundedDeadlines(uReq.header);
    const kind = handler.method.methodKind;
    if (req.method === "POST" && (kind === "client_streaming" || kind === "bidi_streaming")) {
      uReq.body = checkedStream(handler.method, uReq.header, uReq.body as AsyncIterable<Uint8Array>, rules);
    } else if (req.method === "POST") {
      const checked = await readRpcInput(handler.method, uReq.header, uReq.body as AsyncIterable<Uint8Array>, rules);
      if (checked) {
        input.problem = checked.problem;
        if (checked.dropHeader) uReq.header.delete(checked.dropHeader);
        if (checked.problem) uReq.header.delete("content-length");
        uReq.body = (async function* () {
          yield checked.body;
        })();
      } else {
        // A content type Connect refuses unread (415): read and drop the body, as over HTTP/2 data
        // sent into a closed stream counts as a flood and ends the client's connection.
        req.resume();
      }
    }
    try {
      await universalResponseToNodeResponse(await handler(uReq), res);
    } catch (err) {
      if (ConnectError.from(err).code === Code.Aborted) return; // the client went away
      logger.error({ err, rpc: path }, "RPC handler failed after its response started");
    }
  };
}

/**
 * Builds one port that serves `services` as gRPC (HTTP/2), gRPC-Web, Connect
 * (JSON and binary, HTTP/1.1 and HTTP/2) and REST/JSON, cleartext HTTP/1.1
 * and HTTP/2 told apart by the connection's first bytes (httpolyglot).
 *
 * Every request gets a Request-Id header, passes admission (which sets rate
 * limit headers on every protocol, errors included), and is reported to
 * `onFinished` with its outcome. Connect paths (/package.Service/Method) go
 * to the Connect router, but for plain unary gRPC and Connect calls, which
 * the gateway answers itself (createGrpcUnary, createConnectUnary);
 * everything else to the REST gateway, which answers unknown routes with 404
 * not_found in the REST error format.
 */
export function createRpcServer(options: RpcServerOptions): RpcServer {
  const interceptors = [...options.interceptors, ...INPUT_CHECKS];
  const input = options.input ?? DEFAULT_INPUT_RULES;
  const connectHandler = createConnectHandler(options.services, interceptors, options.logger, input);
  const openHandler = createConnectHandler(options.openServices ?? [], INPUT_CHECKS, options.logger, input);
  const connectPaths = new Set<string>();
  for (const { service } of options.services) for (const m of service.methods) connectPaths.add(`/${service.typeName}/${m.name}`);
  const openPaths = new Map<string, string>();
  for (const { service } of options.openServices ?? []) for (const m of service.methods) openPaths.set(`/${service.typeName}/${m.name}`, m.methodKind);
  const gateway = createRestGateway({ services: options.services, interceptors, maxBodyBytes: input.maxMessageBytes });
  const grpcUnary = createGrpcUnary(options.services, interceptors, input);
  const connectUnary = createConnectUnary(options.services, interceptors, input);
  const httpRoutes = new Map((options.httpRoutes ?? []).map((r) => [`${r.method} ${r.path}`, r]));

  let inFlight = 0;
  let drained: (() => void) | undefined;

  /** What a request of `path` is served as, before admission. */
  function newState(req: NodeRequest, res: NodeResponse, path: string, isRpc: boolean, httpRoute: HttpRoute | undefined): RequestState {
    const state: RequestState = {
      requestId: newRequestId(),
      receivedAt: new Date(),
      startedAt: process.hrtime.bigint(),
      // gRPC by its content type even on a path nobody serves, so that its answer is a gRPC status.
      protocol: isRpc || isGrpcType(req.headers["content-type"]) ? protocolOf(req.headers["content-type"]) : httpRoute ? "http" : "rest",
      httpMethod: req.method ?? "GET",
      path,
      clientAddress: clientAddressOf(req, options.trustForwardedFor),
      values: createContextValues(),
      setHeader: (name, value) => {
        if (!res.headersSent) res.setHeader(name, value);
      },
    };
    state.values.set(requestStateKey, state);
    return state;
  }

  /**
   * An open service's call (health, reflection), outside admission and the
   * request log. Only POST is routed; a bidirectional stream (reflection)
   * needs HTTP/2, and over HTTP/1.1 is refused with invalid_argument rather
   * than Connect's 505.
   */
  async function onOpenRequest(req: NodeRequest, res: NodeResponse, path: string, kind: string): Promise<void> {
    const method = req.method ?? "GET";
    const problem =
      method !== "POST"
        ? apiError("method_not_allowed", `${method} is not allowed on ${path}; it accepts POST`, { method, path, allow: "POST" })
        : kind === "bidi_streaming" && req.httpVersionMajor < 2
          ? apiError("invalid_argument", `${path} is a bidirectional stream: call it over HTTP/2 (gRPC)`, { path })
          : undefined;
    if (!problem) return openHandler(req, res, createContextValues());
    const state = newState(req, res, path, true, undefined);
    res.setHeader("request-id", state.requestId);
    if (method !== "POST") res.setHeader("allow", "POST");
    if (state.protocol === "grpc" || state.protocol === "grpc-web") writeGrpcError(req, res, state, problem);
    else writeRestError(res, state, problem);
  }

  async function onRequest(req: NodeRequest, res: NodeResponse): Promise<void> {
    const path = (req.url ?? "/").split("?", 1)[0] as string;
    const openKind = openPaths.get(path);
    if (openKind) return onOpenRequest(req, res, path, openKind);
    if (path === "/healthz" && options.healthy) {
      const ok = await options.healthy().catch(() => false);
      res.writeHead(ok ? 200 : 503, { "content-type": "application/json" });
      res.end(JSON.stringify({ status: ok ? "ok" : "unavailable" }));
      return;
    }

    inFlight++;
    const isRpc = connectPaths.has(path);
    const httpRoute = httpRoutes.get(`${req.method} ${path}`);
    const grpcStatus: { value?: string } = {};
    const state = newState(req, res, path, isRpc, httpRoute);
    res.setHeader("request-id", state.requestId);
    if (state.protocol === "grpc") watchGrpcStatus(res, (status) => (grpcStatus.value = status));
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      inFlight--;
      if (inFlight === 0) drained?.();
      if (!options.onFinished) return;
      let errorCode = state.errorCode;
      if (!errorCode) {
        const status = grpcStatus.value;
        if (status !== undefined && status !== "0") errorCode = errorCodeOfGrpcCode(Number(status) as Code);
        else if (res.statusCode >= 400) errorCode = httpStatusToError.get(res.statusCode) ?? "internal";
        else if (!res.writableFinished) errorCode = "unavailable"; // the client went away
      }
      options.onFinished(state, { httpStatus: res.statusCode, errorCode });
    };
    res.once("finish", finish);
    res.once("close", finish);

    try {
      if (httpRoute) {
        state.operation = `${httpRoute.method} ${httpRoute.path}`;
        await httpRoute.handler(req, res, state);
        return;
      }
      if (options.admit) await options.admit(state, req);
      if (!isRpc && isGrpcType(req.headers["content-type"])) {
        // A gRPC call of a method this port does not serve: the refusal of its key if any, else unimplemented.
        // The protocol's own answer to an unknown method (no error details, as Connect's router answers it).
        writeGrpcError(req, res, state, state.refusal ? toConnectError(state.refusal) : new ConnectError(`The method ${path} does not exist on this service`, Code.Unimplemented));
        return;
      }
      if (isRpc) {
        // Plain unary calls are answered by the gateway itself; the rest by Connect's router.
        const grpcTarget = state.protocol === "grpc" ? grpcUnary.targetOf(req, path) : undefined;
        const connectTarget = state.protocol === "connect" ? connectUnary.targetOf(req, path) : undefined;
        if (grpcTarget) await grpcUnary.handle(req, res, state, grpcTarget);
        else if (connectTarget) await connectUnary.handle(req, res, state, connectTarget);
        else await connectHandler(req, res, state.values);
      } else {
        await gateway.handle(req, res, state);
      }
    } catch (err) {
      options.logger.error({ err, requestId: state.requestId }, "request failed outside a handler");
      if (!res.headersSent) writeRestError(res, state, err instanceof ConnectError ? err : apiError("internal", "Internal error"));
      else res.destroy();
    }
  }

  const { server, sockets } = createPolyglotServer(options.limits, (req, res) => void onRequest(req as NodeRequest, res as NodeResponse));

  return {
    gateway,
    listen(port, host) {
      return new Promise((resolve, reject) => {
        const refused = (err: NodeJS.ErrnoException) =>
          reject(err.code === "EADDRINUSE" ? new Error(`port ${port} on ${host} is already in use (set another PORT or CONSOLE_PORT)`) : err);
        server.once("error", refused);
        server.listen(port, host, () => {
          server.off("error", refused);
          resolve((server.address() as net.AddressInfo).port);
        });
      });
    },
    async close(timeoutMs) {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      if (inFlight > 0) {
        await Promise.race([
          new Promise<void>((resolve) => (drained = resolve)),
          new Promise<void>((resolve) => setTimeout(resolve, timeoutMs).unref()),
        ]);
      }
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}
